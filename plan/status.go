package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/health"
	"tether.dev/tether/source/result"
)

// maxMessage bounds condition messages; a revision with many broken objects must not
// produce a status the API server rejects.
const maxMessage = 4096

// progressingRequeue is how soon a Sync whose objects are still rolling out is looked
// at again, so that its health follows the roll-out instead of lagging an interval.
const progressingRequeue = 10 * time.Second

// Status accumulates the status of one reconcile. It starts from the previous
// status, so what this reconcile did not look at is carried over unchanged.
type Status struct {
	gen    int64
	now    func() time.Time
	status v1alpha1.SyncStatus
	health map[v1alpha1.ObjectRef]objectHealth
	// objects is the whole inventory with per-object detail, once this reconcile
	// has looked at it (applied, pruned, rebuilt); build compacts it into
	// status.objects, status.resources and status.summary. Nil carries the
	// previous inventory over as it was.
	objects []v1alpha1.ResourceStatus
	// unwritten are the keys of objects this reconcile looked at but never
	// wrote (a revision refused at validation) and the inventory did not name:
	// they are shown, not recorded, so that nothing is pruned, or counted
	// against a prune limit, that was never applied.
	unwritten map[string]bool
	// failure is what kept this reconcile from applying the revision, when it is
	// not returned to the queue (git unreachable, bad input): it is still logged.
	failure error
	// skipReport is set when the Sync is gone after this reconcile (its finalizer
	// removed): there is no status to write and no series to keep.
	skipReport bool
	// requestWait is how soon to reconcile again for a request for a reconcile
	// this one could not answer (see RequestWaits); zero when none waits.
	requestWait time.Duration
}

type objectHealth struct {
	code v1alpha1.HealthStatusCode
	msg  string
}

// NewStatus starts the status of a reconcile of obj. The reconcile answers
// the request for a reconcile that obj carries (status.lastHandledReconcileAt),
// whatever its outcome: the status it writes is the answer.
func NewStatus(obj *v1alpha1.Sync, now func() time.Time) *Status {
	b := &Status{gen: obj.Generation, now: now, status: *obj.Status.DeepCopy()}
	b.status.Cluster = obj.Spec.Destination.ClusterName()
	if requested := obj.GetAnnotations()[v1alpha1.ReconcileRequestedAnnotation]; requested != "" {
		b.status.LastHandledReconcileAt = requested
	}
	return b
}

func (b *Status) set(condType string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage-3] + "..."
	}
	apimeta.SetStatusCondition(&b.status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: b.gen,
	})
}

func (b *Status) remove(condType string) {
	if apimeta.FindStatusCondition(b.status.Conditions, condType) == nil {
		return // RemoveStatusCondition would copy the conditions all the same
	}
	apimeta.RemoveStatusCondition(&b.status.Conditions, condType)
}

// Fetched records the revision git resolved to.
func (b *Status) Fetched(rev string) { b.status.SourceRevision = rev }

// Rendered records a revision fetched and rendered to objects: the source is ready.
func (b *Status) Rendered(rev string, objects int) {
	b.set(v1alpha1.SourceReadyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("Fetched revision %s: %d objects", rev, objects))
}

// SourceFailed records a git failure, which is retried at the interval.
func (b *Status) SourceFailed(reason string, err error) {
	b.set(v1alpha1.SourceReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.Retrying(reason, err)
}

// Retrying records a transient failure: not ready, still working on it.
func (b *Status) Retrying(reason string, err error) {
	b.failure = err
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ReasonRetrying, err.Error())
	b.remove(v1alpha1.StalledCondition)
}

// Stalled records a failure that only a change in git or in the Sync can fix.
func (b *Status) Stalled(reason string, err error) {
	b.failure = err
	if result.IsRenderError(err) {
		b.set(v1alpha1.SourceReadyCondition, metav1.ConditionFalse, reason, err.Error())
	}
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.set(v1alpha1.StalledCondition, metav1.ConditionTrue, reason, err.Error())
	b.remove(v1alpha1.ReconcilingCondition)
	b.status.Sync = v1alpha1.SyncStatusOutOfSync
}

// suspendedMessage is what every view of a suspended Sync says of it.
const suspendedMessage = "Reconciliation is suspended: the cluster is neither compared with git nor corrected until the Sync is resumed"

// Suspended records that the Sync is suspended, the same way in every view: Ready
// Unknown (nothing is compared, so nothing is known to be ready), sync Unknown for
// the Sync and each object (a change made in the cluster meanwhile is not seen),
// health as last judged.
func (b *Status) Suspended() {
	b.set(v1alpha1.ReadyCondition, metav1.ConditionUnknown, v1alpha1.ReasonSuspended, suspendedMessage)
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionFalse, v1alpha1.ReasonSuspended, suspendedMessage)
	b.status.Sync = v1alpha1.SyncStatusUnknown
	for i := range b.status.Resources {
		b.status.Resources[i].Sync = v1alpha1.SyncStatusUnknown
	}
}

