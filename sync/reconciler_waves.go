package sync

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/health"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// A revision with hooks or waves (plan.Run.Ordered) is applied in order, one step
// per phase and wave, across as many reconciles as its objects take to become
// Healthy: each reconcile validates the whole revision (the dry-run gate, hooks
// included), then walks the steps from the first, applying what differs and
// creating the hooks not created yet, and stops at the first step whose objects
// are not all Healthy (Jobs Complete), to be reconciled again when one of them
// changes. A hook's object is named for its run (plan.HookName), so that a hook
// runs once per revision however many reconciles and restarts the run takes.
// status.run says where the run is; status.hooks which hook objects exist.

// runRequeue bounds the wait for a step's objects: their status changes requeue the
// Sync at once (the Watcher follows them), this is the safety net.
const runRequeue = 15 * time.Second

// orderedRun is one reconcile's walk through the ordered run of a revision.
type orderedRun struct {
	r       *Reconciler
	st      *plan.Status
	run     *plan.Run
	checker *health.Checker
	obj     *v1alpha1.Sync
	id      Identity
	// prev is where the run stood after the reconcile before (lastRun).
	prev  *v1alpha1.RunStatus
	opts  apply.Options // of the inventory's objects
	hooks apply.Options // of hooks: no write-ahead inventory
	// gate holds the dry-run of every object and hook, by key.
	gate map[string]apply.Change
	// applied holds the inventory's objects written (or found unchanged) by this
	// reconcile, by key.
	applied map[string]apply.Change
	// ran holds the hook objects this reconcile looked at, for the Watcher.
	ran []apply.Change
	// pruned holds what the run pruned before its PostSync phase.
	pruned *apply.ChangeSet
}

// newOrderedRun prepares the ordered apply of run, or returns nil when the run is
// one set (no hooks, one wave) and is applied as before.
func (r *Reconciler) newOrderedRun(run *plan.Run, st *plan.Status, checker *health.Checker) *orderedRun {
	if !run.Ordered() || len(run.Steps) == 0 {
		return nil
	}
	return &orderedRun{r: r, st: st, run: run, checker: checker, gate: map[string]apply.Change{}, applied: map[string]apply.Change{}}
}

// ranAlready reports whether the run of this revision succeeded in an earlier
// reconcile: what is left to do (a prune waiting for a wave to go, drift) is
// converged as one set, and no hook runs again.
func (r *Reconciler) ranAlready(obj *v1alpha1.Sync, run *plan.Run) bool {
	prev := r.lastRun(obj)
	return prev != nil && prev.Revision == run.Revision && prev.State == v1alpha1.RunSucceeded
}

// rememberedRun is the status.run this agent last recorded for a Sync.
type rememberedRun struct {
	uid types.UID
	run v1alpha1.RunStatus
	// request is the request for a reconcile that reconcile answered.
	request string
}

// lastRun is where obj's run stood after this agent's last reconcile of it, or,
// when this agent has not run it (a restart, a new leader), as its status says.
// The cache may not have caught up with the last status write yet: a hook that
// failed and was deleted (HookFailed) must not run again on a stale read.
func (r *Reconciler) lastRun(obj *v1alpha1.Sync) *v1alpha1.RunStatus {
	if v, ok := r.state.runs.Load(client.ObjectKeyFromObject(obj)); ok && v.(rememberedRun).uid == obj.UID {
		run := v.(rememberedRun).run
		return &run
	}
	return obj.Status.Run
}

// rememberRun keeps the run st records, for lastRun.
func (r *Reconciler) rememberRun(obj *v1alpha1.Sync, st *plan.Status) {
	if run := st.Run(); run != nil {
		r.state.runs.Store(client.ObjectKeyFromObject(obj), rememberedRun{uid: obj.UID, run: *run, request: obj.GetAnnotations()[v1alpha1.ReconcileRequestedAnnotation]})
	}
}

