package source

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// ErrRenderTimeout is wrapped by the RenderError of a render that did not finish
// within Options.RenderTimeout.
var ErrRenderTimeout = errors.New("rendering took too long")

// ErrNoSuchPath is wrapped by the RenderError of a path the revision does not
// hold.
var ErrNoSuchPath = errors.New("no such directory in the repository")

// Render renders dir (relative to the repository root) of a fetched revision;
// a dir holding a Chart.yaml renders as a Helm chart as helm says
// (render_helm.go), any other ignores helm. Results are cached by (URL, commit,
// path), and for a chart by what of helm changes its render too (the values
// among it): a revision's content never changes, so a resync of an unchanged
// revision costs no rendering.
//
// Each call returns objects of its own down to their metadata (what a caller marks
// and places: labels, annotations, namespace); below it (spec, data, metadata's
// nested maps), they are shared with the cache and with other calls, and must not
// be changed in place. A copy per call of everything would cost as much memory
// as the rendered revision at every reconcile.
func (s *Source) Render(ctx context.Context, rev Revision, dir string, helm Helm) (*Snapshot, error) {
	return s.RenderDecrypted(ctx, rev, dir, helm, nil)
}

// RenderDecrypted is Render decrypting the SOPS files the render reads with
// dec (nil decrypts nothing). The plaintext stays in memory: in the objects
// returned and in the in-memory render cache, where renders are kept apart by
// the digest of dec's keys, so that other keys (a rotation) render again and
// never see a render made with the old ones. Nothing decrypted is written to
// the on-disk cache, which holds git objects only.
func (s *Source) RenderDecrypted(ctx context.Context, rev Revision, dir string, helm Helm, dec *Decryption) (*Snapshot, error) {
	return s.RenderSelected(ctx, rev, dir, Directory{}, helm, dec)
}

// RenderSelected is RenderDecrypted reading, when dir is a plain directory,
// only the files sel selects (Argo CD's directory options): a render with
// another selection is another render, cached apart.
func (s *Source) RenderSelected(ctx context.Context, rev Revision, dir string, sel Directory, helm Helm, dec *Decryption) (*Snapshot, error) {
	clean, err := CleanPath(dir)
	if err != nil {
		return nil, err
	}
	key := renderKey(rev, clean, dec) + sel.key()
	chart, err := s.holdsChart(rev, clean, key)
	if err != nil {
		return nil, err
	}
	in := renderInput{rev: rev, dir: clean, sel: sel, dec: dec, tenant: TenantOf(ctx)}
	if chart {
		key += "\x00helm:" + helm.digest()
		in.helm = &helm
	}
	if err := s.renders.failure(key); err != nil {
		return nil, err
	}
	r, ok := s.renders.get(key)
	if !ok {
		if chart {
			if in.caps, err = readCapabilities(ctx, helm); err != nil {
				return nil, err
			}
		}
		if r, err = s.render(ctx, in, key); err != nil {
			return nil, err
		}
	}
	return &Snapshot{Revision: rev, Path: clean, Objects: r.forCaller()}, nil
}

// renderInput is what one render reads: a revision's directory, and for a chart
// how it renders and what it sees of the cluster.
type renderInput struct {
	rev Revision
	dir string
	// sel selects the files of a plain directory.
	sel  Directory
	helm *Helm
	caps Capabilities
	// dec decrypts the SOPS files the render reads; nil decrypts nothing.
	dec *Decryption
	// pkg is a packaged chart's package (RenderChart): rendered in place of
	// a directory of rev, dir naming it ("podinfo@6.14.1").
	pkg []byte
	// tenant asks for the render; its cache entry counts to it (WithTenant).
	tenant string
}

// readCapabilities reads the cluster's capabilities for one render of a chart.
func readCapabilities(ctx context.Context, helm Helm) (Capabilities, error) {
	if helm.Capabilities == nil {
		return Capabilities{}, nil
	}
	caps, err := helm.Capabilities(ctx)
	if err != nil {
		return Capabilities{}, fmt.Errorf("reading the cluster's capabilities for a Helm chart: %w", err)
	}
	return caps, nil
}