// ObjectHealth records the health of one object, for AggregateHealth.
func (b *Status) ObjectHealth(ref v1alpha1.ObjectRef, code v1alpha1.HealthStatusCode, msg string) {
	if len(b.health) == 0 { // sized once for the inventory rather than grown
		b.health = make(map[v1alpha1.ObjectRef]objectHealth, len(b.objects))
	}
	b.health[ref] = objectHealth{code: code, msg: msg}
}

// maxUnhealthyNamed bounds how many objects the Healthy condition names.
const maxUnhealthyNamed = 5

// AggregateHealth folds per-object health into the inventory, status.health and the
// Healthy condition, whose message names the worst objects and why.
func (b *Status) AggregateHealth() {
	codes := make([]v1alpha1.HealthStatusCode, 0, len(b.health))
	var unhealthy []v1alpha1.ResourceStatus
	for i := range b.objects {
		r := &b.objects[i]
		h, ok := b.health[r.ObjectRef]
		if !ok {
			continue
		}
		r.Health = h.code
		if r.Message == "" {
			r.Message = h.msg
		}
		codes = append(codes, h.code)
		if h.code != v1alpha1.HealthHealthy {
			unhealthy = append(unhealthy, v1alpha1.ResourceStatus{ObjectRef: v1alpha1.ObjectRef{Kind: r.Kind, Name: r.Name}, Health: h.code, Message: h.msg})
		}
	}
	b.status.Health = health.Aggregate(codes...)
	if b.status.Health == v1alpha1.HealthHealthy {
		b.set(v1alpha1.HealthyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "All managed objects are healthy")
		return
	}
	b.set(v1alpha1.HealthyCondition, metav1.ConditionFalse, HealthReason(b.status.Health), unhealthyMessage(unhealthy, len(codes)))
}

// unhealthyMessage names the worst of the objects that are not healthy, and why.
func unhealthyMessage(unhealthy []v1alpha1.ResourceStatus, total int) string {
	slices.SortStableFunc(unhealthy, func(a, b v1alpha1.ResourceStatus) int {
		return cmp.Compare(health.Severity(b.Health), health.Severity(a.Health))
	})
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d of %d objects not healthy", len(unhealthy), total)
	for i, r := range unhealthy {
		if i == maxUnhealthyNamed {
			fmt.Fprintf(&sb, "; and %d more", len(unhealthy)-i)
			break
		}
		fmt.Fprintf(&sb, "; %s/%s %s", r.Kind, r.Name, r.Health)
		if r.Message != "" {
			sb.WriteString(": " + r.Message)
		}
	}
	return sb.String()
}

// HealthReason is the reason of the Healthy condition and of the Event recorded
// when a Sync's health turns code.
func HealthReason(code v1alpha1.HealthStatusCode) string {
	switch code {
	case v1alpha1.HealthHealthy:
		return v1alpha1.ReasonHealthy
	case v1alpha1.HealthProgressing:
		return v1alpha1.ReasonProgressing
	case v1alpha1.HealthSuspended:
		return v1alpha1.ReasonSuspended
	case v1alpha1.HealthDegraded:
		return v1alpha1.ReasonDegraded
	case v1alpha1.HealthMissing:
		return v1alpha1.ReasonMissing
	}
	return v1alpha1.ReasonHealthUnknown
}

// Ready records a revision applied in full. lastAppliedTime moves only when the
// applied revision changes, so a converged resync writes no status at all. With
// wait (spec.wait), Ready also waits for the objects' health.
func (b *Status) Ready(rev string, wait bool) {
	if b.status.LastAppliedRevision != rev || b.status.LastAppliedTime == nil {
		t := metav1.NewTime(b.now())
		b.status.LastAppliedTime = &t
	}
	b.status.LastAppliedRevision = rev
	msg := "Applied revision " + rev
	if b.status.Sync == v1alpha1.SyncStatusOutOfSync {
		msg += "; the cluster has drifted from it and selfHeal is off (see status.resources)"
	}
	b.set(v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, msg)
	if wait {
		b.waitForHealth(msg)
	}
	b.remove(v1alpha1.StalledCondition)
	if b.status.Health == v1alpha1.HealthProgressing {
		b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ReasonProgressing, "Waiting for objects to roll out")
		return
	}
	b.remove(v1alpha1.ReconcilingCondition)
}

// SignedBy records who signed the revision Ready records, as the revision's
// verification named them ("" when spec.source.verify is not set).
func (b *Status) SignedBy(signer string) {
	b.status.LastAppliedSigner = signer
}

