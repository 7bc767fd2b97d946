package wall

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	gosync "sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
	"tether.dev/tether/source/sops"
)

// The render wall. Every render runs in a worker process of its own: the same
// executable started again (ServeRenderWorker), under the operating system's
// limits on memory, processor time and open files (limits.go),
// within the render's deadline, which the agent enforces by killing it, and
// watched by the agent for its resident memory. Whatever a repository, chart or
// archive makes a render do, it can only end the worker: the agent gets a
// result.RenderError naming the path and the limit, and keeps only the bounded answer
// (the objects as JSON, at most MaxRenderedBytes and a margin).
//
// A worker serves renders one at a time, and may serve the next render of
// the same limits (a small pool, below) unless the render failed, held a
// tenant's secrets (decryption keys, values from a Secret), or left the
// worker holding half its memory: a worker that met a limit, or saw what
// another tenant may not, never serves again. A render the cache answers
// starts none. docs/architecture.md weighs this against a process per render.

// Errors of a worker that met a limit, wrapped by the result.RenderError of its render.
var (
	// ErrRenderMemory: the render needed more memory than a render may take.
	ErrRenderMemory = errors.New("the render needed more memory than a render may use")
	// ErrRenderCPU: the render used more processor time than it may.
	ErrRenderCPU = errors.New("the render used more processor time than a render may")
	// ErrRenderDepth: templates called templates (tpl, include) too deeply.
	ErrRenderDepth = errors.New("the templates nest too deeply (tpl or include calling itself)")
	// ErrRenderOutput: the answer was larger than a render may make.
	ErrRenderOutput = errors.New("the render made more than a render may return")
	// ErrRenderWorker: the worker ended without an answer for another cause.
	ErrRenderWorker = errors.New("the render worker ended without an answer")
)

const (
	// workerOpenFiles: a worker reads standard input and writes standard output
	// and error; Go's runtime takes a few more.
	workerOpenFiles = 32
	// workerAnswerMargin is the room beyond MaxRenderedBytes an answer may take
	// (framing, a message).
	workerAnswerMargin = 1 << 20
	// workerStderr is how much of a worker's standard error the agent reads to
	// tell why it ended.
	workerStderr = 16 << 10
	// workerWatchEvery is how often the agent reads a worker's resident memory.
	workerWatchEvery = 20 * time.Millisecond
)

// withWorkerDefaults fills the worker's options opts leaves unset.
func withWorkerDefaults(opts render.Options) render.Options {
	if opts.MemoryLimit <= 0 {
		opts.MemoryLimit = render.DefaultMemoryLimit
	}
	if opts.Timeout <= 0 {
		opts.Timeout = render.DefaultTimeout
	}
	return opts
}

// Run renders job in a worker process within opts' limits: an idle
// worker of the same executable and limits if there is one, else a new one.
func Run(job *Job, opts render.Options) (Rendered, error) {
	opts = withWorkerDefaults(opts)
	exe := opts.WorkerPath
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return Rendered{}, fmt.Errorf("finding the render worker: %w", err)
		}
		exe = self
	}
	frame, err := encodeFrame(job)
	if err != nil {
		return Rendered{}, &result.RenderError{File: job.Dir, Err: fmt.Errorf("sending the render to its worker: %w", err)}
	}
	limits := workerLimits{
		Memory: opts.MemoryLimit,
		CPU:    opts.Timeout + time.Second,
		Files:  workerOpenFiles,
		Input:  opts.MaxTreeSize + opts.MaxChartPackageBytes + workerInputMargin,
	}
	if int64(len(frame)) > limits.Input {
		return Rendered{}, &result.RenderError{File: job.Dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("the render reads %d bytes, over the %d a worker takes", len(frame), limits.Input)}
	}
	pool := poolFor(exe, limits)
	w, err := pool.get()
	if err != nil {
		return Rendered{}, err
	}
	job.Dir = cmp.Or(job.Dir, ".")
	r, reusable, err := w.run(frame, job.Dir, opts)
	if reusable && !job.holdsSecrets() {
		pool.put(w)
	} else {
		w.close()
	}
	return r, err
}

