package sync

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/health"
	"tether.dev/tether/source"
)

// Condition reasons.
const (
	ReasonSucceeded   = "Succeeded"
	ReasonProgressing = "Progressing"
	ReasonRetrying    = "RetryingAfterError"
	ReasonSuspended   = "Suspended"
)

// maxMessage bounds condition messages; a revision with many broken objects must not
// produce a status the API server rejects.
const maxMessage = 4096

// progressingRequeue is how soon a Sync whose objects are still rolling out is looked
// at again, so that its health follows the roll-out instead of lagging an interval.
const progressingRequeue = 10 * time.Second

// statusBuilder accumulates the status of one reconcile. It starts from the previous
// status, so what this reconcile did not look at is carried over unchanged.
type statusBuilder struct {
	gen    int64
	now    func() time.Time
	status v1alpha1.SyncStatus
	health map[apply.ObjectRef]objectHealth
	// leftGit are inventory entries that the newest render no longer declares:
	// candidates for pruning. inventorySize is the inventory's size before.
	leftGit       []apply.ObjectRef
	inventorySize int
	// skipReport is set when the Sync is gone after this reconcile (its finalizer
	// removed): there is no status to write and no series to keep.
	skipReport bool
}

type objectHealth struct {
	code v1alpha1.HealthStatusCode
	msg  string
}

func newStatusBuilder(obj *v1alpha1.Sync, now func() time.Time) *statusBuilder {
	return &statusBuilder{gen: obj.Generation, now: now, status: *obj.Status.DeepCopy(), health: map[apply.ObjectRef]objectHealth{}}
}

func (b *statusBuilder) set(condType string, status metav1.ConditionStatus, reason, msg string) {
	if len(msg) > maxMessage {
		msg = msg[:maxMessage-3] + "..."
	}
	apimeta.SetStatusCondition(&b.status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: msg, ObservedGeneration: b.gen,
	})
}

func (b *statusBuilder) remove(condType string) {
	apimeta.RemoveStatusCondition(&b.status.Conditions, condType)
}

func (b *statusBuilder) fetched(rev string) { b.status.SourceRevision = rev }

func (b *statusBuilder) rendered(rev string, objects int) {
	b.set(v1alpha1.SourceReadyCondition, metav1.ConditionTrue, ReasonSucceeded,
		fmt.Sprintf("Fetched revision %s: %d objects", rev, objects))
}

// sourceFailed records a git failure that is retried with backoff.
func (b *statusBuilder) sourceFailed(reason string, err error) {
	b.set(v1alpha1.SourceReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.retrying(reason, err)
}

// retrying records a transient failure: not ready, still working on it.
func (b *statusBuilder) retrying(reason string, err error) {
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, ReasonRetrying, err.Error())
	b.remove(v1alpha1.StalledCondition)
}

// stalled records a failure that only a change in git or in the Sync can fix.
func (b *statusBuilder) stalled(reason string, err error) {
	if source.IsRenderError(err) {
		b.set(v1alpha1.SourceReadyCondition, metav1.ConditionFalse, reason, err.Error())
	}
	b.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, reason, err.Error())
	b.set(v1alpha1.StalledCondition, metav1.ConditionTrue, reason, err.Error())
	b.remove(v1alpha1.ReconcilingCondition)
	b.status.Sync = v1alpha1.SyncStatusOutOfSync
}

func (b *statusBuilder) suspended() {
	b.set(v1alpha1.ReconcilingCondition, metav1.ConditionFalse, ReasonSuspended, "Reconciliation is suspended")
}