// hookChanges are the hooks this reconcile created or looked at, for the Watcher.
func (o *orderedRun) hookChanges() *apply.ChangeSet {
	if o == nil {
		return nil
	}
	return &apply.ChangeSet{Changes: o.ran}
}

// converge walks the run as far as it can go in this reconcile. It returns the
// inventory's objects as far as they were applied (those of later waves Held),
// and a *plan.WaitingError while a step waits for its objects, a
// *plan.HeldError when a step failed.
func (o *orderedRun) converge(ctx context.Context, id Identity, obj *v1alpha1.Sync, snap *source.Snapshot) (*apply.ChangeSet, error) {
	o.id, o.obj, o.prev = id, obj, o.r.lastRun(obj)
	// Every path of this reconcile writes the run as it found it at its freshest,
	// or as it moved it on: a status read from a lagging cache must not set it
	// back (a failed run back to Running would skip its retry, or run it again).
	o.st.RunFrom(o.prev)
	defer o.r.rememberRun(obj, o.st)
	if err := o.stillFailed(); err != nil {
		return nil, err
	}
	o.opts = plan.ForApply(obj, o.run.Resources, o.r.Agent.ApplyOptions, o.r.state.fights.givenUp(obj))
	o.opts.BeforeWrite = o.r.recordAhead(obj)
	o.hooks = o.opts
	o.hooks.BeforeWrite, o.hooks.IgnoreFields = nil, nil
	plan.MarkHooks(o.run.Hooks, obj)
	o.r.prepareWatch(ctx, o.id, obj, &source.Snapshot{Objects: append(append([]*unstructured.Unstructured(nil), snap.Objects...), o.run.Hooks...)})
	if err := o.dryRun(ctx); err != nil {
		return o.changes(), err
	}
	if !o.started() && !o.differs() {
		// Nothing of the revision changes the cluster: no hook runs for it.
		return o.changes(), nil
	}
	if err := o.retryOrClearEarlier(ctx); err != nil {
		return o.changes(), err
	}
	for i, step := range o.run.Steps {
		if step.Phase == plan.PhasePostSync && i > 0 && o.run.Steps[i-1].Phase != plan.PhasePostSync {
			if err := o.pruneBeforePostSync(ctx, snap, o.run.Steps[i-1]); err != nil {
				return o.changes(), err
			}
		}
		if err := o.step(ctx, step); err != nil {
			return o.changes(), o.fail(ctx, step, err)
		}
	}
	return o.changes(), o.succeed(ctx)
}

// pruneBeforePostSync prunes what left git once the last wave is Healthy and
// before the PostSync hooks run, as Argo CD prunes in its Sync phase: a smoke test
// or a notification runs against the revision as a whole. The objects deleted must
// be gone before PostSync starts. A revision without PostSync hooks is pruned
// after its run, by Reconcile, in the same order.
func (o *orderedRun) pruneBeforePostSync(ctx context.Context, snap *source.Snapshot, last plan.Step) error {
	applied := o.changes()
	cs, err := o.r.pruneBefore(ctx, o.id, o.obj, o.st, snap, applied, o.st.Applied(applied), "the PostSync phase")
	o.pruned = joinChanges(o.pruned, cs)
	var waiting *plan.WaitingError
	if errors.As(err, &waiting) {
		o.st.RunAt(o.run.Revision, last.Phase, last.Wave, waiting.Msg)
	}
	return err
}

// prunedBefore is what the run pruned before its PostSync phase, for events.
func (o *orderedRun) prunedBefore() *apply.ChangeSet {
	if o == nil {
		return nil
	}
	return o.pruned
}

// joinChanges is the changes of a and b together; nil when both are.
func joinChanges(a, b *apply.ChangeSet) *apply.ChangeSet {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return &apply.ChangeSet{Changes: append(append([]apply.Change(nil), a.Changes...), b.Changes...)}
}

// stillFailed keeps a failed run failed until a new commit or a request for a
// reconcile: the same revision is not tried again at every interval.
func (o *orderedRun) stillFailed() error {
	prev := o.prev
	if prev == nil || prev.Revision != o.run.Revision || prev.State != v1alpha1.RunFailed || o.r.requested(o.obj) {
		return nil
	}
	return &plan.HeldError{Reason: prev.Reason, Msg: prev.Message}
}