// holdsSecrets says whether job gives its worker a tenant's secrets (keys,
// values from a Secret): such a worker serves no other job.
func (job *Job) holdsSecrets() bool {
	if job.Decrypt != nil || (job.Substitute != nil && job.Substitute.FromSecret) || (job.Overlay != nil && job.Overlay.Secrets) {
		return true
	}
	if job.Helm != nil {
		for _, v := range job.Helm.ValuesFrom {
			if v.Secret {
				return true
			}
		}
	}
	return false
}

// A pool of idle workers per executable and limits: a worker that rendered
// within its limits, holding no tenant's secrets, well under its memory and
// not too often, waits a while for the next render instead of ending, which
// spares the next render the start of a process (what that saves is in
// docs/architecture.md).
const (
	// workerIdle is how long an idle worker waits for another render.
	workerIdle = 15 * time.Second
	// workerJobs is the most renders one worker serves.
	workerJobs = 512
	// workerIdleMax is the most idle workers kept per pool.
	workerIdleMax = 2
	// workerInputMargin is the room a job takes beyond its files.
	workerInputMargin = 4 << 20
)

var (
	poolsMu gosync.Mutex
	pools   = map[string]*workerPool{}
)

func poolFor(exe string, limits workerLimits) *workerPool {
	key := exe + "\x00" + limits.String()
	poolsMu.Lock()
	defer poolsMu.Unlock()
	p, ok := pools[key]
	if !ok {
		p = &workerPool{exe: exe, limits: limits}
		pools[key] = p
	}
	return p
}

type workerPool struct {
	exe    string
	limits workerLimits
	mu     gosync.Mutex
	idle   []*workerProc
}

// get takes an idle worker, or starts one.
func (p *workerPool) get() (*workerProc, error) {
	p.mu.Lock()
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if w.idleTimer.Stop() {
			p.mu.Unlock()
			return w, nil
		}
	}
	p.mu.Unlock()
	return startWorker(p.exe, p.limits)
}

// put keeps w for the next render, or ends it when enough wait.
func (p *workerPool) put(w *workerProc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= workerIdleMax {
		go w.close()
		return
	}
	p.idle = append(p.idle, w)
	w.idleTimer = time.AfterFunc(workerIdle, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if i := slices.Index(p.idle, w); i >= 0 {
			p.idle = slices.Delete(p.idle, i, i+1)
			go w.close()
		}
	})
}

// workerProc is one worker process.
type workerProc struct {
	cmd       *exec.Cmd
	in, out   *os.File
	stderr    *boundedBuffer
	limits    workerLimits
	jobs      int
	exited    chan struct{}
	waitErr   error
	idleTimer *time.Timer
}

func startWorker(exe string, limits workerLimits) (*workerProc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, err
	}
	// The first argument stops a test binary that is no worker from running
	// its tests as one; the tether binary never reads it.
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = []string{workerEnv + "=" + limits.String(), "GOTRACEBACK=none", "PATH="}
	w := &workerProc{cmd: cmd, in: inW, out: outR, stderr: &boundedBuffer{max: workerStderr}, limits: limits, exited: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, w.stderr
	cmd.SysProcAttr = workerAttr()
	err = cmd.Start()
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("starting the render worker: %w", err)
	}
	go func() {
		w.waitErr = cmd.Wait()
		close(w.exited)
	}()
	return w, nil
}

// close ends an idle worker (it exits when its input ends) and waits for it.
func (w *workerProc) close() {
	_ = w.in.Close()
	select {
	case <-w.exited:
	case <-time.After(workerIdle):
		_ = w.cmd.Process.Kill()
		<-w.exited
	}
	_ = w.out.Close()
}

// kill ends the worker at once.
func (w *workerProc) kill() {
	_ = w.cmd.Process.Kill()
}