// applied records the inventory and the sync status from an apply's change set.
// Entries of the previous inventory that git no longer declares stay in it, out of
// sync, until they are pruned.
func (b *statusBuilder) applied(cs *apply.ChangeSet) {
	if cs == nil {
		return
	}
	resources := make([]v1alpha1.ResourceStatus, 0, len(cs.Changes))
	desired := map[string]bool{}
	for _, c := range cs.Changes {
		rs := v1alpha1.ResourceStatus{
			Group: c.Object.Group, Version: c.Object.Version, Kind: c.Object.Kind,
			Namespace: c.Object.Namespace, Name: c.Object.Name, Sync: v1alpha1.SyncStatusSynced,
		}
		switch {
		case c.Action == apply.ActionFailed:
			rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, c.Err.Error()
		case cs.DryRun && c.Action == apply.ActionCreated:
			rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, "missing from the cluster; selfHeal is off"
		case cs.DryRun && c.Action == apply.ActionConfigured:
			rs.Sync, rs.Message = v1alpha1.SyncStatusOutOfSync, "differs from git in "+strings.Join(c.Diff, ", ")+"; selfHeal is off"
		}
		rs.Message = joinNote(rs.Message, leftToOthers(c.Ignored))
		resources = append(resources, rs)
		desired[resourceKey(rs)] = true
	}
	b.inventorySize = len(b.status.Resources)
	for _, old := range b.status.Resources {
		if desired[resourceKey(old)] {
			continue
		}
		old.Sync, old.Health, old.Message = v1alpha1.SyncStatusOutOfSync, "", notInGit
		resources = append(resources, old)
		b.leftGit = append(b.leftGit, refOf(old))
	}
	b.setResources(resources)
}

// leftToOthers says which ignored fields of an object are left to another manager
// ("spec.replicas left to kube-controller-manager"), or "".
func leftToOthers(fields []apply.IgnoredField) string {
	var notes []string
	for _, f := range fields {
		if f.Manager != "" {
			notes = append(notes, f.String())
		}
	}
	return strings.Join(notes, ", ")
}

func joinNote(msg, note string) string {
	switch {
	case note == "":
		return msg
	case msg == "":
		return note
	}
	return msg + "; " + note
}

// notInGit is the message of inventory entries that left git, before a note says
// what became of them.
const notInGit = "not in git any more"

// leftGitNote says, on every entry that left git, why it is still there.
func (b *statusBuilder) leftGitNote(note string) {
	for i := range b.status.Resources {
		if r := &b.status.Resources[i]; r.Message == notInGit {
			r.Message = notInGit + "; " + note
		}
	}
}

// pruned drops what a prune deleted or found not to be Tether's from the inventory,
// and keeps what it failed to delete, with the error, to retry. With untilGone,
// deleted objects stay listed until a later pass finds them gone (a Sync being
// deleted waits for them).
func (b *statusBuilder) pruned(cs *apply.ChangeSet, untilGone bool) {
	if cs == nil {
		return
	}
	outcome := map[string]apply.Change{}
	for _, c := range cs.Changes {
		outcome[inventoryKey(c.Object.Group, c.Object.Kind, c.Object.Namespace, c.Object.Name)] = c
	}
	var kept []v1alpha1.ResourceStatus
	for _, r := range b.status.Resources {
		c, ok := outcome[resourceKey(r)]
		switch {
		case !ok:
		case c.Action == apply.ActionFailed:
			r.Message = notInGit + "; prune failed: " + c.Err.Error()
		case c.Action == apply.ActionPruned && untilGone:
			r.Message = "deleting"
			if c.Note != "" {
				r.Message += " (" + c.Note + ")"
			}
		default:
			continue
		}
		kept = append(kept, r)
	}
	b.setResources(kept)
}

// setResources sets the inventory, sorted for a stable status, and the sync status
// it implies.
func (b *statusBuilder) setResources(resources []v1alpha1.ResourceStatus) {
	sort.Slice(resources, func(i, j int) bool { return resourceKey(resources[i]) < resourceKey(resources[j]) })
	b.status.Resources = resources
	b.status.Sync = v1alpha1.SyncStatusSynced
	for _, r := range resources {
		if r.Sync != v1alpha1.SyncStatusSynced {
			b.status.Sync = v1alpha1.SyncStatusOutOfSync
		}
	}
}

func resourceKey(r v1alpha1.ResourceStatus) string {
	return inventoryKey(r.Group, r.Kind, r.Namespace, r.Name)
}