// requested reports whether obj carries a request for a reconcile that neither
// its status nor this agent's last reconcile of it (on a cache that lags) answered.
func (r *Reconciler) requested(obj *v1alpha1.Sync) bool {
	at := obj.GetAnnotations()[v1alpha1.ReconcileRequestedAnnotation]
	if v, ok := r.state.runs.Load(client.ObjectKeyFromObject(obj)); ok && v.(rememberedRun).uid == obj.UID && v.(rememberedRun).request == at {
		return false
	}
	return at != "" && at != obj.Status.LastHandledReconcileAt
}

// started reports whether the run of this revision started in an earlier reconcile.
func (o *orderedRun) started() bool {
	prev := o.prev
	return prev != nil && prev.Revision == o.run.Revision && prev.State == v1alpha1.RunRunning
}

// dryRun is the gate: every object and hook of the revision is dry-run before any
// is written. A hook whose object of an earlier run cannot take the new one in
// place (an immutable field) passes: that object is deleted before the hook is
// created. So does an object whose kind a CRD of the same revision defines.
func (o *orderedRun) dryRun(ctx context.Context) error {
	opts := o.opts
	opts.DryRun, opts.BeforeWrite = true, nil
	objs := append(append([]*unstructured.Unstructured(nil), o.run.Resources...), o.run.Hooks...)
	cs, _ := o.id.Applier.ApplyAll(ctx, objs, opts)
	hooks := map[string]bool{}
	for _, h := range o.run.Hooks {
		hooks[apply.RefOf(h).Key()] = true
	}
	defined := definedKinds(o.run.Resources)
	var errs []*apply.ObjectError
	for _, c := range cs.Changes {
		o.gate[c.Object.Key()] = c
		if c.Err == nil || hooks[c.Object.Key()] && apply.IsImmutable(c.Err) || apimeta.IsNoMatchError(c.Err) && defined[c.Object.GroupVersionKind().GroupKind()] {
			continue
		}
		errs = append(errs, apply.ObjectErrors(c.Err)...)
	}
	if len(errs) > 0 {
		return &apply.ValidationError{Errs: errs}
	}
	return nil
}

// definedKinds are the kinds the CRDs among objs define.
func definedKinds(objs []*unstructured.Unstructured) map[schema.GroupKind]bool {
	out := map[schema.GroupKind]bool{}
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		out[schema.GroupKind{Group: group, Kind: kind}] = true
	}
	return out
}

// differs reports whether the gate found an object of the inventory that differs
// from the cluster or is missing, or whether the inventory holds an object that
// left git and will be pruned: a revision that only removes objects is applied
// with its hooks too, as Argo CD syncs an application that is OutOfSync by an
// object to prune. (With prune off, what left git stays, and runs no hook.)
func (o *orderedRun) differs() bool {
	inGit := make(map[string]bool, len(o.run.Resources))
	for _, res := range o.run.Resources {
		key := apply.RefOf(res).Key()
		if c := o.gate[key]; c.Action != apply.ActionUnchanged {
			return true
		}
		inGit[key] = true
	}
	if !o.obj.Spec.PruneEnabled() {
		return false
	}
	for _, r := range o.st.Inventory() {
		if !inGit[r.Key()] {
			return true
		}
	}
	return false
}

// changes are the inventory's objects as this reconcile left them: as applied,
// or, for the waves not reached, as the gate found them, held.
func (o *orderedRun) changes() *apply.ChangeSet {
	cs := &apply.ChangeSet{}
	for _, res := range o.run.Resources {
		key := apply.RefOf(res).Key()
		c, ok := o.applied[key]
		if !ok {
			c = o.gate[key]
			if c.Action != apply.ActionUnchanged {
				c.Action, c.Note, c.Err = apply.ActionHeld, "waits for its wave", nil
			}
		}
		cs.Changes = append(cs.Changes, c)
	}
	return cs
}

