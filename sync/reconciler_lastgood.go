package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// goodRevision is what a Sync last applied in full, as this process fetched it: the
// revision, and the URL and path it was rendered from.
type goodRevision struct {
	uid       types.UID
	url, path string
	rev       source.Revision
}

// rememberGood records that obj's cluster now holds snap's revision, fetched by this
// process with obj's own credentials, so that it can be applied again while git
// cannot be asked.
func (r *Reconciler) rememberGood(obj *v1alpha1.Sync, snap *source.Snapshot) {
	r.good.Store(client.ObjectKeyFromObject(obj), goodRevision{
		uid: obj.UID, url: obj.Spec.Source.URL, path: obj.Spec.Source.PathOrDefault(), rev: snap.Revision,
	})
}

// lastGood returns the revision obj last applied, rendered again from the git
// cache, when the fetch failed with fetchErr for a reason of git's (the host down
// or silent, the branch or repository gone, a rewritten history, credentials that
// no longer work) or the new revision does not render (a broken commit): the
// reconcile then corrects drift from it, prunes nothing, and reports fetchErr. It
// returns nil when the failure is the Sync's own (a spec that
// cannot work), when the Sync changed its URL or path since, and when this process
// never fetched that revision for the Sync: a revision is only rendered from the
// shared cache for a Sync that fetched it with its own credentials (after a
// restart, that waits for git to answer once).
func (r *Reconciler) lastGood(ctx context.Context, obj *v1alpha1.Sync, fetchErr error) *source.Snapshot {
	var fe *source.FetchError
	switch {
	case source.IsRenderError(fetchErr):
	case !errors.As(fetchErr, &fe):
		return nil
	case fe.Reason == source.ReasonHostBusy, fe.Reason == source.ReasonInvalidSemVer, fe.Reason == source.ReasonUnsupportedURL, fe.Reason == v1alpha1.ReasonForbidden:
		return nil
	}
	v, ok := r.good.Load(client.ObjectKeyFromObject(obj))
	if !ok {
		return nil
	}
	good := v.(goodRevision)
	if good.uid != obj.UID || good.url != obj.Spec.Source.URL || good.path != obj.Spec.Source.PathOrDefault() ||
		good.rev.String() != obj.Status.LastAppliedRevision {
		return nil
	}
	snap, err := r.Source.Render(ctx, good.rev, good.path)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "rendering the last applied revision again; drift is corrected once git answers", "revision", good.rev.String())
		return nil
	}
	return snap
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
	forward, err := r.Source.Descends(rev.URL, applied, rev.Commit)
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
