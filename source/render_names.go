package source

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/wall"
)

// Rendering lives in two rooms below source (render: files into objects,
// plain, kustomize and Helm; wall: the worker processes every render runs
// in). These are their names under source, for the callers that know them.
type (
	// RenderOptions bound one render of a directory (render.DirOptions).
	RenderOptions = render.DirOptions
	// Directory selects the files a plain directory renders.
	Directory = render.Directory
	// Helm says how a path holding a Chart.yaml renders.
	Helm = render.Helm
	// Values is one valuesFrom layer of a chart's values.
	Values = render.Values
	// Capabilities are what a chart sees of the cluster.
	Capabilities = render.Capabilities
	// Substitution is a Sync's spec.postBuild as the render wall takes it.
	Substitution = wall.Substitution
)

// Errors a RenderError may wrap, which callers test with errors.Is.
var (
	ErrNoSuchPath             = render.ErrNoSuchPath
	ErrRemoteReference        = render.ErrRemoteReference
	ErrNetworkRefused         = render.ErrNetworkRefused
	ErrChartDependencyMissing = render.ErrChartDependencyMissing
	ErrChartPackage           = render.ErrChartPackage
	ErrRenderTimeout          = wall.ErrRenderTimeout
	ErrRenderMemory           = wall.ErrRenderMemory
	ErrRenderCPU              = wall.ErrRenderCPU
	ErrRenderDepth            = wall.ErrRenderDepth
	ErrRenderOutput           = wall.ErrRenderOutput
	ErrRenderWorker           = wall.ErrRenderWorker
)

// Render turns dir of fs into objects (render.Dir).
func Render(fs filesys.FileSystem, root, dir string, opts RenderOptions) ([]*unstructured.Unstructured, error) {
	return render.Dir(fs, root, dir, opts)
}

// DecodeManifests splits a YAML or JSON stream into Kubernetes objects, read
// as kubectl reads a file it applies (render.DecodeManifests).
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	return render.DecodeManifests(data)
}

// DirectoryOf is the selection spec.source.directory says (render.DirectoryOf).
func DirectoryOf(d *v1alpha1.DirectorySpec) Directory { return render.DirectoryOf(d) }

// CheckOverlaySecrets refuses a Secret spec.kustomize left holding a value in
// plain text (render.CheckOverlaySecrets).
func CheckOverlaySecrets(before, after []*unstructured.Unstructured, dir string) error {
	return render.CheckOverlaySecrets(before, after, dir)
}

// IsolateRendering closes the network to this process's rendering
// (render.IsolateRendering); it returns what undoes it.
func IsolateRendering() (restore func()) { return render.IsolateRendering() }

// DefaultAPIVersions are the API versions a chart sees when the caller reads
// none from the cluster (render.DefaultAPIVersions).
func DefaultAPIVersions() []string { return render.DefaultAPIVersions() }

// ServeRenderWorker makes this process a render worker and exits, when the
// agent started it as one (wall.ServeRenderWorker); otherwise it returns.
func ServeRenderWorker() { wall.ServeRenderWorker() }

// CloseRenderWorkers ends the idle render workers and waits for them
// (wall.CloseRenderWorkers).
func CloseRenderWorkers() { wall.CloseRenderWorkers() }

// Overlay puts k (spec.kustomize) on top of snap's objects behind the render
// wall, in a worker under opts' limits (wall.Overlay).
func Overlay(snap *Snapshot, k *v1alpha1.Kustomize, opts Options) (*Snapshot, error) {
	return wall.Overlay(snap, k, opts.renderOptions())
}

// Substitute substitutes sub into snap's objects behind the render wall, in a
// worker under opts' limits (wall.Substitute).
func Substitute(snap *Snapshot, sub Substitution, opts Options) (*Snapshot, error) {
	return wall.Substitute(snap, sub, opts.renderOptions())
}

// renderOptions are the bounds of one render among opts, as the render rooms
// take them; a bound opts leaves unset is the worker's default.
func (o Options) renderOptions() render.Options {
	return render.Options{
		MaxFileSize: o.MaxFileSize, MaxTreeSize: o.MaxTreeSize,
		MaxYAMLNodesPerFile: o.MaxYAMLNodesPerFile, MaxYAMLNodesPerRender: o.MaxYAMLNodesPerRender,
		MaxObjects: o.MaxObjects, MaxRenderedBytes: o.MaxRenderedBytes,
		MaxChartFiles: o.MaxChartFiles, MaxChartPackageBytes: o.MaxChartPackageBytes,
		Timeout: o.RenderTimeout, MemoryLimit: o.RenderMemoryLimit, WorkerPath: o.RenderWorkerPath,
	}
}
