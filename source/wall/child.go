package wall

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"syscall"
	"time"

	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
)

// workerEnv marks a process the agent started as a render worker; its value
// holds the worker's limits (workerLimits.String).
const workerEnv = "TETHER_RENDER_WORKER"

// ServeRenderWorker makes this process a render worker and exits, when the
// agent started it as one; otherwise it returns at once. main calls it before
// anything else, and so does every TestMain of a package whose tests render
// through the wall (the test binary is then the worker, as the tether binary
// is in a cluster).
//
// A worker applies its limits to itself before it reads anything (limits.go),
// closes the network to itself (IsolateRendering), reads one job from standard
// input, renders it and writes the answer to standard output.
func ServeRenderWorker() {
	spec, ok := os.LookupEnv(workerEnv)
	if !ok {
		return
	}
	os.Exit(serveWorker(spec, os.Stdin, os.Stdout, os.Stderr))
}

// Exit statuses of a worker that could not answer.
const (
	workerBadStart = 3
	workerBadIO    = 4
	workerOverCPU  = 5
)

// cpuExceeded is what a worker says, on its standard error, when its
// processor time ran out.
const cpuExceeded = "tether render worker: SIGXCPU: the render used its processor time"

// endOnSIGXCPU ends the worker when the kernel says it passed RLIMIT_CPU's soft
// limit. Go's runtime ignores SIGXCPU unless asked for it, and the hard limit
// stays open so that the next job may be given its own time (startJob): without
// this, the processor limit would stop nothing.
func endOnSIGXCPU(errOut io.Writer) {
	xcpu := make(chan os.Signal, 1)
	signal.Notify(xcpu, syscall.SIGXCPU)
	go func() {
		<-xcpu
		fmt.Fprintln(errOut, cpuExceeded)
		os.Exit(workerOverCPU)
	}()
}

func serveWorker(spec string, in io.Reader, out, errOut io.Writer) int {
	limits, err := parseWorkerLimits(spec)
	if err != nil {
		fmt.Fprintln(errOut, "tether render worker:", err)
		return workerBadStart
	}
	if err := limits.apply(); err != nil {
		fmt.Fprintln(errOut, "tether render worker: applying its limits:", err)
		return workerBadStart
	}
	endOnSIGXCPU(errOut)
	render.IsolateRendering()
	for {
		if err := limits.startJob(); err != nil {
			fmt.Fprintln(errOut, "tether render worker: applying its limits:", err)
			return workerBadStart
		}
		var job Job
		err := readFrame(in, limits.Input, &job)
		if errors.Is(err, io.EOF) {
			return 0
		}
		if err != nil {
			fmt.Fprintln(errOut, "tether render worker: reading the job:", err)
			return workerBadIO
		}
		frame, err := encodeFrame(runJob(&job))
		if err != nil {
			fmt.Fprintln(errOut, "tether render worker: writing the answer:", err)
			return workerBadIO
		}
		if _, err := out.Write(frame); err != nil {
			fmt.Fprintln(errOut, "tether render worker: writing the answer:", err)
			return workerBadIO
		}
		if job.holdsSecrets() {
			return 0 // a worker that held a tenant's secrets serves no one else
		}
		releaseMemory()
	}
}

// heapKeptBetweenJobs is how much heap a worker may keep between renders
// before it collects and returns what it freed to the system at once. Doing
// so after every render cost more than the render of a small path (a full
// collection and an madvise each time); below this, Go's scavenger returns
// it in the background, and the agent, which reads the worker's resident
// memory after each render, retires a worker that kept more than half its
// limit.
const heapKeptBetweenJobs = 32 << 20

var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

// releaseMemory returns a large render's heap to the system before the next.
func releaseMemory() {
	metrics.Read(heapSample)
	if heapSample[0].Value.Kind() == metrics.KindUint64 && heapSample[0].Value.Uint64() > heapKeptBetweenJobs {
		debug.FreeOSMemory()
	}
}

// runJob renders job, as the agent rendered in process before the wall.
func runJob(job *Job) *jobAnswer {
	r, err := renderJobNow(job)
	if err != nil {
		return &jobAnswer{Err: jobErrorOf(err)}
	}
	held, err := compact(r.objs)
	if err != nil {
		return &jobAnswer{Err: jobErrorOf(&result.RenderError{File: job.Dir, Err: err})}
	}
	return &jobAnswer{Objects: held}
}