func (b *statusBuilder) objectHealth(ref apply.ObjectRef, code v1alpha1.HealthStatusCode, msg string) {
	b.health[ref] = objectHealth{code: code, msg: msg}
}

// aggregateHealth folds per-object health into the inventory, status.health and the
// Healthy condition.
func (b *statusBuilder) aggregateHealth() {
	codes := make([]v1alpha1.HealthStatusCode, 0, len(b.health))
	var unhealthy []string
	for i := range b.status.Resources {
		r := &b.status.Resources[i]
		h, ok := b.health[apply.ObjectRef{Group: r.Group, Version: r.Version, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}]
		if !ok {
			continue
		}
		r.Health = h.code
		if r.Message == "" {
			r.Message = h.msg
		}
		codes = append(codes, h.code)
		if h.code != v1alpha1.HealthHealthy {
			unhealthy = append(unhealthy, fmt.Sprintf("%s/%s: %s", r.Kind, r.Name, h.code))
		}
	}
	b.status.Health = health.Aggregate(codes...)
	if b.status.Health == v1alpha1.HealthHealthy {
		b.set(v1alpha1.HealthyCondition, metav1.ConditionTrue, ReasonSucceeded, "All managed objects are healthy")
		return
	}
	b.set(v1alpha1.HealthyCondition, metav1.ConditionFalse, string(b.status.Health), fmt.Sprintf("%d of %d objects not healthy: %v", len(unhealthy), len(codes), unhealthy))
}

// ready records a revision applied in full. lastAppliedTime moves only when the
// applied revision changes, so a converged resync writes no status at all.
func (b *statusBuilder) ready(rev string) {
	if b.status.LastAppliedRevision != rev || b.status.LastAppliedTime == nil {
		t := metav1.NewTime(b.now())
		b.status.LastAppliedTime = &t
	}
	b.status.LastAppliedRevision = rev
	msg := "Applied revision " + rev
	if b.status.Sync == v1alpha1.SyncStatusOutOfSync {
		msg += "; the cluster has drifted from it and selfHeal is off (see status.resources)"
	}
	b.set(v1alpha1.ReadyCondition, metav1.ConditionTrue, ReasonSucceeded, msg)
	b.remove(v1alpha1.StalledCondition)
	if b.status.Health == v1alpha1.HealthProgressing {
		b.set(v1alpha1.ReconcilingCondition, metav1.ConditionTrue, ReasonProgressing, "Waiting for objects to roll out")
		return
	}
	b.remove(v1alpha1.ReconcilingCondition)
}

// requeueAfter is when to look again after a successful reconcile.
func (b *statusBuilder) requeueAfter(interval time.Duration) time.Duration {
	if b.status.Health == v1alpha1.HealthProgressing && progressingRequeue < interval {
		return progressingRequeue
	}
	return interval
}

func (b *statusBuilder) build() v1alpha1.SyncStatus {
	b.status.ObservedGeneration = b.gen
	if b.status.Sync == "" {
		b.status.Sync = v1alpha1.SyncStatusUnknown
	}
	if b.status.Health == "" {
		b.status.Health = v1alpha1.HealthUnknown
	}
	return b.status
}

// patchStatus writes status when it differs from what obj holds. The patch carries
// obj's resourceVersion; on a conflict the Sync is re-read and the patch retried, so
// a concurrent writer is never overwritten blindly.
func patchStatus(ctx context.Context, c client.Client, obj *v1alpha1.Sync, status v1alpha1.SyncStatus) error {
	if equality.Semantic.DeepEqual(obj.Status, status) {
		return nil
	}
	key := client.ObjectKeyFromObject(obj)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		base := obj.DeepCopy()
		obj.Status = status
		err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(StatusFieldManager))
		if apierrors.IsConflict(err) {
			if gerr := c.Get(ctx, key, obj); gerr != nil {
				return gerr
			}
		}
		return err
	})
	return client.IgnoreNotFound(err)
}
