package sync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	gosync "sync"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// goodRevision is what a Sync last applied in full, as this agent fetched it: the
// revision, and the URL and path it was rendered from.
type goodRevision struct {
	UID  types.UID       `json:"uid"`
	URL  string          `json:"url"`
	Path string          `json:"path"`
	Rev  source.Revision `json:"revision"`
}

// goodRevisions holds each Sync's goodRevision in memory and, with a directory,
// in a file per Sync there, written when it changes, so that a restarted agent
// finds what it applied before. Only the agent writes the directory: a Sync's
// status, which others may write, never stands in for it.
type goodRevisions struct {
	dir string
	mem gosync.Map
}

func (g *goodRevisions) file(key types.NamespacedName) string {
	// Namespaces and names are DNS labels and subdomains: no separator, no "..".
	return filepath.Join(g.dir, key.Namespace+"_"+key.Name+".json")
}

// store records rev for key; a write to disk that fails costs only the healing
// after a restart, and is returned for the caller to log.
func (g *goodRevisions) store(key types.NamespacedName, rev goodRevision) error {
	if old, ok := g.mem.Load(key); ok && old.(goodRevision) == rev {
		return nil
	}
	g.mem.Store(key, rev)
	if g.dir == "" {
		return nil
	}
	data, err := json.Marshal(rev)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(g.dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(g.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // gone after the rename
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), g.file(key))
}

// load returns key's goodRevision, from memory or else from its file.
func (g *goodRevisions) load(key types.NamespacedName) (goodRevision, bool) {
	if v, ok := g.mem.Load(key); ok {
		return v.(goodRevision), true
	}
	if g.dir == "" {
		return goodRevision{}, false
	}
	data, err := os.ReadFile(g.file(key))
	if err != nil {
		return goodRevision{}, false
	}
	var rev goodRevision
	if json.Unmarshal(data, &rev) != nil || rev.UID == "" {
		return goodRevision{}, false
	}
	g.mem.LoadOrStore(key, rev)
	return rev, true
}

// forget drops key's goodRevision: its Sync is gone.
func (g *goodRevisions) forget(key types.NamespacedName) {
	g.mem.Delete(key)
	if g.dir != "" {
		_ = os.Remove(g.file(key))
	}
}

// rememberGood records that obj's cluster now holds snap's revision, fetched by this
// agent with obj's own credentials, so that it can be applied again while git
// cannot be asked.
func (r *Reconciler) rememberGood(ctx context.Context, obj *v1alpha1.Sync, snap *source.Snapshot) {
	err := r.state.good.store(client.ObjectKeyFromObject(obj), goodRevision{
		UID: obj.UID, URL: sourceURL(obj), Path: sourcePath(obj), Rev: snap.Revision,
	})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "keeping the applied revision on disk; after a restart, drift waits for git to answer once")
	}
}

// lastGood returns the revision obj last applied, rendered again from the git
// cache, when the fetch failed with fetchErr for a reason of git's (the host down
// or silent, the branch or repository gone, a rewritten history, credentials that
// no longer work) or the new revision does not render (a broken commit): the
// reconcile then corrects drift from it, prunes nothing, and reports fetchErr. It
// returns nil when the failure is the Sync's own (a spec that cannot work), when
// the Sync changed its URL or path since, and when this agent never fetched that
// revision for the Sync: a revision is only rendered from the shared cache for a
// Sync that fetched it with its own credentials, as the agent's own record says
// (goodRevisions; without Options.LastGoodDir a restarted agent waits for git to
// answer once).
func (r *Reconciler) lastGood(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, fetchErr error) *source.Snapshot {
	var fe *source.FetchError
	switch {
	case source.IsRenderError(fetchErr):
	case !errors.As(fetchErr, &fe):
		return nil
	case fe.Reason == source.ReasonHostBusy, fe.Reason == source.ReasonInvalidSemVer, fe.Reason == source.ReasonUnsupportedURL, fe.Reason == v1alpha1.ReasonForbidden:
		return nil
	}
	good, ok := r.state.good.load(client.ObjectKeyFromObject(obj))
	if !ok {
		return nil
	}
	if good.UID != obj.UID || good.URL != sourceURL(obj) || good.Path != sourcePath(obj) ||
		good.Rev.String() != obj.Status.LastAppliedRevision {
		return nil
	}
	snap, err := r.renderAgain(ctx, obj, id, dec, good.Rev, good.Path)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "rendering the last applied revision again; drift is corrected once git answers", "revision", good.Rev.String())
		return nil
	}
	return snap
}