// step applies one phase and wave and tells whether its objects are all Healthy:
// nil when they are, a *plan.WaitingError while they are not, a *stepFailure when
// one failed.
func (o *orderedRun) step(ctx context.Context, s plan.Step) error {
	o.phaseStarts(s)
	o.st.RunAt(o.run.Revision, s.Phase, s.Wave, "applying")
	var looked []apply.Change
	if len(s.Resources) > 0 {
		cs, err := o.id.Applier.ApplyAll(ctx, s.Resources, o.opts)
		o.r.Observers.Metrics.CountChanges(o.obj, cs)
		for _, c := range cs.Changes {
			o.applied[c.Object.Key()] = c
		}
		if err != nil {
			return err
		}
		looked = append(looked, cs.Changes...)
	}
	hooks, err := o.runHooks(ctx, s.Phase, s.Hooks)
	if err != nil {
		return err
	}
	return o.settled(ctx, s, append(looked, hooks...), len(looked))
}

// phaseStarts records an Event when the run reaches a phase it had not reached
// in an earlier reconcile.
func (o *orderedRun) phaseStarts(s plan.Step) {
	prev := o.prev
	if prev != nil && prev.Revision == o.run.Revision && plan.Phase(prev.Phase).Rank() >= s.Phase.Rank() {
		return
	}
	o.r.Observers.Recorder.AnnotatedEventf(o.obj, map[string]string{"revision": o.run.Revision}, corev1.EventTypeNormal, v1alpha1.ReasonPhaseStarted,
		"%s phase of revision %s started", s.Phase, o.run.Revision)
}

// runHooks creates the hooks not created yet for this run and returns them as the
// cluster holds them. The object of an earlier run under the same name is deleted
// first, and waited for.
func (o *orderedRun) runHooks(ctx context.Context, phase plan.Phase, hooks []plan.Hook) ([]apply.Change, error) {
	if len(hooks) == 0 {
		return nil, nil
	}
	var earlier []v1alpha1.ObjectRef
	objs := make([]*unstructured.Unstructured, 0, len(hooks))
	for _, h := range hooks {
		if o.ofEarlierRun(h) {
			earlier = append(earlier, h.Ref())
		}
		objs = append(objs, h.Object)
	}
	if len(earlier) > 0 {
		if err := o.deleteHooks(ctx, earlier); err != nil {
			return nil, err
		}
		return nil, &plan.WaitingError{Reason: v1alpha1.ReasonProgressing, Msg: fmt.Sprintf("%s: waiting for the object of an earlier run of %s to be deleted", phase, earlier[0])}
	}
	cs, err := o.id.Applier.ApplyAll(ctx, objs, o.hooks)
	o.r.Observers.Metrics.CountHookRuns(o.obj, string(phase), cs.Count(apply.ActionCreated))
	byKey := make(map[string]plan.Hook, len(hooks))
	for _, h := range hooks {
		byKey[h.Ref().Key()] = h
	}
	var created []v1alpha1.HookStatus
	for _, c := range cs.Changes {
		if h, ok := byKey[c.Object.Key()]; ok && c.Live != nil {
			created = append(created, plan.HookStatusOf(h))
		}
	}
	o.st.HooksCreated(created)
	o.ran = append(o.ran, cs.Changes...)
	return cs.Changes, err
}

// ofEarlierRun reports whether the cluster holds an object of h's name that an
// earlier run created: the gate found it with another run's mark, or could not
// change it in place.
func (o *orderedRun) ofEarlierRun(h plan.Hook) bool {
	g := o.gate[h.Ref().Key()]
	if g.Err != nil {
		return apply.IsImmutable(g.Err)
	}
	if g.Live == nil {
		return false
	}
	live, err := g.Live.Decode()
	if err != nil {
		return false // never met (it was encoded from an answer): applied in place
	}
	return live.GetDeletionTimestamp() != nil || live.GetAnnotations()[plan.HookRunAnnotation] != h.Object.GetAnnotations()[plan.HookRunAnnotation]
}

