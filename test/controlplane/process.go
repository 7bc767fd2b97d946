package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	gosync "sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stopGrace is how long a component may take to exit after SIGTERM before it is
// killed. Every component here exits within a second or two of SIGTERM; the grace only
// matters for one that hangs.
const stopGrace = 10 * time.Second

// tailLines is how much of a component's log a startup error quotes.
const tailLines = 40

// process is one control-plane component running as a child process, with its output
// in dir/<name>.log.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string

	done     chan struct{} // closed once the process has exited and its output is flushed
	waitErr  error         // how it exited; read only after done is closed
	stopping atomic.Bool   // set by stop, so an exit it caused is not reported as a crash
}

// startProcess starts the executable at path with args in dir. Its standard output and
// error go to dir/<name>.log and, if output is not nil, to output with each line
// prefixed by the component's name. The lifecycle is ours, not a context's: a
// component outlives the context that bounded its start, and ends in stop.
func startProcess(name, path string, args []string, dir string, output *lineWriter) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s: creating its log: %w", name, err)
	}
	cmd := exec.Command(path, args...)
	cmd.Dir = dir
	// HOME in the data directory keeps user configuration (~/.kube, ~/.kwok) out.
	cmd.Env = append(os.Environ(), "HOME="+dir, "KUBECONFIG=")
	cmd.SysProcAttr = sysProcAttr()
	var out io.Writer = logFile
	var prefixed *prefixWriter
	if output != nil {
		prefixed = &prefixWriter{prefix: "[" + name + "] ", out: output}
		out = io.MultiWriter(logFile, prefixed)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		if prefixed != nil {
			prefixed.flush()
		}
		logFile.Close()
		close(p.done)
	}()
	return p, nil
}

// exited reports whether the process has exited, and if so an error naming it, its
// exit status and the end of its log.
func (p *process) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s exited: %w\n%s", p.name, p.exitError(), p.tail())
	default:
		return nil
	}
}

// exitError is how the process exited, as an error even for a clean exit: a component
// is never supposed to exit on its own. Valid only after done is closed.
func (p *process) exitError() error {
	if p.waitErr == nil {
		return errors.New("exit status 0")
	}
	return p.waitErr
}

// kill ends the process at once (SIGKILL), as a crash of its host would. It
// returns an error only if the process had already exited on its own.
func (p *process) kill() error { return p.end("killed", 0) }

// stop ends the process: SIGTERM, then SIGKILL after stopGrace. It returns an error
// only if the process had already exited on its own, which means a component crashed
// while the tests ran.
func (p *process) stop() error { return p.end("stopped", stopGrace) }

// end ends the process: SIGTERM and SIGKILL after grace, or SIGKILL at once
// when grace is zero. what says how, for the error of a process that had
// exited on its own.
func (p *process) end(what string, grace time.Duration) error {
	if p.stopping.Swap(true) {
		<-p.done
		return nil
	}
	select {
	case <-p.done:
		return fmt.Errorf("%s exited before it was %s: %w (log %s)", p.name, what, p.exitError(), p.logPath)
	default:
	}
	if grace > 0 {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		timer := time.NewTimer(grace)
		defer timer.Stop()
		select {
		case <-p.done:
			return nil
		case <-timer.C:
		}
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return nil
}

// tail returns the last lines of the process's log, framed for an error message.
func (p *process) tail() string {
	f, err := os.Open(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log %s unreadable: %v)", p.logPath, err)
	}
	defer f.Close()
	const window = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, _ = f.Seek(-window, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > tailLines {
		lines = lines[len(lines)-tailLines:]
	}
	return fmt.Sprintf("--- last lines of %s ---\n%s\n--- end of %s ---", p.logPath, strings.Join(lines, "\n"), p.name)
}

// lineWriter serialises whole lines from several components onto one writer.
type lineWriter struct {
	mu  gosync.Mutex
	out io.Writer
}

func (w *lineWriter) writeLine(line []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.out.Write(line)
}

// prefixWriter prefixes each line of one component's output with its name, so
// interleaved logs on a shared writer stay readable.
type prefixWriter struct {
	prefix  string
	out     *lineWriter
	partial []byte
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.out.writeLine(append([]byte(w.prefix), w.partial[:i+1]...))
		w.partial = w.partial[i+1:]
	}
}

func (w *prefixWriter) flush() {
	if len(w.partial) > 0 {
		w.out.writeLine(append(append([]byte(w.prefix), w.partial...), '\n'))
		w.partial = nil
	}
}