// run renders one job, frame, while it watches the worker's memory and the
// deadline; reusable says the worker may serve another.
func (w *workerProc) run(frame []byte, dir string, opts render.Options) (r Rendered, reusable bool, err error) {
	w.jobs++
	watch := &jobWatch{dir: dir, limits: w.limits, timeout: opts.Timeout, maxAnswer: opts.MaxRenderedBytes + workerAnswerMargin}
	done := make(chan struct{})
	go watch.watch(w, done)
	var a jobAnswer
	_, err = w.in.Write(frame)
	if err == nil {
		err = readFrame(w.out, watch.maxAnswer, &a)
	}
	close(done)
	if stopped := watch.stopped.Load(); stopped != nil {
		w.kill()
		return Rendered{}, false, watch.limitError(*stopped)
	}
	if errors.Is(err, errFrameTooLarge) {
		w.kill()
		return Rendered{}, false, watch.limitError(ErrRenderOutput)
	}
	if err != nil {
		w.kill()
		<-w.exited
		return Rendered{}, false, watch.crashError(w.stderr.String(), w.waitErr)
	}
	r, err = watch.decode(&a)
	reusable = err == nil && a.Err == nil && w.jobs < workerJobs && residentBytes(w.cmd.Process.Pid) < w.limits.Memory/2
	return r, reusable, err
}

// jobWatch watches one job of a worker.
type jobWatch struct {
	dir       string
	limits    workerLimits
	timeout   time.Duration
	maxAnswer int64
	// stopped says why the agent killed the worker, if it did.
	stopped atomic.Pointer[error]
	// peak is the most resident memory seen of the worker, and peakData the
	// most data (what RLIMIT_DATA counts).
	peak, peakData atomic.Int64
}

// watch kills the worker past the job's deadline or its memory, until done.
func (j *jobWatch) watch(w *workerProc, done <-chan struct{}) {
	deadline := time.NewTimer(j.timeout)
	defer deadline.Stop()
	tick := time.NewTicker(workerWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-deadline.C:
			j.stop(w, ErrRenderTimeout)
			return
		case <-tick.C:
			rss, data := memoryOf(w.cmd.Process.Pid)
			if rss > j.peak.Load() {
				j.peak.Store(rss)
			}
			if data > j.peakData.Load() {
				j.peakData.Store(data)
			}
			if rss > j.limits.Memory {
				j.stop(w, ErrRenderMemory)
				return
			}
		}
	}
}

// stop kills the worker for cause, the first cause only.
func (j *jobWatch) stop(w *workerProc, cause error) {
	if j.stopped.CompareAndSwap(nil, &cause) {
		w.kill()
	}
}

func (w *jobWatch) decode(a *jobAnswer) (Rendered, error) {
	if a.Err != nil {
		return Rendered{}, a.Err.renderError()
	}
	held := compactObjects(a.Objects)
	objs, err := held.decode()
	if err != nil {
		return Rendered{}, &result.RenderError{File: w.dir, Err: fmt.Errorf("%w: its objects do not read (%v)", ErrRenderWorker, err)}
	}
	return Rendered{objs: objs, held: held}, nil
}

// limitError is the failure of a worker the agent stopped.
func (w *jobWatch) limitError(cause error) error {
	var msg string
	switch {
	case errors.Is(cause, ErrRenderTimeout):
		// A limit too, but not one the cache keeps (lasting): a loaded
		// machine may be why.
		return &result.RenderError{File: w.dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("%w: not finished after %s", ErrRenderTimeout, w.timeout)}
	case errors.Is(cause, ErrRenderMemory):
		msg = fmt.Sprintf("over %s", mebibytes(w.limits.Memory))
	case errors.Is(cause, ErrRenderOutput):
		msg = fmt.Sprintf("over %s", mebibytes(w.maxAnswer))
	}
	return &result.RenderError{File: w.dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("%w (%s)", cause, msg)}
}

