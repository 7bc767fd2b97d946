package render

import (
	"path"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"tether.dev/tether/source/sops"
)

// Options bound what one render may read, make and cost, wherever it runs:
// the render fields of source.Options, which the agent's flags set, handed
// down by source (source.Options, which builds them) so that this package knows nothing
// of the git cache. A worker receives them with its job, so that it holds a
// render to the bounds the agent was started with.
type Options struct {
	// MaxFileSize is the largest file a render reads: of a commit (the copier
	// leaves larger ones out) or of a chart package as it is unpacked.
	MaxFileSize int64
	// MaxTreeSize is the most bytes of files one render reads, a chart
	// package's unpacked files included.
	MaxTreeSize int64
	// MaxYAMLNodesPerFile is the most YAML nodes one file may hold (a bound
	// from its text, before it is parsed) and expand to through aliases.
	MaxYAMLNodesPerFile int
	// MaxYAMLNodesPerRender is the most YAML nodes the files of one render
	// may hold together, counted as for MaxYAMLNodesPerFile.
	MaxYAMLNodesPerRender int
	// MaxObjects is the most objects one render may make.
	MaxObjects int
	// MaxRenderedBytes is the most bytes (as JSON) the objects of one render
	// may take; it bounds what kustomize, a chart or YAML aliases make of a
	// small input.
	MaxRenderedBytes int64
	// MaxChartFiles bounds the entries of a chart package.
	MaxChartFiles int
	// MaxChartPackageBytes bounds a chart package a worker receives.
	MaxChartPackageBytes int64
	// Timeout bounds one render; the agent kills its worker past it.
	Timeout time.Duration
	// MemoryLimit is the most memory one render's worker may hold.
	MemoryLimit int64
	// WorkerPath is the executable a render worker runs; empty means the
	// process's own (os.Executable), which serves workers.
	WorkerPath string
}

// Defaults of the bounds on the YAML one render reads.
const (
	// DefaultMaxYAMLNodesPerFile and DefaultMaxYAMLNodesPerRender fail a
	// render that reads too much YAML fast and by name, before the worker's
	// memory would: kube-prometheus-stack reads between 0.8 and 1.6 million
	// nodes, about a quarter of the bound per render.
	DefaultMaxYAMLNodesPerFile   = 1 << 18
	DefaultMaxYAMLNodesPerRender = 1 << 22
	// DefaultMemoryLimit bounds one render's worker: whatever a repository
	// holds costs at most this, in a process the agent does not depend on.
	// kube-prometheus-stack, the most installed chart, renders in about 200
	// MiB (it fails at 152 MiB).
	DefaultMemoryLimit = 384 << 20
	// DefaultTimeout bounds one render when Options leave it unset.
	DefaultTimeout = 30 * time.Second
)

// Path renders dir (relative to the root of fs) of the files a copier
// copied, within opts, decrypting with dec (nil: nothing) and reading of a
// plain directory what sel selects: the one way both the agent (a commit)
// and the CLI (a directory on disk) render a path that is no chart, so that
// they cannot disagree.
func Path(fs *FS, dir string, sel Directory, opts Options, dec *sops.Decryption) ([]*unstructured.Unstructured, error) {
	return Dir(fs, "/", path.Join("/", dir), DirOptions{
		MaxObjects: opts.MaxObjects, MaxBytes: opts.MaxRenderedBytes,
		MaxYAMLNodesPerFile: opts.MaxYAMLNodesPerFile, MaxYAMLNodesPerRender: opts.MaxYAMLNodesPerRender,
		Decryption: dec, Directory: sel,
	})
}

// DefaultOptions returns the bounds an agent renders with unless its flags
// say otherwise (source.DefaultOptions takes its render fields from here):
// two renders at their peak, each reading at most 32 MiB of files and making
// at most 16 MiB of objects, fit an agent of 512 MiB beside the render cache.
func DefaultOptions() Options {
	return Options{
		MaxFileSize:           8 << 20,
		MaxTreeSize:           32 << 20,
		MaxYAMLNodesPerFile:   DefaultMaxYAMLNodesPerFile,
		MaxYAMLNodesPerRender: DefaultMaxYAMLNodesPerRender,
		MaxObjects:            20000,
		MaxRenderedBytes:      16 << 20,
		MaxChartFiles:         5000,
		MaxChartPackageBytes:  8 << 20,
		Timeout:               DefaultTimeout,
		MemoryLimit:           DefaultMemoryLimit,
	}
}
