package sync

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// Which revision a Sync applies when it does not apply its ref's newest: the
// commit a person pinned it to (tether.dev/pin-revision), or the last Healthy
// revision after the newest failed (spec.rollback.onFailure). Either is fetched
// by commit with the Sync's own credentials (from the git cache when it holds
// it) and goes through the same render, checks and dry-run gate as any other.

// rollbackRequeue is how soon a Sync whose revision was just found failed is
// reconciled again, to apply the revision it rolls back to.
const rollbackRequeue = 100 * time.Millisecond

// rollbackMemo is a rollback this agent decided, until the Sync's status says it
// (the cache may still hold the status from before the write).
type rollbackMemo struct {
	uid      types.UID
	rollback v1alpha1.RollbackStatus
}

// chooseRevision returns the snapshot to apply in place of head, the ref's
// newest: the pinned commit while the Sync is pinned, the revision rolled back to
// while its ref still names the commit that failed, else head itself. head is
// still what status.sourceRevision reports.
func (r *Reconciler) chooseRevision(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, st *plan.Status, head *source.Snapshot) (*source.Snapshot, error) {
	rb := r.activeRollback(obj)
	if rb != nil && (head.Revision.Commit != plan.CommitOf(rb.FailedRevision) || reconcileRequested(obj)) {
		// The ref moved on (or a person asked for the commit again): try it.
		r.state.rollbacks.Delete(keyOf(obj))
		st.RollbackCleared()
		rb = nil
	}
	if pin := obj.GetAnnotations()[v1alpha1.PinRevisionAnnotation]; pin != "" {
		if !plan.IsFullCommit(pin) {
			return nil, &RefusedError{Reason: v1alpha1.ReasonPinInvalid, Msg: fmt.Sprintf(
				"the annotation %s is %.80q, not a full commit hash; the cluster stays as it is", v1alpha1.PinRevisionAnnotation, pin)}
		}
		snap, err := r.renderCommit(ctx, obj, id, dec, head.Revision.Ref, pin)
		if err != nil {
			return nil, pinError(pin, err)
		}
		st.Pinned(snap.Revision.String(), head.Revision.String())
		return snap, nil
	}
	st.Unpinned()
	if rb == nil {
		return head, nil
	}
	st.KeepRollback(*rb)
	if snap, ok, err := r.renderByTag(ctx, obj, id, dec, rb.Revision); ok {
		return snap, err
	}
	return r.renderCommit(ctx, obj, id, dec, head.Revision.Ref, plan.CommitOf(rb.Revision))
}

// renderByTag renders the revision a rollback returns to through the tag it
// was applied through, when the Sync verifies tags (spec.source.verify's
// modes Tag and TagAndHEAD) and that tag still names its commit: the tag's
// signature vouches for it, as it did when it was applied, where the commit
// alone may carry none. Otherwise (the tag moved or is gone, its fetch failed)
// it reports false, and the commit is fetched and verified as a pinned one.
func (r *Reconciler) renderByTag(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, revision string) (*source.Snapshot, bool, error) {
	verify := obj.Spec.Source.Verify
	tag, commit, ok := parseRevision(revision)
	if verify == nil || verify.ModeOrDefault() == v1alpha1.VerifyHEAD || !ok || tag == "" {
		return nil, false, nil
	}
	req := plan.RequestOf(obj)
	req.Ref, req.MaxAge = v1alpha1.GitRef{Tag: tag}, maxAge(r.interval(obj))
	req, err := r.withAuth(ctx, obj, id, req)
	if err != nil {
		return nil, false, nil
	}
	rev, err := r.Agent.Source.Fetch(ctx, req)
	if err != nil || rev.Commit != commit {
		return nil, false, nil
	}
	snap, err := r.renderAgain(ctx, obj, id, dec, rev, obj.Spec.Source.PathOrDefault())
	return snap, true, err
}

// pinError makes a pinned commit the repository does not hold a Stalled Sync
// (the annotation must change); other failures are git's, retried as any fetch.
func pinError(pin string, err error) error {
	var fe *source.FetchError
	if errors.As(err, &fe) && fe.Reason == source.ReasonCommitNotFound {
		return &RefusedError{Reason: v1alpha1.ReasonPinInvalid, Msg: fmt.Sprintf(
			"the annotation %s names commit %s, which is on no branch of the repository: %v", v1alpha1.PinRevisionAnnotation, pin, err)}
	}
	return err
}

// renderCommit fetches commit of the Sync's repository, as the Sync's identity,
// and renders its path (decrypting with dec); the revision is written as reached through ref.
func (r *Reconciler) renderCommit(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, ref, commit string) (*source.Snapshot, error) {
	req := plan.RequestOf(obj)
	req.Ref, req.MaxAge = v1alpha1.GitRef{Commit: commit}, maxAge(r.interval(obj))
	req, err := r.withAuth(ctx, obj, id, req)
	if err != nil {
		return nil, err
	}
	rev, err := r.Agent.Source.Fetch(ctx, req)
	if err != nil {
		return nil, err
	}
	rev.Ref = ref
	return r.renderAgain(ctx, obj, id, dec, rev, obj.Spec.Source.PathOrDefault())
}

// activeRollback is the rollback in force for obj: its status's, or one this
// agent decided and the cached status does not show yet.
func (r *Reconciler) activeRollback(obj *v1alpha1.Sync) *v1alpha1.RollbackStatus {
	if obj.Status.Rollback != nil {
		return obj.Status.Rollback
	}
	if v, ok := r.state.rollbacks.Load(keyOf(obj)); ok && v.(rollbackMemo).uid == obj.UID {
		rb := v.(rollbackMemo).rollback
		return &rb
	}
	return nil
}

// checkRollback rolls back, after snap was applied in full and its health
// judged, when spec.rollback says the revision failed: the RolledBack condition,
// a Warning Event and a metric, and a reconcile at once to apply the last Healthy
// revision. A pinned Sync, and one applying a rollback already, are left alone:
// a rollback is never rolled back. It returns when to look again: sooner than
// requeue when the health timeout passes first.
func (r *Reconciler) checkRollback(obj *v1alpha1.Sync, st *plan.Status, requeue time.Duration) time.Duration {
	if obj.GetAnnotations()[v1alpha1.PinRevisionAnnotation] != "" || r.activeRollback(obj) != nil {
		return requeue
	}
	rb, wait := st.CheckRollback(obj.Spec.Rollback)
	if rb == nil {
		if wait > 0 && wait < requeue {
			return wait + time.Second
		}
		return requeue
	}
	st.RolledBack(*rb)
	r.state.rollbacks.Store(keyOf(obj), rollbackMemo{uid: obj.UID, rollback: v1alpha1.RollbackStatus{
		FailedRevision: rb.Failed.Revision, Revision: rb.To.Revision, Reason: rb.Reason,
	}})
	r.Observers.Metrics.CountRollback(obj, rb.Reason)
	r.Observers.Recorder.AnnotatedEventf(obj, map[string]string{"revision": rb.Failed.Revision}, corev1.EventTypeWarning,
		v1alpha1.ReasonRolledBack, "%s", truncateEvent(rb.Message()))
	return rollbackRequeue
}

func keyOf(obj *v1alpha1.Sync) types.NamespacedName { return client.ObjectKeyFromObject(obj) }

// truncateEvent bounds an Event's message to maxEventMessage.
func truncateEvent(msg string) string {
	if len(msg) > maxEventMessage {
		return msg[:maxEventMessage-3] + "..."
	}
	return msg
}