// stepFailure is an object of a step that failed.
type stepFailure struct {
	object v1alpha1.ObjectRef
	hook   bool
	msg    string
}

func (e *stepFailure) Error() string { return fmt.Sprintf("%s failed: %s", e.object, e.msg) }

// settled judges the objects of a step: the first nResources are the inventory's,
// the rest hooks. Every one must be Healthy (a Suspended object of the
// inventory counts, as the user wants it so); a Degraded one fails the step.
func (o *orderedRun) settled(ctx context.Context, s plan.Step, changes []apply.Change, nResources int) error {
	var waiting []string
	var unsettled []v1alpha1.ObjectRef
	for i, c := range changes {
		res := o.r.healthOf(ctx, o.id, o.checker, c.Object.GroupVersionKind().GroupKind(), c.Live)
		switch {
		case res.Code == v1alpha1.HealthHealthy, res.Code == v1alpha1.HealthSuspended && i < nResources:
			continue
		case res.Code == v1alpha1.HealthDegraded:
			return &stepFailure{object: c.Object, hook: i >= nResources, msg: res.Message}
		}
		waiting = append(waiting, fmt.Sprintf("%s (%s)", c.Object, strings.TrimSpace(res.Message)))
		unsettled = append(unsettled, c.Object)
	}
	if len(waiting) == 0 {
		return nil
	}
	if w := o.r.watcherOf(o.id); w != nil {
		w.FollowStatus(client.ObjectKeyFromObject(o.obj), unsettled)
	}
	msg := fmt.Sprintf("%s wave %d: waiting for %s", s.Phase, s.Wave, strings.Join(waiting, ", "))
	o.st.RunAt(o.run.Revision, s.Phase, s.Wave, msg)
	return &plan.WaitingError{Reason: v1alpha1.ReasonProgressing, Msg: msg}
}

// fail ends the run at step s when one of its objects failed: the SyncFail hooks
// are created, the hooks whose policy is HookFailed deleted, and the run recorded
// as failed, which stalls the Sync until a new commit or a request. Any other
// error (waiting, a failed write) is returned as it is.
func (o *orderedRun) fail(ctx context.Context, s plan.Step, err error) error {
	var failed *stepFailure
	if !errors.As(err, &failed) {
		return err
	}
	reason := v1alpha1.ReasonWaveFailed
	if failed.hook {
		reason = v1alpha1.ReasonHookFailed
		o.r.Observers.Metrics.CountHookFailure(o.obj, string(s.Phase))
	}
	msg := fmt.Sprintf("revision %s stopped at %s wave %d: %s", o.run.Revision, s.Phase, s.Wave, failed.Error())
	for _, f := range o.run.SyncFail {
		o.phaseStarts(f)
		if _, err := o.runHooks(ctx, f.Phase, f.Hooks); err != nil {
			msg += fmt.Sprintf("; SyncFail hooks: %v", err)
		}
	}
	if err := o.deleteHooks(ctx, o.withPolicy(plan.HookFailed)); err != nil {
		msg += fmt.Sprintf("; deleting hooks: %v", err)
	}
	o.st.RunFailed(o.run.Revision, s.Phase, s.Wave, reason, msg)
	return &plan.HeldError{Reason: reason, Msg: msg}
}

// succeed ends a run whose every step is Healthy: the hooks whose policy is
// HookSucceeded are deleted.
func (o *orderedRun) succeed(ctx context.Context) error {
	if err := o.deleteHooks(ctx, o.withPolicy(plan.HookSucceeded)); err != nil {
		return err
	}
	o.st.RunSucceeded(o.run.Revision)
	return nil
}

// withPolicy lists the hooks of this run's phases (not SyncFail's) with policy p.
func (o *orderedRun) withPolicy(p plan.DeletePolicy) []v1alpha1.ObjectRef {
	var out []v1alpha1.ObjectRef
	for _, s := range o.run.Steps {
		for _, h := range s.Hooks {
			if h.Has(p) {
				out = append(out, h.Ref())
			}
		}
	}
	return out
}

