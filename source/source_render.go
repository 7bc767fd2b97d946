package source

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/gitcache"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/wall"
)

// Render renders dir (relative to the repository root) of a fetched revision;
// a dir holding a Chart.yaml renders as a Helm chart as helm says
// (render/helm.go), any other ignores helm. Results are cached by (URL, commit,
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
	key := renderKey(rev, clean, dec) + sel.Key()
	chart, err := s.holdsChart(rev, clean, key)
	if err != nil {
		return nil, err
	}
	in := renderInput{rev: rev, dir: clean, sel: sel, dec: dec, tenant: TenantOf(ctx)}
	if chart {
		key += "\x00helm:" + helm.Digest()
		in.helm = &helm
	}
	if err := s.renders.Failure(key); err != nil {
		return nil, err
	}
	r, ok := s.renders.Get(key)
	if !ok {
		if chart {
			if in.caps, err = render.ReadCapabilities(ctx, helm); err != nil {
				return nil, err
			}
		}
		if r, err = s.render(ctx, in, key); err != nil {
			return nil, err
		}
	}
	return &Snapshot{Revision: rev, Path: clean, Objects: r.ForCaller()}, nil
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

// renderKey is the cache key of a render of dir (clean) of rev with dec: the
// keys' digest keeps renders with other keys, or none, apart.
func renderKey(rev Revision, dir string, dec *Decryption) string {
	return rev.URL + "\x00" + rev.Commit + rev.Layer + "\x00" + dir + "\x00" + dec.Digest()
}

// ForgetKeys drops from the render cache every render made with the keys whose
// digest (Keys.Digest) is given: the Sync that held them is gone, or holds other
// keys now, and the plaintext they opened should not outlive them in memory. A
// Sync with the same keys renders again at its next reconcile.
func (s *Source) ForgetKeys(digest string) {
	if digest == "" {
		return
	}
	s.renders.ForgetIf(func(key string) bool { return strings.Contains(key, "\x00"+digest) })
}

// renderCall is one render running, which callers of the same key wait for.
type renderCall struct {
	done chan struct{}
	// Set before done is closed.
	r   wall.Rendered
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
func (s *Source) render(ctx context.Context, in renderInput, key string) (wall.Rendered, error) {
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
		return wall.Rendered{}, s.ended(ctx, dir)
	}
	select {
	case s.live <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), ErrRenderTimeout) {
			return wall.Rendered{}, &RenderError{File: dir, Reason: v1alpha1.ReasonRenderLimitExceeded, Err: fmt.Errorf("%w: not started after %s, waiting for %d renders given up on to finish", ErrRenderTimeout, s.opts.RenderTimeout, s.opts.MaxRendersGivenUp)}
		}
		return wall.Rendered{}, s.ended(ctx, dir)
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
			s.renders.Put(key, in.tenant, r)
		} else if lasting(err) {
			s.renders.PutError(key, in.tenant, err)
		}
		call.r, call.err = r, err
		s.renderMu.Lock()
		delete(s.inflight, key)
		s.renderMu.Unlock()
	}()
	return call, true
}

// await waits for call, or for ctx to end.
func (s *Source) await(ctx context.Context, call *renderCall, dir string) (wall.Rendered, error) {
	select {
	case <-call.done:
		return call.r, call.err
	case <-ctx.Done():
		return wall.Rendered{}, s.ended(ctx, dir)
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

// renderNow renders what in names, in a worker process (source/wall):
// the agent copies the files the render reads out of the commit, within its
// bounds, and the worker does the rest.
func (s *Source) renderNow(in renderInput) (r wall.Rendered, err error) {
	if s.beforeRender != nil {
		s.beforeRender(in.dir)
	}
	opts := s.opts.renderOptions()
	job := &wall.Job{Dir: in.dir, Directory: in.sel, Helm: wall.HelmJobOf(in.helm, in.caps), Opts: opts}
	job.SetDecryption(in.dec)
	if in.pkg != nil {
		job.Package = in.pkg
		return wall.Run(job, opts)
	}
	fs, err := s.tree(in.rev, in.dir)
	if err != nil {
		return wall.Rendered{}, err
	}
	job.Files, job.Dirs = fs.Contents()
	return wall.Run(job, opts)
}

// CleanPath checks a path inside the repository and returns it cleaned ("." for the
// root). Absolute paths and paths that climb out of the repository are refused
// (gitcache.CleanPath, which Glob and the tree copier use too).
func CleanPath(p string) (string, error) { return gitcache.CleanPath(p) }

// Overlay puts k on top of snap's objects behind the render wall, within the
// source's render limits (the function Overlay), k's components read from
// snap's revision as a render reads its path: within the same bounds, every
// kustomization root they reach copied. A packaged chart's snapshot has no
// repository to read components from.
func (s *Source) Overlay(snap *Snapshot, k *v1alpha1.Kustomize) (*Snapshot, error) {
	if k.IsEmpty() {
		return snap, nil
	}
	ov := &wall.OverlayJob{Kustomize: *k}
	if len(k.Components) > 0 {
		if snap.Revision.Package != "" || snap.Revision.Commit == "" {
			return nil, &RenderError{File: snap.Path, Err: fmt.Errorf("spec.kustomize.components: %s is a packaged chart, with no repository to read components from", snap.Path)}
		}
		for _, c := range k.Components {
			dir, err := CleanPath(path.Join(snap.Path, c))
			if err != nil {
				return nil, &RenderError{File: snap.Path, Err: fmt.Errorf("spec.kustomize.components: %q: %w", c, err)}
			}
			ov.Components = append(ov.Components, dir)
		}
		fs, err := s.tree(snap.Revision, ov.Components[0], ov.Components[1:]...)
		if err != nil {
			return nil, err
		}
		ov.Files, ov.Dirs = fs.Contents()
	}
	return wall.RunOverlay(snap, ov, s.opts.renderOptions())
}

// Substitute substitutes sub into snap's objects behind the render wall,
// within the source's render limits (the function Substitute).
func (s *Source) Substitute(snap *Snapshot, sub Substitution) (*Snapshot, error) {
	return Substitute(snap, sub, s.opts)
}
