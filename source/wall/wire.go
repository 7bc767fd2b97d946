package wall

import (
	"bytes"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"slices"

	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
	"tether.dev/tether/source/sops"
)

// Job is one render as a worker process receives it: everything the
// render reads, as values, so that the worker needs nothing else of the agent
// (no git cache, no Kubernetes, no credentials but the Sync's decryption keys).
type Job struct {
	// Dir is the path rendered, relative to the repository root; for a package
	// its name@version, for messages.
	Dir string
	// Directory selects the files of a plain directory Dir renders.
	Directory render.Directory
	// Files are the files of the render's in-memory file system by absolute
	// path, and Dirs its directories (empty ones included): what the agent's
	// copier took from the commit, within its bounds.
	Files map[string][]byte
	Dirs  []string
	// Package is a packaged chart, rendered in place of Files.
	Package []byte
	// Helm says how a chart renders; nil renders none (a chart directory then
	// renders as plain files would).
	Helm *HelmJob
	// Decrypt, when set, has the render decrypt SOPS files.
	Decrypt *DecryptJob
	// Opts are the agent's source options: the render's bounds among them.
	Opts render.Options
	// Substitute, when set, makes the job a substitution of spec.postBuild's
	// variables into objects already rendered (Files and the rest unused).
	Substitute *jobSubstitute
	// Overlay, when set, makes the job spec.kustomize put on top of objects
	// already rendered (Files and the rest unused).
	Overlay *OverlayJob
}

// sizeHint is about the bytes the job takes as a frame: its files, package,
// values and objects (gob adds a few bytes to each).
func (job *Job) sizeHint() int {
	n := len(job.Package)
	for p, data := range job.Files {
		n += len(p) + len(data) + 8
	}
	for _, d := range job.Dirs {
		n += len(d) + 4
	}
	if job.Helm != nil {
		n += len(job.Helm.Values)
	}
	if job.Substitute != nil {
		for _, o := range job.Substitute.Objects {
			n += len(o) + 4
		}
	}
	if job.Overlay != nil {
		for _, o := range job.Overlay.Objects {
			n += len(o) + 4
		}
		for _, p := range job.Overlay.Kustomize.Patches {
			n += len(p.Patch)
		}
		for p, data := range job.Overlay.Files {
			n += len(p) + len(data) + 8
		}
	}
	return n
}

// sizeHint is about the bytes the answer takes as a frame.
func (a *jobAnswer) sizeHint() int {
	n := 0
	for _, o := range a.Objects {
		n += len(o) + 4
	}
	return n
}

// DecryptJob is sops.Decryption as it crosses to a worker.
type DecryptJob struct {
	// Keys are the entries of the Sync's decryption keys Secret that ParseKeys
	// reads (none at all when empty: every SOPS file then fails to open,
	// naming itself).
	Keys              map[string][]byte
	RequireEncryption bool
}

// SetDecryption has the job decrypt as dec says (nil: not at all).
func (job *Job) SetDecryption(dec *sops.Decryption) {
	if dec == nil {
		return
	}
	job.Decrypt = &DecryptJob{RequireEncryption: dec.RequireEncryption}
	if dec.Keys != nil {
		job.Decrypt.Keys = dec.Keys.Entries()
	}
}

// decryption is the job's Decryption, its keys parsed again; nil when the job
// decrypts nothing.
func (job *Job) decryption() (*sops.Decryption, error) {
	if job.Decrypt == nil {
		return nil, nil
	}
	dec := &sops.Decryption{RequireEncryption: job.Decrypt.RequireEncryption}
	if len(job.Decrypt.Keys) > 0 {
		keys, err := sops.ParseKeys(job.Decrypt.Keys)
		if err != nil {
			return nil, err
		}
		dec.Keys = keys
	}
	return dec, nil
}

// HelmJob is Helm without the function that reads the cluster: the worker
// gets the capabilities it read instead.
type HelmJob struct {
	ReleaseName, Namespace string
	ValuesFiles            []string
	ValuesFrom             []render.Values
	Values                 []byte
	SkipCRDs               bool
	// Caps are what the chart sees of the cluster.
	Caps render.Capabilities
}