// crashError is the failure of a worker that ended by itself without an
// answer: the kernel's limits, Go's fatal errors, or a worker that could not
// start. Only the runtime's own words are read from its standard error, which
// repository content does not write.
func (w *jobWatch) crashError(stderr string, waitErr error) error {
	limit := func(cause error, detail string) error {
		return &result.RenderError{File: w.dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("%w (%s)", cause, detail)}
	}
	switch {
	case strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "stack overflow"):
		return limit(ErrRenderDepth, "the stack passed "+mebibytes(int64(min(maxWorkerStack, int(w.limits.Memory/4)))))
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory") || strings.Contains(stderr, "cannot map pages"):
		return limit(ErrRenderMemory, "over "+mebibytes(w.limits.Memory))
	case strings.Contains(stderr, cpuExceeded) || signalled(waitErr, "CPU time limit exceeded"):
		return limit(ErrRenderCPU, "over "+w.limits.CPU.String())
	case signalled(waitErr, "killed"):
		// Killed by no one here: the kernel, the container's memory running out
		// (a worker is the first the kernel ends).
		return limit(ErrRenderMemory, "killed by the system, most likely for memory")
	}
	peak := w.peak.Load()
	if !workerRaceBuild {
		// RLIMIT_DATA counts what Go's runtime reserved as well as what it
		// uses (a worker at rest holds about 110 MiB of data, 45 of it
		// resident): a refusal may come long before the resident memory grows.
		peak = max(peak, w.peakData.Load())
	}
	if peak*10 >= w.limits.Memory*6 {
		// Near its memory, Go's runtime may fail in ways it does not name
		// (a fault in the collector when a mapping is refused).
		return limit(ErrRenderMemory, fmt.Sprintf("over %s, the worker ending at %s", mebibytes(w.limits.Memory), mebibytes(peak)))
	}
	return &result.RenderError{File: w.dir, Err: fmt.Errorf("%w: %v%s", ErrRenderWorker, waitErr, fatalLine(stderr))}
}

func signalled(err error, signal string) bool {
	var exit *exec.ExitError
	return errors.As(err, &exit) && strings.Contains(exit.String(), signal)
}

// fatalLine is the first line of a worker's standard error that the runtime
// or the worker itself wrote ("fatal error: …", "tether render worker: …").
func fatalLine(stderr string) string {
	for line := range strings.SplitSeq(stderr, "\n") {
		if strings.HasPrefix(line, "fatal error: ") || strings.HasPrefix(line, "runtime: ") || strings.HasPrefix(line, "tether render worker: ") {
			return ": " + truncate(line, 200)
		}
	}
	return ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func mebibytes(n int64) string { return fmt.Sprintf("%d MiB", n>>20) }

// boundedBuffer keeps the first max bytes written to it and drops the rest.
type boundedBuffer struct {
	bytes.Buffer
	max int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// CloseRenderWorkers ends the idle render workers and waits for them: a
// command that rendered (tether render, diff) calls it before it exits, so
// that no worker outlives it and each is counted as its own child.
func CloseRenderWorkers() {
	poolsMu.Lock()
	var idle []*workerProc
	for _, p := range pools {
		p.mu.Lock()
		for _, w := range p.idle {
			if w.idleTimer.Stop() {
				idle = append(idle, w)
			}
		}
		p.idle = nil
		p.mu.Unlock()
	}
	poolsMu.Unlock()
	for _, w := range idle {
		w.close()
	}
}

// ErrRenderTimeout is wrapped by the result.RenderError of a render that did not finish
// within Options.Timeout (source's --render-timeout).
var ErrRenderTimeout = errors.New("rendering took too long")

// RenderFS renders dir of the files a copier (source's) copied into fs, in a
// render worker: a chart as helm says, with the cluster's
// capabilities read once, anything else decrypted with dec, of a plain
// directory what sel selects. The one way the CLI's renders (a directory on
// disk, a commit of a checkout) take the wall.
func RenderFS(ctx context.Context, fs *render.FS, dir string, sel render.Directory, helm render.Helm, opts render.Options, dec *sops.Decryption) ([]*unstructured.Unstructured, error) {
	job := &Job{Dir: dir, Directory: sel, Opts: opts}
	if render.IsChart(fs, path.Join("/", dir)) {
		caps, err := render.ReadCapabilities(ctx, helm)
		if err != nil {
			return nil, err
		}
		job.Helm = HelmJobOf(&helm, caps)
	}
	job.SetDecryption(dec)
	job.Files, job.Dirs = fs.Contents()
	r, err := Run(job, opts)
	return r.objs, err
}