// renderAgain renders a revision applied before, a chart with the Sync's
// current values (a packaged chart's revision, rev.Package, renders its
// package, path aside), spec.kustomize put on top, its spec.postBuild
// variables substituted. The render
// counts to the Sync's namespace in the render cache's fair shares, as its
// fetches do in the git cache's.
func (r *Reconciler) renderAgain(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, rev source.Revision, path string) (*source.Snapshot, error) {
	helm, err := r.helmFor(ctx, obj, id)
	if err != nil {
		return nil, err
	}
	ctx = source.WithTenant(ctx, obj.Namespace)
	var snap *source.Snapshot
	if rev.Package != "" {
		snap, err = r.Agent.Source.RenderChart(ctx, rev, helm)
	} else {
		snap, err = r.Agent.Source.RenderSelected(ctx, rev, path, source.DirectoryOf(obj.Spec.Source.Directory), helm, dec)
	}
	if err != nil {
		return nil, err
	}
	// The one call from the render path into spec.kustomize
	// (reconciler_kustomize.go), then into substitution
	// (reconciler_substitute.go): Flux's order.
	if snap, err = r.overlay(obj, snap); err != nil {
		return nil, err
	}
	return r.postBuild(ctx, obj, id, snap)
}

// sourcePath is what of sourceURL obj renders: a path of its git repository,
// or its chart's name.
func sourcePath(obj *v1alpha1.Sync) string {
	if c := obj.Spec.Source.Chart; c != nil {
		return c.Name
	}
	return obj.Spec.Source.PathOrDefault()
}

// checkHistory holds a commit that does not descend from the one the Sync applied
// through the same ref: a branch force-pushed to an older commit, or rewritten. Git
// says the ref moved, but applying it would prune what the newer history added, so
// the cluster stays at the applied revision until the Sync accepts the commit
// (v1alpha1.AcceptRevisionAnnotation) or the ref moves forward again. A history the
// cache cannot tell about (a lost cache) is let through, logged.
func (r *Reconciler) checkHistory(ctx context.Context, obj *v1alpha1.Sync, rev source.Revision) error {
	ref, applied, ok := parseRevision(obj.Status.LastAppliedRevision)
	if !ok || ref == "" || ref != rev.Ref || applied == rev.Commit {
		return nil
	}
	if accepted := obj.GetAnnotations()[v1alpha1.AcceptRevisionAnnotation]; accepted == rev.Commit {
		return nil
	}
	forward, err := r.Agent.Source.Descends(rev.URL, applied, rev.Commit)
	if err != nil {
		ctrl.LoggerFrom(ctx).Info("cannot tell whether the ref moved forward; applying it", "ref", ref, "from", applied, "to", rev.Commit, "cause", err.Error())
		return nil
	}
	if forward {
		return nil
	}
	return &source.FetchError{URL: rev.URL, Ref: ref, Reason: source.ReasonHistoryRewritten, Err: fmt.Errorf(
		"%s now names commit %s, which does not descend from the applied %s (a force-push or a rewritten history); "+
			"the cluster stays at %s and nothing is pruned. To apply %s, annotate the Sync %s=%s",
		ref, rev.Commit, applied, applied, rev.Commit, v1alpha1.AcceptRevisionAnnotation, rev.Commit)}
}

// parseRevision splits a revision as status writes it ("main@sha1:<hash>", or
// "sha1:<hash>" for a pinned commit) into its ref and commit.
func parseRevision(s string) (ref, commit string, ok bool) {
	i := strings.LastIndex(s, "sha1:")
	if i < 0 {
		return "", "", false
	}
	ref, commit = s[:i], s[i+len("sha1:"):]
	if ref != "" {
		var found bool
		if ref, found = strings.CutSuffix(ref, "@"); !found {
			return "", "", false
		}
	}
	if commit == "" {
		return "", "", false
	}
	return ref, commit, true
}