// HelmJobOf is h as a worker receives it, with caps, what the chart sees of the
// cluster; nil for nil.
func HelmJobOf(h *render.Helm, caps render.Capabilities) *HelmJob {
	if h == nil {
		return nil
	}
	return &HelmJob{ReleaseName: h.ReleaseName, Namespace: h.Namespace, ValuesFiles: h.ValuesFiles,
		ValuesFrom: h.ValuesFrom, Values: h.Values, SkipCRDs: h.SkipCRDs, Caps: caps}
}

func (h *HelmJob) helm() *render.Helm {
	if h == nil {
		return nil
	}
	return &render.Helm{ReleaseName: h.ReleaseName, Namespace: h.Namespace, ValuesFiles: h.ValuesFiles,
		ValuesFrom: h.ValuesFrom, Values: h.Values, SkipCRDs: h.SkipCRDs}
}

// jobAnswer is what a worker answers: the rendered objects as JSON, one per
// object (the render cache's form), or the render's failure.
type jobAnswer struct {
	Objects [][]byte
	Err     *jobError
}

// jobError is a result.RenderError as it crosses the process boundary: its file, its
// reason, its message (already redacted of decrypted values by the worker), and
// which of the package's sentinel errors it wrapped, so that errors.Is still
// answers for the caller.
type jobError struct {
	File, Reason, Message string
	Sentinels             []int
}

// sentinels are the errors a result.RenderError may wrap that callers test for; an
// answer names them by index.
var sentinels = []error{render.ErrNoSuchPath, render.ErrRemoteReference, render.ErrChartPackage, render.ErrChartDependencyMissing, render.ErrNetworkRefused, ErrRenderTimeout}

func jobErrorOf(err error) *jobError {
	je := &jobError{Message: err.Error()}
	var re *result.RenderError
	if errors.As(err, &re) {
		je.File, je.Reason = re.File, re.Reason
		je.Message = re.Err.Error()
	}
	for i, s := range sentinels {
		if errors.Is(err, s) {
			je.Sentinels = append(je.Sentinels, i)
		}
	}
	return je
}

// renderError is the result.RenderError the worker's answer describes.
func (je *jobError) renderError() *result.RenderError {
	return &result.RenderError{File: je.File, Reason: je.Reason, Err: &workerCause{msg: je.Message, sentinels: je.Sentinels}}
}

// workerCause is the cause of a failure a worker reported.
type workerCause struct {
	msg       string
	sentinels []int
}

func (c *workerCause) Error() string { return c.msg }

func (c *workerCause) Is(target error) bool {
	i := slices.Index(sentinels, target)
	return i >= 0 && slices.Contains(c.sentinels, i)
}

// Jobs and answers cross the pipes as frames: an 8-byte length, then that
// many bytes of gob, so that a worker serves one job after another on the
// same pipes and neither side reads past a frame.

// encodeFrame returns v as a frame.
func encodeFrame(v any) ([]byte, error) {
	var b bytes.Buffer
	// A frame of large files would otherwise be built in a buffer that doubles
	// as it goes: up to twice its size, and each smaller copy, held at once.
	if s, ok := v.(interface{ sizeHint() int }); ok {
		b.Grow(8 + s.sizeHint() + 4<<10)
	}
	b.Write(make([]byte, 8))
	if err := gob.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	frame := b.Bytes()
	binary.BigEndian.PutUint64(frame[:8], uint64(len(frame)-8))
	return frame, nil
}

// errFrameTooLarge: a frame announced more than its reader takes.
var errFrameTooLarge = errors.New("frame over its bound")

// readFrame reads one frame of at most limit bytes from r into v. io.EOF
// before a frame begins says the other side closed.
func readFrame(r io.Reader, limit int64, v any) error {
	var head [8]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint64(head[:])
	if n > uint64(limit) {
		return fmt.Errorf("%w: %d bytes, over %d", errFrameTooLarge, n, limit)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return fmt.Errorf("reading a frame: %w", err)
	}
	return gob.NewDecoder(bytes.NewReader(body)).Decode(v)
}
