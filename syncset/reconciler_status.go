package syncset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
	"tether.dev/tether/source"
)

// status accumulates one reconcile's outcome over the SyncSet's previous status.
type status struct {
	st    v1alpha1.SyncSetStatus
	gen   int64
	ready map[string]bool // live Syncs by name: Ready or not
}

func newStatus(ss *v1alpha1.SyncSet, live []v1alpha1.Sync) *status {
	s := &status{st: *ss.Status.DeepCopy(), gen: ss.Generation, ready: make(map[string]bool, len(live))}
	for i := range live {
		s.ready[live[i].Name] = readyOf(&live[i]) == metav1.ConditionTrue
	}
	s.st.Syncs, s.st.ReadySyncs = len(live), 0
	for _, r := range s.ready {
		if r {
			s.st.ReadySyncs++
		}
	}
	return s
}

func (s *status) set(typ string, st metav1.ConditionStatus, reason, msg string) {
	apimeta.SetStatusCondition(&s.st.Conditions, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg, ObservedGeneration: s.gen})
}

func (s *status) suspended() {
	s.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonSuspended, "spec.suspend is true: no Sync is made, changed or deleted")
	apimeta.RemoveStatusCondition(&s.st.Conditions, v1alpha1.StalledCondition)
	s.st.ObservedGeneration = s.gen
}

// read records the commits the git generators read.
func (s *status) read(listings map[string]fleet.Listing) {
	seen := map[string]bool{}
	s.st.Revisions = nil
	for _, l := range listings {
		if l.Revision != "" && !seen[l.Revision] {
			seen[l.Revision] = true
			s.st.Revisions = append(s.st.Revisions, l.Revision)
		}
	}
	sort.Strings(s.st.Revisions)
}

// changes records what the reconcile makes of the SyncSet's Syncs: how many it
// has once the changes are written and how many of them are Ready, and whether
// deletions are held.
func (s *status) changes(desired []*v1alpha1.Sync, ch fleet.Changes) {
	s.st.Syncs = len(desired) + len(ch.Kept)
	s.st.ReadySyncs = 0
	for _, d := range desired {
		if s.ready[d.Name] {
			s.st.ReadySyncs++
		}
	}
	for _, k := range ch.Kept {
		if s.ready[k.Name] {
			s.st.ReadySyncs++
		}
	}
	if ch.Held != "" {
		s.set(v1alpha1.DeletionsHeldCondition, metav1.ConditionTrue, v1alpha1.ReasonDeletionsHeld, ch.Held)
	} else {
		apimeta.RemoveStatusCondition(&s.st.Conditions, v1alpha1.DeletionsHeldCondition)
	}
	s.set(v1alpha1.ReadyCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded,
		fmt.Sprintf("%d Syncs generated, %d Ready", s.st.Syncs, s.st.ReadySyncs))
	apimeta.RemoveStatusCondition(&s.st.Conditions, v1alpha1.StalledCondition)
	s.st.ObservedGeneration = s.gen
}

// rollout records where a rolling sync stands.
func (s *status) rollout(ro fleet.Rollout, targets map[string]string) {
	rev := ""
	for _, t := range targets {
		if rev == "" || t < rev {
			rev = t // one repository in the usual case; the smallest, stably, otherwise
		}
	}
	s.st.Rollout = &v1alpha1.RolloutStatus{Revision: rev, Step: ro.Step, Steps: ro.Steps}
	switch {
	case ro.RolledBack:
		s.set(v1alpha1.RolloutCondition, metav1.ConditionFalse, v1alpha1.ReasonRolloutRolledBack, ro.Message)
	case ro.Halted != "":
		s.set(v1alpha1.RolloutCondition, metav1.ConditionFalse, v1alpha1.ReasonRolloutHalted, ro.Message)
	case ro.Done():
		s.set(v1alpha1.RolloutCondition, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, ro.Message)
	default:
		s.set(v1alpha1.RolloutCondition, metav1.ConditionUnknown, v1alpha1.ReasonRolloutProgressing, ro.Message)
	}
}

// failed records an error: bad input stalls the SyncSet with the reason it
// carries, anything else is being retried.
func (s *status) failed(err error) {
	var fe *fleet.Error
	var re *source.RenderError
	var fetch *source.FetchError
	switch {
	case errors.As(err, &fe):
		s.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, fe.Reason, err.Error())
		s.set(v1alpha1.StalledCondition, metav1.ConditionTrue, fe.Reason, err.Error())
	case errors.As(err, &re):
		s.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonGenerateFailed, err.Error())
		s.set(v1alpha1.StalledCondition, metav1.ConditionTrue, v1alpha1.ReasonGenerateFailed, err.Error())
	case errors.As(err, &fetch):
		s.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, fetch.Reason, err.Error())
	default:
		s.set(v1alpha1.ReadyCondition, metav1.ConditionFalse, v1alpha1.ReasonRetrying, err.Error())
	}
	s.st.ObservedGeneration = s.gen
}

// statusGrace is how long a status write may outlive a cancelled reconcile.
const statusGrace = 5 * time.Second

// writeStatus patches the SyncSet's status when it changed, once per reconcile.
func (r *Reconciler) writeStatus(ctx context.Context, ss *v1alpha1.SyncSet, s *status) error {
	if equality.Semantic.DeepEqual(ss.Status, s.st) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusGrace)
	defer cancel()
	patched := ss.DeepCopy()
	patched.Status = s.st
	err := r.Client.Status().Patch(ctx, patched, client.MergeFrom(ss), client.FieldOwner(fieldManager))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("writing the status of SyncSet %s/%s: %w", ss.Namespace, ss.Name, err)
	}
	return nil
}

// fieldManager names the controller's writes of Syncs and SyncSet statuses.
const fieldManager = "tether-syncset"