// renderKey is the cache key of a render of dir (clean) of rev with dec: the
// keys' digest keeps renders with other keys, or none, apart.
func renderKey(rev Revision, dir string, dec *Decryption) string {
	return rev.URL + "\x00" + rev.Commit + "\x00" + dir + "\x00" + dec.Digest()
}

// ForgetKeys drops from the render cache every render made with the keys whose
// digest (Keys.Digest) is given: the Sync that held them is gone, or holds other
// keys now, and the plaintext they opened should not outlive them in memory. A
// Sync with the same keys renders again at its next reconcile.
func (s *Source) ForgetKeys(digest string) {
	if digest == "" {
		return
	}
	s.renders.forgetIf(func(key string) bool { return strings.Contains(key, "\x00"+digest) })
}

// renderCall is one render running, which callers of the same key wait for.
type renderCall struct {
	done chan struct{}
	// Set before done is closed.
	r   rendered
	err error
}

// render renders dir of rev within Options.RenderTimeout, at most
// Options.MaxConcurrentRenders at once, so that the memory renders take at their
// peak does not add up with the number of workers.
//
// Kustomize cannot be interrupted, so the render runs in a goroutine of its own,
// and the caller stops waiting for it when its context ends or its deadline
// passes, and gives back its slot. The render itself goes on until it finishes
// (it reads only memory and refuses the network, so it does finish) and then
// fills the cache; until then a caller of the same key joins it, holding no
// slot, instead of starting another, so that a retry never runs a second copy.
// Renders a caller gave up on are thus outside the slot count, at most one per
// key, and at most MaxConcurrentRenders + MaxRendersGivenUp renders run at
// once, given up on or not: a new render waits, within its deadline, while that
// many are still running.
func (s *Source) render(ctx context.Context, in renderInput, key string) (rendered, error) {
	dir := in.dir
	ctx, cancel := context.WithTimeoutCause(ctx, s.opts.RenderTimeout, ErrRenderTimeout)
	defer cancel()
	if call := s.running(key); call != nil {
		return s.await(ctx, call, dir)
	}
	select {
	case s.rendering <- struct{}{}:
		defer func() { <-s.rendering }()
	case <-ctx.Done():
		return rendered{}, s.ended(ctx, dir)
	}
	select {
	case s.live <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), ErrRenderTimeout) {
			return rendered{}, &RenderError{File: dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("%w: not started after %s, waiting for %d renders given up on to finish", ErrRenderTimeout, s.opts.RenderTimeout, s.opts.MaxRendersGivenUp)}
		}
		return rendered{}, s.ended(ctx, dir)
	}
	call, started := s.start(in, key)
	if !started {
		<-s.live // joined a render that holds a token of its own
	}
	return s.await(ctx, call, dir)
}

// running returns the render of key running, if any.
func (s *Source) running(key string) *renderCall {
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	return s.inflight[key]
}

// start starts rendering key, unless a render of it is running already, and
// reports whether it started one. A render it starts owns the live token the
// caller took, and gives it back when it finishes.
func (s *Source) start(in renderInput, key string) (*renderCall, bool) {
	s.renderMu.Lock()
	defer s.renderMu.Unlock()
	if call, ok := s.inflight[key]; ok {
		return call, false
	}
	call := &renderCall{done: make(chan struct{})}
	s.inflight[key] = call
	go func() {
		defer close(call.done)
		defer func() { <-s.live }()
		r, err := s.renderNow(in)
		if err == nil {
			s.renders.put(key, in.tenant, r)
		} else if lasting(err) {
			s.renders.putError(key, in.tenant, err)
		}
		call.r, call.err = r, err
		s.renderMu.Lock()
		delete(s.inflight, key)
		s.renderMu.Unlock()
	}()
	return call, true
}

// await waits for call, or for ctx to end.
func (s *Source) await(ctx context.Context, call *renderCall, dir string) (rendered, error) {
	select {
	case <-call.done:
		return call.r, call.err
	case <-ctx.Done():
		return rendered{}, s.ended(ctx, dir)
	}
}