// retryOrClearEarlier starts a run: a run of this revision that failed and is
// asked again (a request for a reconcile) starts afresh, once its hook objects
// are deleted; the hook objects of earlier revisions whose policy is
// BeforeHookCreation are deleted before this run creates its own (one under the
// same name is waited for by runHooks).
func (o *orderedRun) retryOrClearEarlier(ctx context.Context) error {
	if o.started() {
		return nil
	}
	first := o.run.Steps[0]
	o.st.RunAt(o.run.Revision, first.Phase, first.Wave, "starting")
	prefix := o.run.Revision + "/"
	retry := o.prev != nil && o.prev.Revision == o.run.Revision
	var stale []v1alpha1.ObjectRef
	for _, h := range o.st.Hooks() {
		if !strings.HasPrefix(h.Run, prefix) && slices.Contains(h.DeletePolicies, string(plan.BeforeHookCreation)) {
			stale = append(stale, h.ObjectRef)
		}
	}
	if retry {
		// The failed run's hook objects, found by the names the run gives them
		// (status.hooks may not list one created just before a crash).
		for _, h := range o.run.Hooks {
			stale = append(stale, apply.RefOf(h))
		}
	}
	if err := o.deleteHooks(ctx, stale); err != nil || !retry {
		return err
	}
	return &plan.WaitingError{Reason: v1alpha1.ReasonProgressing, Msg: fmt.Sprintf("retrying revision %s: waiting for %d hook objects of its failed run to be deleted", o.run.Revision, len(stale))}
}

// deleteHooks deletes hook objects of this run's Sync.
func (o *orderedRun) deleteHooks(ctx context.Context, refs []v1alpha1.ObjectRef) error {
	return o.r.pruneHooks(ctx, o.id, o.obj, o.st, refs)
}

// deleteHooksOf deletes the hook objects a Sync being deleted still has
// (status.hooks), whatever their delete policies and its deletion policy: a hook is
// part of a run, not of the state the Sync keeps.
func (r *Reconciler) deleteHooksOf(ctx context.Context, id Identity, obj *v1alpha1.Sync, st *plan.Status) error {
	var refs []v1alpha1.ObjectRef
	for _, h := range st.Hooks() {
		refs = append(refs, h.ObjectRef)
	}
	return r.pruneHooks(ctx, id, obj, st, refs)
}

// pruneHooks deletes hook objects obj created (never another's), and forgets
// those deleted or gone. One still terminating under the name its hook is about
// to take again is waited for through the gate (ofEarlierRun).
func (r *Reconciler) pruneHooks(ctx context.Context, id Identity, obj *v1alpha1.Sync, st *plan.Status, refs []v1alpha1.ObjectRef) error {
	if len(refs) == 0 {
		return nil
	}
	cs, err := id.Applier.Prune(ctx, refs, apply.PruneOptions{Owner: plan.Owner(obj), Concurrency: r.Agent.ApplyOptions.Concurrency})
	var gone []v1alpha1.ObjectRef
	for _, c := range cs.Changes {
		if c.Action == apply.ActionSkipped || c.Action == apply.ActionPruned {
			gone = append(gone, c.Object)
		}
	}
	st.HooksDeleted(gone)
	return err
}

// orderOf reads the order of snap's objects (plan.Order) and returns it with a
// snapshot that holds the inventory's objects alone: hooks and skipped objects are
// never applied as managed objects, drift-corrected or pruned.
func orderOf(snap *source.Snapshot) (*plan.Run, *source.Snapshot, error) {
	run, err := plan.Order(snap.Objects, snap.Revision.String())
	if err != nil {
		return nil, snap, err
	}
	if len(run.Resources) == len(snap.Objects) {
		return run, snap, nil
	}
	only := *snap
	only.Objects = run.Resources
	return run, &only, nil
}