func renderJobNow(job *Job) (r Rendered, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = Rendered{}, &result.RenderError{File: job.Dir, Err: fmt.Errorf("rendering panicked: %v", p)}
		}
	}()
	if job.Substitute != nil {
		return runSubstitute(job.Dir, job.Substitute)
	}
	if job.Overlay != nil {
		return runOverlay(job.Dir, job.Overlay, job.Opts)
	}
	if job.Package != nil {
		fs, err := render.UnpackChart(job.Package, job.Dir, job.Opts)
		if err != nil {
			return Rendered{}, err
		}
		if job.Helm == nil {
			return Rendered{}, &result.RenderError{File: job.Dir, Err: fmt.Errorf("%w: Rendered without render.Helm input", render.ErrChartPackage)}
		}
		job.Dir = path.Clean(job.Dir)
		return renderJobChart(job, fs)
	}
	fs := render.NewFS()
	for _, d := range job.Dirs {
		if err := fs.MkdirAll(d); err != nil {
			return Rendered{}, &result.RenderError{File: job.Dir, Err: err}
		}
	}
	for p, data := range job.Files {
		if err := fs.WriteFile(p, data); err != nil {
			return Rendered{}, &result.RenderError{File: job.Dir, Err: err}
		}
	}
	if job.Helm != nil && render.IsChart(fs, path.Join("/", job.Dir)) {
		return renderJobChart(job, fs)
	}
	dec, err := job.decryption()
	if err != nil {
		return Rendered{}, &result.RenderError{File: job.Dir, Err: fmt.Errorf("decryption keys: %w", err)}
	}
	objs, err := render.Path(fs, job.Dir, job.Directory, job.Opts, dec)
	return Rendered{objs: objs}, err
}

// renderJobChart renders the chart of job, with fs its files. No message
// leaves with a value of a Secret's values layer in it (render.RedactSecretValues),
// and under requireEncryption no Secret the chart makes may hold a value: a
// chart decrypts nothing.
func renderJobChart(job *Job, fs *render.FS) (Rendered, error) {
	objs, err := render.Chart(fs, job.Dir, *job.Helm.helm(), job.Helm.Caps, job.Opts)
	if err == nil && job.Decrypt != nil && job.Decrypt.RequireEncryption {
		err = render.CheckRenderedSecrets(objs, nil, job.Dir)
	}
	if err != nil {
		return Rendered{}, render.RedactSecretValues(err, job.Helm.ValuesFrom)
	}
	return Rendered{objs: objs}, nil
}

// workerLimits are what a worker may use: the operating system holds it to
// them (limits.go), and the agent stops it past its deadline or its
// memory (worker.go).
type workerLimits struct {
	// Memory is the most bytes of memory the worker may hold.
	Memory int64
	// CPU is the most processor time it may use.
	CPU time.Duration
	// Files is the most files it may hold open.
	Files int
	// Input is the most bytes of job it reads.
	Input int64
}

func (l workerLimits) String() string {
	return fmt.Sprintf("memory=%d,cpu=%d,files=%d,input=%d", l.Memory, int64(l.CPU/time.Millisecond), l.Files, l.Input)
}

func parseWorkerLimits(spec string) (workerLimits, error) {
	var l workerLimits
	for field := range strings.SplitSeq(spec, ",") {
		name, value, _ := strings.Cut(field, "=")
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil || n <= 0 {
			return l, fmt.Errorf("limit %q: not a positive number", field)
		}
		switch name {
		case "memory":
			l.Memory = n
		case "cpu":
			l.CPU = time.Duration(n) * time.Millisecond
		case "files":
			l.Files = int(n)
		case "input":
			l.Input = n
		default:
			return l, fmt.Errorf("unknown limit %q", name)
		}
	}
	if l.Memory == 0 || l.CPU == 0 || l.Files == 0 || l.Input == 0 {
		return l, fmt.Errorf("limits %q: memory, cpu, files and input are all needed", spec)
	}
	return l, nil
}

// Go's own bounds inside a worker, below the operating system's: the
// collector works hard before the memory limit is met, and a recursion (tpl
// calling tpl, an include of itself) ends at a stack far smaller than Go's
// default gigabyte, as a fatal error the agent reads as such.
const (
	softMemoryShare = 0.75
	maxWorkerStack  = 16 << 20
)

func (l workerLimits) applyToGo() {
	debug.SetMemoryLimit(int64(float64(l.Memory) * softMemoryShare))
	debug.SetMaxStack(min(maxWorkerStack, int(l.Memory/4)))
}
