package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	gosync "sync"
	"time"
	"unicode"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Bounds of a container's log stream: the lines of the past it starts with,
// the bytes of log it reads in all (the API server ends the log there), the
// length of one line (cut beyond), how long it follows, the lines a page keeps,
// and how many streams a session and the whole server hold open at once (each
// is a request the API server holds open to the kubelet).
const (
	logTailLines            = 500
	logLimitBytes           = 4 << 20
	logMaxLineBytes         = 4 << 10
	logStreamTime           = 30 * time.Minute
	logMaxLinesShown        = 2000
	maxLogStreamsPerSession = 4
	maxLogStreams           = 32
)

// logStreams counts the log streams open, per session and in all.
type logStreams struct {
	mu        gosync.Mutex
	total     int
	bySession map[*session]int
}

func newLogStreams() *logStreams { return &logStreams{bySession: map[*session]int{}} }

// errTooManyLogStreams refuses a log stream beyond the bounds.
var errTooManyLogStreams = errors.New("too many logs are followed at once: close another page of logs, or reload in a while")

// take holds a place for a stream of sess, within maxLogStreamsPerSession and
// maxLogStreams; release gives it back.
func (l *logStreams) take(sess *session) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= maxLogStreams || l.bySession[sess] >= maxLogStreamsPerSession {
		return nil, errTooManyLogStreams
	}
	l.total++
	l.bySession[sess]++
	var once gosync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.bySession[sess]--; l.bySession[sess] <= 0 {
				delete(l.bySession, sess)
			}
		})
	}, nil
}

// logsStream streams the log of a container of a Pod of the Sync (as the logs
// page names it) as server-sent events, read as the user with client-go's
// GetLogs and followed: an event "line" for each line (cleanLogLine), then one
// "end" saying why it ended (the log's end, a bound, the session's end), or a
// single "refused" with the API server's refusal (403 without pods/log) or the
// bound on streams. It ends too when the browser goes.
func (s *Server) logsStream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	_, pod, ok := s.podOfSync(w, r)
	if !ok {
		return
	}
	container := r.URL.Query().Get("container")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	send := func(event, data string) {
		_, _ = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data)
		flusher.Flush()
	}
	release, err := s.logs.take(sessionOf(r))
	if err != nil {
		send("refused", err.Error())
		return
	}
	defer release()
	ctx, cancel := context.WithTimeout(r.Context(), logStreamTime)
	defer cancel()
	stream, err := openLog(ctx, viewerOf(r), pod.Namespace, pod.Name, container)
	if err != nil {
		// One line, whatever the container's name or the error hold.
		send("refused", cleanLogLine([]byte("Reading the log of container "+container+" of Pod "+pod.Namespace+"/"+pod.Name+": "+err.Error())))
		return
	}
	defer stream.Close()
	lines := make(chan string, 64)
	ended := make(chan string, 1)
	go readLogLines(ctx, stream, lines, ended)
	if why := s.relayLog(w, flusher, r, lines, ended); why != "" {
		send("end", why)
	}
}

// relayLog writes each line of lines as an event "line", and a heartbeat
// while none comes, until lines is closed (it returns why, from ended), the
// request's session ends (it says so) or the browser goes ("").
func (s *Server) relayLog(w io.Writer, flusher http.Flusher, r *http.Request, lines <-chan string, ended <-chan string) string {
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return ""
		case line, open := <-lines:
			if !open {
				return <-ended
			}
			if _, err := fmt.Fprintf(w, "event: line\ndata: %s\n\n", line); err != nil {
				return ""
			}
			if len(lines) == 0 {
				flusher.Flush()
			}
		case <-tick.C:
			if !s.sessions.holds(sessionOf(r)) {
				return "You signed out, or your session expired: the log is no longer followed."
			}
			if _, err := fmt.Fprint(w, ": beat\n\n"); err != nil {
				return ""
			}
			flusher.Flush()
		}
	}
}

// openLog opens, as v's user, the log of container of Pod namespace/name,
// followed, from its last logTailLines lines, for at most logLimitBytes.
func openLog(ctx context.Context, v *viewer, namespace, name, container string) (io.ReadCloser, error) {
	cs, err := kubernetes.NewForConfig(v.cfg)
	if err != nil {
		return nil, err
	}
	return cs.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{
		Container: container, Follow: true,
		TailLines: ptr.To[int64](logTailLines), LimitBytes: ptr.To[int64](logLimitBytes),
	}).Stream(ctx)
}

// readLogLines sends each line of the log, cleaned and cut at logMaxLineBytes,
// to lines until the log ends or ctx does; then it closes lines, having sent
// why it ended to ended.
func readLogLines(ctx context.Context, log io.Reader, lines chan<- string, ended chan<- string) {
	defer close(lines)
	in := bufio.NewReaderSize(log, logMaxLineBytes)
	read, cut := 0, false
	for {
		// ReadLine returns a line, or the first logMaxLineBytes of a longer
		// one and then the rest in pieces (more), or an error.
		fragment, more, err := in.ReadLine()
		if err != nil {
			ended <- logEnd(ctx, err, read)
			return
		}
		read += len(fragment)
		if !more {
			read++
		}
		if !cut {
			line := cleanLogLine(fragment)
			if more {
				line += " …(cut at 4 KiB)"
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				ended <- logEnd(ctx, ctx.Err(), read)
				return
			}
		}
		cut = more
	}
}

// logEnd says why a log stream ended, having read read bytes: its bound, the
// time bound, a failure, or the log's end.
func logEnd(ctx context.Context, err error, read int) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("The log was followed for its bound of %s: reload to follow it on.", logStreamTime)
	case read >= logLimitBytes:
		return "The log reached its bound of 4 MiB for one stream: reload to follow it on."
	case err != nil && !errors.Is(err, io.EOF):
		return "The log stream failed: " + cleanLogLine([]byte(err.Error())) + ". Reload to follow it again."
	}
	return "The log ended: the container stopped, or its node closed the log."
}

// escapeSequence is a terminal's escape sequence (colours, cursor moves): a
// CSI sequence, an OSC one up to its terminator, or one other escaped byte.
var escapeSequence = regexp.MustCompile(`\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)?|.)?`)

// cleanLogLine is a line of a log as the page may show it: valid UTF-8, its
// terminal escape sequences and every control character but the tab removed,
// so that it is one line of plain text (the script sets it as text, never
// HTML, and no newline can end its server-sent event early).
func cleanLogLine(b []byte) string {
	s := escapeSequence.ReplaceAllString(strings.ToValidUTF8(string(b), "\uFFFD"), "")
	return strings.Map(func(r rune) rune {
		if r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029') {
			return -1
		}
		return r
	}, s)
}

// holds tells whether sess is still a session of ss (not signed out, not
// expired).
func (ss *sessions) holds(sess *session) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, held := range ss.byID {
		if held == sess {
			return true
		}
	}
	return false
}