// ended is the error of a render whose caller stopped waiting: a RenderError if
// its deadline passed, else the context's error.
func (s *Source) ended(ctx context.Context, dir string) error {
	if errors.Is(context.Cause(ctx), ErrRenderTimeout) {
		return &RenderError{File: dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("%w: not finished after %s", ErrRenderTimeout, s.opts.RenderTimeout)}
	}
	return fmt.Errorf("rendering %s: %w", dir, ctx.Err())
}

// lasting reports whether err, the failure of a render, is one every render of
// the same commit and path meets again: what the commit holds (broken YAML, a
// kustomization that fails, a render over its bounds, a missing path), not a
// deadline, and not the git cache (a FetchError).
func lasting(err error) bool {
	var re *RenderError
	return errors.As(err, &re) && !errors.Is(err, ErrRenderTimeout)
}

// renderNow renders what in names, in a worker process (render_worker.go):
// the agent copies the files the render reads out of the commit, within its
// bounds, and the worker does the rest.
func (s *Source) renderNow(in renderInput) (r rendered, err error) {
	if s.beforeRender != nil {
		s.beforeRender(in.dir)
	}
	job := &renderJob{Dir: in.dir, Directory: in.sel, Helm: jobHelmOf(in.helm), Caps: in.caps, Opts: s.opts}
	job.setDecryption(in.dec)
	if in.pkg != nil {
		job.Package = in.pkg
		return runWorker(job, s.opts)
	}
	fs, err := s.tree(in.rev, in.dir)
	if err != nil {
		return rendered{}, err
	}
	job.Files, job.Dirs = fs.contents()
	return runWorker(job, s.opts)
}

// renderCopiedChart renders the chart at dir of the files a treeCopier copied:
// the one way both the agent and RenderDirectory render a chart.
func renderCopiedChart(fs *inMemoryFS, dir string, h Helm, c Capabilities, opts Options) (rendered, error) {
	caps, err := capabilitiesOf(c)
	if err != nil {
		return rendered{}, &RenderError{File: dir, Err: err}
	}
	r, err := renderChart(fs, path.Join("/", dir), h, caps, opts)
	if err != nil {
		return rendered{}, err
	}
	return rendered{objs: r.objs}, nil
}

// renderCopied renders dir of the files a treeCopier copied, within opts: the
// one way both the agent (a commit) and RenderDirectory (a directory on disk)
// render, so that they cannot disagree.
func renderCopied(fs *inMemoryFS, dir string, sel Directory, opts Options, dec *Decryption) ([]*unstructured.Unstructured, error) {
	return Render(fs, "/", path.Join("/", dir), RenderOptions{
		MaxObjects: opts.MaxObjects, MaxBytes: opts.MaxRenderedBytes,
		MaxYAMLNodesPerFile: opts.MaxYAMLNodesPerFile, MaxYAMLNodesPerRender: opts.MaxYAMLNodesPerRender,
		Decryption: dec, Directory: sel,
	})
}

// CleanPath checks a path inside the repository and returns it cleaned ("." for the
// root). Absolute paths and paths that climb out of the repository are refused.
func CleanPath(p string) (string, error) {
	if p == "" {
		return ".", nil
	}
	if path.IsAbs(p) {
		return "", &RenderError{File: p, Err: errors.New("path must be relative to the repository root")}
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", &RenderError{File: p, Err: errors.New("path leaves the repository")}
	}
	return clean, nil
}

// ownMetadata returns copies of objs whose top level and metadata maps are their
// own: setting a field of either (unstructured's SetX replace the maps they set,
// labels and annotations included) leaves objs as they were.
func ownMetadata(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		c := &unstructured.Unstructured{Object: maps.Clone(o.Object)}
		if m, ok := o.Object["metadata"].(map[string]any); ok {
			c.Object["metadata"] = maps.Clone(m)
		}
		out[i] = c
	}
	return out
}
