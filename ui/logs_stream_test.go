package ui

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestALogLineIsShownAsOneLineOfPlainText(t *testing.T) {
	for in, want := range map[string]string{
		"GET /healthz 200":                       "GET /healthz 200",
		"\x1b[31merror\x1b[0m: disk full":        "error: disk full",
		"\x1b]0;title\x07shown":                  "shown",
		"tab\tkept, bell\a and NUL\x00 dropped":  "tab\tkept, bell and NUL dropped",
		"carriage\rreturn":                       "carriagereturn",
		"bad \xff byte":                          "bad \uFFFD byte",
		"<script>alert(1)</script>":              "<script>alert(1)</script>", // text, set as text by the script
		"line\u2028separator and C1 \u0085 gone": "lineseparator and C1  gone",
	} {
		if got := cleanLogLine([]byte(in)); got != want {
			t.Errorf("cleanLogLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestALogIsReadLineByLineWithLongLinesCut(t *testing.T) {
	long := strings.Repeat("x", logMaxLineBytes+100)
	log := "first\r\n\nthird " + long + "\nfourth\nlast without newline"
	lines := make(chan string, 16)
	ended := make(chan string, 1)
	readLogLines(t.Context(), strings.NewReader(log), lines, ended)
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	third := "third " + strings.Repeat("x", logMaxLineBytes-len("third ")) + " …(cut at 4 KiB)"
	want := []string{"first", "", third, "fourth", "last without newline"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if why := <-ended; !strings.Contains(why, "The log ended") {
		t.Errorf("the log's end is told as %q", why)
	}
}

func TestALogStreamEndsWhenItsReaderGoes(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	lines := make(chan string) // nobody reads: the reader has gone
	ended := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		readLogLines(ctx, strings.NewReader("one\ntwo\n"), lines, ended)
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(waitLong):
		t.Fatal("the log's reader still waits to hand a line over after its stream's context ended")
	}
	if _, open := <-lines; open {
		t.Error("the lines are still open after the log's reader ended")
	}
	if why := <-ended; !strings.Contains(why, "context canceled") {
		t.Errorf("the log's reader says it ended because %q, want its context's end", why)
	}
}

func TestLogStreamsAreBoundedPerSessionAndInAll(t *testing.T) {
	l := newLogStreams()
	a, b := &session{}, &session{}
	var releases []func()
	for range maxLogStreamsPerSession {
		release, err := l.take(a)
		if err != nil {
			t.Fatalf("stream %d of a session: %v", len(releases)+1, err)
		}
		releases = append(releases, release)
	}
	if _, err := l.take(a); err == nil {
		t.Fatalf("a session holds %d streams, want at most %d", maxLogStreamsPerSession+1, maxLogStreamsPerSession)
	}
	releases[0]()
	releases[0]() // twice is once
	if release, err := l.take(a); err != nil {
		t.Errorf("a released place is not taken again: %v", err)
	} else {
		release()
	}
	for l.total < maxLogStreams {
		if _, err := l.take(&session{}); err != nil {
			t.Fatalf("with %d streams open: %v", l.total, err)
		}
	}
	if _, err := l.take(b); err == nil {
		t.Errorf("the server holds %d streams, want at most %d", maxLogStreams+1, maxLogStreams)
	}
}