// waitForHealth holds Ready back while the applied objects are not healthy:
// Unknown while they roll out (or are missing), False when one is Degraded, each
// with the Healthy condition's account of which objects and why. Suspended objects
// (a paused Deployment) are as the user wants them, and an Unknown health (no
// reader can tell) would otherwise hold Ready forever: both count as ready.
func (b *Status) waitForHealth(applied string) {
	why := ""
	if c := apimeta.FindStatusCondition(b.status.Conditions, v1alpha1.HealthyCondition); c != nil {
		why = ": " + c.Message
	}
	switch b.status.Health {
	case v1alpha1.HealthProgressing, v1alpha1.HealthMissing:
		b.set(v1alpha1.ReadyCondition, metav1.ConditionUnknown, HealthReason(b.status.Health), applied+"; waiting for its objects to be healthy"+why)
	case v1alpha1.HealthDegraded:
		b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonDegraded, applied+"; its objects are not healthy"+why)
	}
}

// RequeueAfter is when to look again after a successful reconcile.
func (b *Status) RequeueAfter(interval time.Duration) time.Duration {
	if b.status.Health == v1alpha1.HealthProgressing && progressingRequeue < interval {
		return progressingRequeue
	}
	return interval
}

// RequestWaits leaves obj's request for a reconcile unanswered: git may not be
// asked for it before wait (the repository's minimum interval, see
// sync's requestSpacing), and the reconcile after wait answers it.
func (b *Status) RequestWaits(obj *v1alpha1.Sync, wait time.Duration) {
	b.status.LastHandledReconcileAt = obj.Status.LastHandledReconcileAt
	b.requestWait = wait
}

// Build returns the status this reconcile built, with the inventory compacted.
func (b *Status) Build() v1alpha1.SyncStatus {
	b.status.ObservedGeneration = b.gen
	if b.objects != nil {
		b.compact()
	}
	if b.status.Sync == "" {
		b.status.Sync = v1alpha1.SyncStatusUnknown
	}
	if b.status.Health == "" {
		b.status.Health = v1alpha1.HealthUnknown
	}
	return b.status
}

// Failure is what kept this reconcile from applying the revision when it was not
// returned to the queue (git unreachable, bad input), for the log; nil otherwise.
func (b *Status) Failure() error { return b.failure }

// RequestWait is how soon to reconcile again for a request for a reconcile this
// one left waiting (RequestWaits); zero when none waits.
func (b *Status) RequestWait() time.Duration { return b.requestWait }

// Gone records that the Sync is gone after this reconcile (its finalizer removed):
// there is no status to write and no series to keep.
func (b *Status) Gone() { b.skipReport = true }

// IsGone tells whether Gone was recorded.
func (b *Status) IsGone() bool { return b.skipReport }

// FieldConflicts sets the FieldConflict condition and status.fieldsGivenUp from
// the fields given up (msgs say why, one per field).
func (b *Status) FieldConflicts(msgs []string, fields []v1alpha1.GivenUpField) {
	b.status.FieldsGivenUp = fields
	if len(msgs) == 0 {
		b.remove(v1alpha1.FieldConflictCondition)
		return
	}
	b.set(v1alpha1.FieldConflictCondition, metav1.ConditionTrue, v1alpha1.ReasonFieldFight, strings.Join(msgs, "\n"))
}

// DeletionBlocked records that a Sync being deleted could not delete its objects:
// retried with backoff.
func (b *Status) DeletionBlocked(err error) {
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonDeletionBlocked, "Deletion is blocked: "+err.Error())
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ReasonDeletionBlocked, "Retrying with backoff")
}

// WaitingForDeletion records that a Sync being deleted waits for the objects still
// in its inventory to be gone, and names them.
func (b *Status) WaitingForDeletion() {
	names := make([]string, 0, len(b.objects))
	for _, res := range b.objects {
		names = append(names, res.String())
	}
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonDeleting,
		fmt.Sprintf("Waiting for %d objects to be deleted: %s", len(names), strings.Join(names, ", ")))
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, v1alpha1.ReasonDeleting, "Deleting the objects of this Sync")
}

// HooksSkipped records the objects of the revision that are not applied at all
// (Run.Skipped: Argo CD's Skip hooks, Helm's test, rollback and delete hooks):
// SourceReady's message names them.
func (b *Status) HooksSkipped(refs []v1alpha1.ObjectRef) {
	if len(refs) == 0 {
		return
	}
	c := apimeta.FindStatusCondition(b.status.Conditions, v1alpha1.SourceReadyCondition)
	if c == nil {
		return
	}
	names := make([]string, len(refs))
	for i, r := range refs {
		names[i] = r.String()
	}
	note := "; hooks skipped (not applied): " + strings.Join(names, ", ")
	if strings.HasSuffix(c.Message, note) {
		return
	}
	b.set(c.Type, c.Status, c.Reason, c.Message+note)
}
