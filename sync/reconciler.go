package sync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/health"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// Source is what the reconciler needs of git: a ref resolved to a revision, and a
// revision's path rendered to objects.
type Source interface {
	Fetch(ctx context.Context, req source.Request) (source.Revision, error)
	// RenderDecrypted renders path of rev: a chart there as helm says, the SOPS
	// files it reads decrypted with dec (nil: none).
	RenderDecrypted(ctx context.Context, rev source.Revision, path string, helm source.Helm, dec *source.Decryption) (*source.Snapshot, error)
	// RenderSelected is RenderDecrypted reading only the files of a plain
	// path that spec.source.directory selects.
	RenderSelected(ctx context.Context, rev source.Revision, path string, sel source.Directory, helm source.Helm, dec *source.Decryption) (*source.Snapshot, error)
	// Descends reports whether commit to has commit from in its history, from the
	// cache alone (source.ErrHistoryUnknown when it cannot tell).
	Descends(url, from, to string) (bool, error)
	// Refresh forgets what is known of url's refs, for every caller: a request
	// for a reconcile that may force a listing makes every Sync of the
	// repository ask again.
	Refresh(url string)
	// Summary is a cached commit's subject and author's name, made safe to
	// show, for the history.
	Summary(url, commit string) (source.CommitSummary, error)
	// ForgetKeys drops the renders made with the decryption keys of a digest
	// (source.Keys.Digest): a Sync that held them is gone or rotated them.
	ForgetKeys(digest string)
	// FetchChart resolves a packaged chart's version range against its
	// repository's index and downloads the package.
	FetchChart(ctx context.Context, req source.ChartRequest) (source.Revision, error)
	// RenderChart renders a packaged chart FetchChart returned, as helm says.
	RenderChart(ctx context.Context, rev source.Revision, helm source.Helm) (*source.Snapshot, error)
	// FetchArtifact resolves an OCI artifact's tag, range or digest, checks
	// its signature when asked and unpacks it; RenderSelected renders it.
	FetchArtifact(ctx context.Context, req source.ArtifactRequest) (source.Revision, error)
	// Substitute substitutes spec.postBuild's variables into a snapshot's
	// objects behind the render wall, as a render runs.
	Substitute(snap *source.Snapshot, sub source.Substitution) (*source.Snapshot, error)
	// Overlay puts spec.kustomize on top of a snapshot's objects behind the
	// render wall, as a render runs.
	Overlay(snap *source.Snapshot, k *v1alpha1.Kustomize) (*source.Snapshot, error)
}

// Applier makes the cluster hold a set of objects, and removes or releases what
// it applied before.
type Applier interface {
	ApplyAll(ctx context.Context, objs []*unstructured.Unstructured, opts apply.Options) (*apply.ChangeSet, error)
	Prune(ctx context.Context, refs []v1alpha1.ObjectRef, opts apply.PruneOptions) (*apply.ChangeSet, error)
	Orphan(ctx context.Context, refs []v1alpha1.ObjectRef, opts apply.PruneOptions) (*apply.ChangeSet, error)
}

// Finder finds the objects a Sync applied by their label, to rebuild a lost
// inventory.
type Finder interface {
	FindOwned(ctx context.Context, opts apply.FindOptions) ([]v1alpha1.ObjectRef, error)
}

var (
	_ Source  = (*source.Source)(nil)
	_ Applier = (*apply.Manager)(nil)
	_ Finder  = (*apply.Manager)(nil)
)

// StatusFieldManager owns the status of Syncs. It differs from the field manager of
// applied objects so that the two kinds of write never share ownership.
const StatusFieldManager = "tether-status"

// Reconciler reconciles Sync objects. NewReconciler wires one over a manager, for
// the agent and for every test alike; its Cluster readers and the Secret watch are
// the manager's, the rest are the Parts it is given. Its collaborators are grouped
// by role: how it reads the cluster, what the agent acts with, who is told and what
// starts a reconcile; what it remembers between reconciles is its own.
type Reconciler struct {
	Cluster   Cluster
	Agent     Agent
	Observers Observers
	state     reconcilerState
}

// Cluster is how a Reconciler reads the cluster (and writes Syncs), one reader per
// role.
type Cluster struct {
	// Syncs reads Syncs from the manager's cache and patches them and their status.
	Syncs client.Client
	// Fresh reads a Sync straight from the API server when a status write meets a
	// conflict, so that the retry merges with the newest copy rather than with a
	// cache that may still hold the stale one: the manager's API reader. Nil falls
	// back to Syncs.
	Fresh client.Reader
	// Pods, when set, lists the pods of a workload that is not Healthy, so that its
	// health names the pod and container that hold it up: the manager's API reader
	// (pods are neither cached nor watched). Nil judges workloads by their own status.
	// A Sync that acts as an account lists pods as that account (Identity.Pods).
	Pods client.Reader
	// PodWatch, when set, serves those pods from a watch of their namespace, as
	// the Sync's identity, when the identity's Pods can watch (client.WithWatch);
	// otherwise, or where the identity may not watch pods, they are listed.
	PodWatch *PodWatch
	// Secrets reads the credentials Secrets that Syncs name in spec.source.secretRef,
	// through a client of its own so that no Secret is cached.
	Secrets client.Reader
}

// Agent is what the agent fetches and applies with, as itself, and who a Sync acts
// as instead (Tenancy).
type Agent struct {
	// Source fetches and renders revisions.
	Source Source
	// Applier applies, prunes and orphans as the agent.
	Applier Applier
	// Finder, when set, rebuilds an empty inventory from the objects in the
	// cluster that carry the Sync's label, before anything is pruned.
	Finder Finder
	// Tenancy, when set, makes Syncs act as service accounts (spec.serviceAccountName
	// or a default) instead of as the agent, and bounds their reach. Nil: every Sync
	// acts as the agent, through Applier and Cluster.Secrets.
	Tenancy *Tenancy
	// ApplyOptions are the options of every apply; DefaultNamespace is set per Sync.
	ApplyOptions apply.Options
	// Fights bounds the corrections of a field another manager keeps changing;
	// zero means DefaultFightOptions.
	Fights FightOptions
	// Capabilities reads what a Helm chart sees of the cluster, once per render
	// of a chart; nil renders charts with Helm's defaults.
	Capabilities Capabilities
	// Clusters, when set, are the remote clusters Syncs apply to
	// (spec.destination.kubeConfig or cluster); nil: only the agent's own.
	Clusters *Clusters
}

// Observers are told what a Reconciler does (Recorder, Metrics) and tell it when
// to look at a Sync again (Watcher, Trigger, SecretWatch).
type Observers struct {
	// Recorder records the Sync's Events.
	Recorder record.EventRecorder
	// Home, when set, is an object in the agent's own namespace that the Events
	// which must outlive a Sync's namespace are recorded about: an Event about a
	// Sync whose namespace is being deleted would be refused by the API server
	// (no new object in a terminating namespace), and would go with the namespace
	// anyway. Nil records them on the Sync, and the log keeps them.
	Home *corev1.ObjectReference
	// Metrics counts the work as it is done.
	Metrics *Metrics
	// Watcher, when set, watches the kinds each Sync applies and triggers a reconcile
	// when a managed object changes, so that drift is seen at once.
	Watcher *Watcher
	// Trigger, when set, queues the Syncs a push notification concerns at once.
	Trigger *Trigger
	// SecretWatch, when set, queues a Sync at once when its credentials Secret
	// changes (when the identity's Secrets reader can watch).
	SecretWatch *SecretWatch
}

// reconcilerState is what a Reconciler remembers of the Syncs between reconciles,
// and the settings SetupWithManager gives it.
type reconcilerState struct {
	fights fightTracker
	// searched holds the Syncs whose empty inventory a label search found nothing
	// for (by name, the UID searched as value), so that a Sync that keeps failing
	// before its first apply does not list every kind each time.
	searched gosync.Map
	// good holds, by Sync, the revision last applied in full (goodRevision), to
	// correct drift from while git cannot be asked; kept on disk too with
	// Options.LastGoodDir.
	good goodRevisions
	// keys holds, by Sync, the digest of the decryption keys it last rendered
	// with, so that its decrypted renders leave the cache with it (or with a
	// rotation).
	keys gosync.Map
	// trusted holds, by Sync, the keys its spec.source.verify's Secret held
	// when last read (trustedKeys), parsed once per version of the Secret.
	trusted gosync.Map
	// requests spaces the ref listings requests for a reconcile force.
	requests requestSpacing
	// rollbacks holds, by Sync, the rollback last decided (rollbackMemo), until
	// the cached status shows it.
	rollbacks gosync.Map
	// runs holds, by Sync, the status.run this agent last recorded (lastRun).
	runs gosync.Map
	// refused holds, by Sync, the desired state the API server last refused at
	// validation, whose dry-run is retried after a backoff.
	refused refusedRevisions
	// minInterval is Options.MinInterval.
	minInterval time.Duration
	// events, when NewReconciler made the recorder, is its broadcaster, shut
	// down once the reconciles are over (eventsStop); running counts them.
	events  record.EventBroadcaster
	running atomic.Int64
	// now is the clock; tests may replace it.
	now func() time.Time
}

// Options configure the controller that runs the Reconciler.
type Options struct {
	// Concurrency is how many Syncs reconcile at once; one Sync never runs twice at once.
	Concurrency int
	// MinBackoff and MaxBackoff bound the per-Sync exponential backoff after errors.
	MinBackoff, MaxBackoff time.Duration
	// SkipNameValidation lets several managers in one process (tests, benchmarks)
	// each run a controller of the same name.
	SkipNameValidation bool
	// MinInterval is the shortest interval a Sync polls at, whatever its
	// spec.source.interval says ("1ms" would be a hot loop of ref listings
	// against a shared git host), on the Stalled path too. Zero sets no minimum.
	MinInterval time.Duration
	// LastGoodDir keeps, one small file per Sync, the revision each Sync last
	// applied in full and where from, so that an agent restarted while git is
	// down renders it again from its git cache and corrects drift. It belongs to
	// the agent alone (a Sync's status is never taken for it). Empty: kept in
	// memory only, and a restarted agent waits for git to answer once.
	LastGoodDir string
}

// DefaultOptions returns the controller options Tether runs with.
func DefaultOptions() Options {
	return Options{Concurrency: 4, MinBackoff: 50 * time.Millisecond, MaxBackoff: 15 * time.Minute, MinInterval: 10 * time.Second}
}

// hostBusyRequeue is how soon a Sync whose git host is busy with other fetches
// (a slow host) tries again.
const hostBusyRequeue = 5 * time.Second

// interval is how often obj polls: its spec.source.interval, but no less than the
// agent's minimum.
func (r *Reconciler) interval(obj *v1alpha1.Sync) time.Duration {
	return max(obj.Spec.Source.IntervalOrDefault(), r.state.minInterval)
}

// SetupWithManager registers the reconciler with mgr. Only spec changes (generation)
// of a Sync trigger it; its own status writes do not.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if r.state.now == nil {
		r.state.now = time.Now
	}
	r.state.minInterval = opts.MinInterval
	r.state.good.dir = opts.LastGoodDir
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Sync{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.Concurrency,
			RateLimiter:             cappedBackoff(opts.MinBackoff, opts.MaxBackoff, r.intervalOf(mgr.GetClient())),
			SkipNameValidation:      &opts.SkipNameValidation,
		})
	if r.Observers.Watcher != nil {
		b = b.WatchesRawSource(r.Observers.Watcher.Source())
	}
	if r.Observers.Trigger != nil {
		b = b.WatchesRawSource(r.Observers.Trigger.Source())
	}
	// The cache has not started: registering an index creates the informer of
	// Syncs and waits on nothing, so there is nothing for a context to cancel.
	if err := indexDependencies(context.TODO(), mgr.GetFieldIndexer()); err != nil {
		return fmt.Errorf("indexing Syncs by their dependencies: %w", err)
	}
	b = b.Watches(&v1alpha1.Sync{}, handler.EnqueueRequestsFromMapFunc(r.dependents), builder.WithPredicates(readinessChanged()))
	if r.state.events != nil {
		if err := mgr.Add(eventsStop{broadcaster: r.state.events, running: &r.state.running}); err != nil {
			return err
		}
	}
	if r.Cluster.PodWatch != nil {
		if err := mgr.Add(r.Cluster.PodWatch); err != nil {
			return err
		}
	}
	if r.Observers.SecretWatch != nil {
		if err := mgr.Add(r.Observers.SecretWatch); err != nil {
			return err
		}
		b = b.WatchesRawSource(r.Observers.SecretWatch.Source())
	}
	return b.Complete(r)
}

// Reconcile brings one Sync a step closer to its desired state and reports what it
// saw. It is a straight line of steps; see the package documentation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	r.state.running.Add(1)
	defer r.state.running.Add(-1)
	start := r.state.now()
	obj := &v1alpha1.Sync{}
	if err := r.Cluster.Syncs.Get(ctx, req.NamespacedName, obj); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	obj, err = r.catchUp(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}

	st := plan.NewStatus(obj, r.state.now)
	defer func() {
		err = errors.Join(err, r.report(ctx, obj, st, err))
		if err == nil && st.RequestWait() > 0 && (result.RequeueAfter == 0 || result.RequeueAfter > st.RequestWait()) {
			// A request for a reconcile left waiting is answered after the wait,
			// whatever this reconcile's outcome.
			result.RequeueAfter = st.RequestWait()
		}
		if !st.IsGone() {
			r.Observers.Metrics.ObserveReconcile(obj, r.state.now().Sub(start))
		}
	}()
	if err := r.rebuildInventory(ctx, obj, st); err != nil {
		return r.onError(obj, st, r.interval(obj), err)
	}
	if !obj.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, obj, st)
	}
	if obj.Spec.Suspend {
		st.Suspended()
		return ctrl.Result{}, nil
	}
	interval := r.interval(obj)
	want, err := r.desire(ctx, obj, st)
	if err != nil {
		return r.onError(obj, st, interval, err)
	}
	return r.reach(ctx, obj, st, want, interval)
}

// desired is what one reconcile found a Sync should hold, and what it acts with.
type desired struct {
	id      Identity
	dec     *source.Decryption
	checker *health.Checker
	snap    *source.Snapshot
	run     *plan.Run
	// sourceErr is git's failure when snap is the last good revision, applied
	// again because git could not be asked.
	sourceErr error
}

// desire reads what the Sync should hold: its identity, its dependencies Ready,
// its keys, the revision rendered (or the last good one when git cannot be
// asked), checked whole, and its order.
func (r *Reconciler) desire(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status) (*desired, error) {
	want := &desired{}
	var err error
	if want.checker, err = healthChecker(obj); err != nil {
		return nil, err
	}
	if want.id, err = r.identity(ctx, obj); err != nil {
		return nil, err
	}
	if err := r.checkDependencies(ctx, obj); err != nil {
		return nil, err
	}
	if want.dec, err = r.decryption(ctx, obj, want.id); err != nil {
		return nil, err
	}
	snap, err := r.fetchAndRender(ctx, obj, want.id, want.dec, st)
	if err == nil && obj.Spec.Source.URL != "" {
		// A pin, or a rollback, applies an earlier commit; head is reported.
		snap, err = r.chooseRevision(ctx, obj, want.id, want.dec, st, snap)
	}
	// When git cannot be asked, the revision the cluster holds is applied again:
	// drift is corrected, nothing is pruned, and git's failure is reported.
	if err != nil {
		last := r.lastGood(ctx, obj, want.id, want.dec, err)
		if last == nil {
			return nil, err
		}
		snap, want.sourceErr = last, err
	}
	if err := plan.CheckEmpty(obj, snap); err != nil {
		return nil, err
	}
	if err := plan.CheckSize(obj, snap); err != nil {
		return nil, err
	}
	if err := r.tenancyOf(want.id).checkReach(obj, snap.Objects); err != nil {
		return nil, err
	}
	if want.run, want.snap, err = orderOf(snap); err != nil {
		return nil, err
	}
	st.HooksSkipped(want.run.Skipped)
	return want, nil
}

// reach makes the cluster hold what the Sync wants: applied (in order for a new
// revision with hooks or waves), what left git pruned, health assessed, and the
// outcome recorded.
func (r *Reconciler) reach(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status, want *desired, interval time.Duration) (ctrl.Result, error) {
	snap := want.snap
	// The revision is applied already: whatever differs now is drift in the cluster,
	// which selfHeal: false only reports.
	drift := obj.Status.LastAppliedRevision == snap.Revision.String()
	// The finalizer comes with the first thing to apply, not before: a Sync that
	// fails before it (a path not pushed yet, a broken commit) has nothing in
	// the cluster, and without the finalizer no reconcile after it searches
	// every kind for objects it might have left (see mustSearch).
	if err := r.ensureFinalizer(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	refused := digestIfRefused(obj, snap)
	if r.state.refused.waits(obj, refused, r.state.now()) {
		// The same objects were refused at validation, and their retry is not
		// due: git was asked, the status stays as it is.
		return ctrl.Result{RequeueAfter: jitter(interval)}, nil
	}
	converge, ordered := r.convergerFor(obj, st, want, drift)
	changes, err := converge(ctx, want.id, obj, snap)
	r.state.refused.record(client.ObjectKeyFromObject(obj), refused, err, interval, r.state.now())
	r.watch(ctx, want.id, obj, changes, ordered.hookChanges())
	diff := st.Applied(changes)
	if drift && changes != nil && !changes.DryRun {
		logDrift(ctx, changes)
		r.settleFights(obj, changes)
	}
	st.FieldConflicts(r.state.fights.conflicts(obj), r.state.fights.givenUp(obj))
	if err != nil {
		st.LeftGitNote("prune waits until every object applies")
		return r.onError(obj, st, interval, err)
	}
	if want.sourceErr != nil {
		r.assess(ctx, obj, want.id, want.checker, st, changes)
		r.recordApplied(obj, snap, changes, nil, drift)
		return r.onError(obj, st, interval, want.sourceErr)
	}
	pruned, err := r.prune(ctx, want.id, obj, st, snap, changes, diff)
	pruned = joinChanges(ordered.prunedBefore(), pruned)
	r.assess(ctx, obj, want.id, want.checker, st, changes)
	r.recordApplied(obj, snap, changes, pruned, drift)
	if err != nil {
		return r.onError(obj, st, interval, err)
	}
	st.Ready(snap.Revision.String(), obj.Spec.Wait)
	st.SignedBy(snap.Revision.Signer)
	r.rememberGood(ctx, obj, snap)
	r.recordHistory(ctx, st, snap)
	return ctrl.Result{RequeueAfter: jitter(r.checkRollback(obj, st, st.RequeueAfter(interval)))}, nil
}

// converger applies a snapshot, or compares it with the cluster.
type converger func(ctx context.Context, id Identity, obj *v1alpha1.Sync, snap *source.Snapshot) (*apply.ChangeSet, error)

// convergerFor chooses how a reconcile converges: drift is corrected as one set
// with no hook (or only reported when selfHeal is off), and so is what is left of
// a revision whose run succeeded (a prune that waits for a wave to go); a new
// revision with hooks or waves is applied in order (reconciler_waves.go), unless
// it is the last good revision applied again while git cannot be asked.
func (r *Reconciler) convergerFor(obj *v1alpha1.Sync, st *plan.Status, want *desired, drift bool) (converger, *orderedRun) {
	if drift && !obj.Spec.SelfHealEnabled() {
		return r.compareSnapshot, nil
	}
	if !drift && want.sourceErr == nil && !r.ranAlready(obj, want.run) {
		if ordered := r.newOrderedRun(want.run, st, want.checker); ordered != nil {
			return ordered.converge, ordered
		}
	}
	return r.applySnapshot, nil
}

// fetchAndRender reads the desired state: the ref resolved to a commit, and the
// Sync's path at that commit rendered to objects.
func (r *Reconciler) fetchAndRender(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, st *plan.Status) (*source.Snapshot, error) {
	if obj.Spec.Source.Chart != nil {
		return r.fetchChart(ctx, obj, id, st)
	}
	if obj.Spec.Source.OCI != nil {
		return r.fetchArtifact(ctx, obj, id, dec, st)
	}
	fetchStart := r.state.now()
	// Syncs sharing a repository and credentials share a poll (see maxAge).
	req, wait, err := r.sourceRequest(ctx, obj, id)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		st.RequestWaits(obj, wait)
	}
	snap, err := r.fetchRevision(ctx, obj, id, st, req, dec, fetchStart)
	if errors.Is(err, source.ErrNoSuchPath) && req.MaxAge > 0 {
		// The answer may have come from a listing made before the push that
		// added the path: git is asked once more before it is called missing.
		req.MaxAge = 0
		snap, err = r.fetchRevision(ctx, obj, id, st, req, dec, r.state.now())
	}
	return snap, err
}

// fetchRevision fetches req and renders the Sync's path at the commit.
func (r *Reconciler) fetchRevision(ctx context.Context, obj *v1alpha1.Sync, id Identity, st *plan.Status, req source.Request, dec *source.Decryption, fetchStart time.Time) (*source.Snapshot, error) {
	rev, err := r.Agent.Source.Fetch(ctx, req)
	r.Observers.Metrics.ObserveFetch(obj, r.state.now().Sub(fetchStart), err)
	if err != nil {
		return nil, err
	}
	st.Fetched(rev.String())
	if err := r.checkHistory(ctx, obj, rev); err != nil {
		return nil, err
	}
	snap, err := r.renderAgain(ctx, obj, id, dec, rev, obj.Spec.Source.PathOrDefault())
	if err != nil {
		return nil, err
	}
	st.Rendered(rev.String(), len(snap.Objects))
	return snap, nil
}

// applySnapshot applies a snapshot as plan.ForApply maps the Sync to an apply.
func (r *Reconciler) applySnapshot(ctx context.Context, id Identity, obj *v1alpha1.Sync, snap *source.Snapshot) (*apply.ChangeSet, error) {
	return r.applyAll(ctx, id, obj, snap, false)
}

// compareSnapshot compares a snapshot with the cluster as applySnapshot would
// apply it, and writes nothing (drift that selfHeal: false only reports).
func (r *Reconciler) compareSnapshot(ctx context.Context, id Identity, obj *v1alpha1.Sync, snap *source.Snapshot) (*apply.ChangeSet, error) {
	return r.applyAll(ctx, id, obj, snap, true)
}

func (r *Reconciler) applyAll(ctx context.Context, id Identity, obj *v1alpha1.Sync, snap *source.Snapshot, dryRun bool) (*apply.ChangeSet, error) {
	opts := plan.ForApply(obj, snap.Objects, r.Agent.ApplyOptions, r.state.fights.givenUp(obj))
	opts.DryRun = dryRun
	// Nothing reads the snapshot's objects after the apply (the change set
	// names them): each goes as soon as it is applied.
	opts.Release = true
	opts.BeforeWrite = r.recordAhead(obj)
	r.prepareWatch(ctx, id, obj, snap)
	changes, err := id.Applier.ApplyAll(ctx, snap.Objects, opts)
	r.Observers.Metrics.CountChanges(obj, changes)
	return changes, err
}

// logDrift names each object a drift correction wrote and the fields in which it
// differed from git (paths only: values may be secret).
func logDrift(ctx context.Context, cs *apply.ChangeSet) {
	log := ctrl.LoggerFrom(ctx)
	for _, c := range cs.Changes {
		if c.Action == apply.ActionConfigured || c.Action == apply.ActionCreated {
			log.Info("Corrected drift", "object", c.Object.String(), "action", string(c.Action), "fields", c.Diff)
		}
	}
}

// settleFights counts the fields a drift correction took back from another
// manager, and gives up those fought over too often: an Event and a metric each.
func (r *Reconciler) settleFights(obj *v1alpha1.Sync, cs *apply.ChangeSet) {
	opts := r.Agent.Fights
	if opts.Threshold < 1 || opts.Window <= 0 {
		opts = DefaultFightOptions()
	}
	for _, k := range r.state.fights.observe(obj, cs, r.state.now(), opts) {
		r.Observers.Metrics.CountFieldFight(obj, k.manager)
		r.Observers.Recorder.Eventf(obj, corev1.EventTypeWarning, v1alpha1.ReasonFieldConflict, "%s", r.state.fights.message(obj, k))
	}
}

// watchSyncWait bounds how long an apply waits for the informers of new kinds to
// sync; after it, objects whose informer has not synced are read one by one.
const watchSyncWait = 10 * time.Second

// prepareWatch has the Watcher follow the kinds of snap before they are applied, so
// that the apply knows from the watch which objects do not exist yet and spares
// reading them: a first sync costs a dry-run and an apply per object.
func (r *Reconciler) prepareWatch(ctx context.Context, id Identity, obj *v1alpha1.Sync, snap *source.Snapshot) {
	w := r.watcherOf(id)
	if w == nil {
		return
	}
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, o := range snap.Objects {
		if gvk := o.GroupVersionKind(); !seen[gvk] {
			seen[gvk] = true
			kinds = append(kinds, gvk)
		}
	}
	w.Prepare(ctx, client.ObjectKeyFromObject(obj), kinds, watchSyncWait)
}

// watch makes the Watcher follow the kinds this Sync now has in the cluster (its
// objects', and its hooks' while a run follows them).
func (r *Reconciler) watch(ctx context.Context, id Identity, obj *v1alpha1.Sync, sets ...*apply.ChangeSet) {
	w := r.watcherOf(id)
	if w == nil || len(sets) == 0 || sets[0] == nil {
		return
	}
	seen := map[schema.GroupVersionKind]bool{}
	var kinds []schema.GroupVersionKind
	for _, cs := range sets {
		if cs == nil {
			continue
		}
		for _, c := range cs.Changes {
			if gvk := c.Object.GroupVersionKind(); c.Live != nil && !seen[gvk] {
				seen[gvk] = true
				kinds = append(kinds, gvk)
			}
		}
	}
	if err := w.Track(ctx, client.ObjectKeyFromObject(obj), kinds); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "watching managed kinds; drift is seen at the next interval")
	}
}

// assess judges the health of what the cluster now holds, and has the Watcher
// follow the status of every object that is not Healthy yet, so that the next
// change of it re-assesses the Sync at once.
func (r *Reconciler) assess(ctx context.Context, obj *v1alpha1.Sync, id Identity, checker *health.Checker, st *plan.Status, changes *apply.ChangeSet) {
	var unsettled []v1alpha1.ObjectRef
	for _, c := range changes.Changes {
		res := r.healthOf(ctx, id, checker, c.Object.GroupVersionKind().GroupKind(), c.Live)
		st.ObjectHealth(c.Object, res.Code, res.Message)
		if res.Code != v1alpha1.HealthHealthy && c.Live != nil {
			unsettled = append(unsettled, c.Object)
		}
	}
	st.AggregateHealth()
	if w := r.watcherOf(id); w != nil {
		w.FollowStatus(client.ObjectKeyFromObject(obj), unsettled)
	}
}

// onError is the one place that maps an error to behaviour. Bad input in git stalls
// the Sync until the next interval (or a new commit); anything else is returned so
// the queue retries it with exponential backoff.
func (r *Reconciler) onError(obj *v1alpha1.Sync, st *plan.Status, interval time.Duration, err error) (ctrl.Result, error) {
	err = r.unreachable(obj, err)
	var unreachable *ClusterUnreachableError
	var fe *source.FetchError
	var rendered *source.RenderError
	var held *plan.HeldError
	var refused *RefusedError
	var waiting *plan.WaitingError
	switch {
	case errors.As(err, &unreachable):
		// The remote cluster does not answer: its objects stay as they are, and
		// the breaker spaces the tries (bounded by the interval).
		st.Retrying(v1alpha1.ReasonClusterUnreachable, err)
		return ctrl.Result{RequeueAfter: min(max(unreachable.RetryIn, breakerFirstWait), interval)}, nil
	case errors.As(err, &waiting):
		// Waiting on something that requeues the Sync when it changes (a
		// dependency, a wave's objects): not a failure.
		st.Waiting(waiting.Reason, err)
		if waiting.Reason == v1alpha1.ReasonDependencyNotReady {
			// A dependency's change queues the Sync (dependents); the interval
			// is the safety net.
			return ctrl.Result{RequeueAfter: jitter(interval)}, nil
		}
		return ctrl.Result{RequeueAfter: jitter(min(interval, runRequeue))}, nil
	case errors.As(err, &held):
		st.Stalled(held.Reason, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	case errors.As(err, &refused):
		st.Stalled(refused.Reason, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	case errors.As(err, &fe) && fe.Reason == source.ReasonHostBusy:
		// Waiting on a slow host: not a failure of this Sync.
		return ctrl.Result{RequeueAfter: jitter(hostBusyRequeue)}, nil
	case errors.As(err, &fe) && plan.Stalls(fe.Reason):
		// The Sync itself is wrong (a range or URL that cannot be used, a Secret its
		// identity may not read): retrying cannot help until it changes.
		st.SourceFailed(fe.Reason, err)
		st.Stalled(fe.Reason, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	case errors.As(err, &fe):
		// Git is down, or refuses: the cluster keeps the last good revision (drift is
		// still corrected from it, by watch) and git is asked again at the interval,
		// not after an exponential backoff that would outlast the outage by minutes.
		st.SourceFailed(fe.Reason, err)
		return ctrl.Result{RequeueAfter: jitter(interval)}, nil
	case errors.As(err, &rendered):
		reason := rendered.Reason
		if reason == "" {
			reason = v1alpha1.ReasonRenderFailed
		}
		st.Stalled(reason, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	case apply.IsInvalid(err) && isForbidden(err):
		// The Sync's identity may not do it: retrying cannot help until its rights,
		// the Sync or git change.
		st.Stalled(v1alpha1.ReasonForbidden, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	case apply.IsValidation(err) && apply.IsInvalid(err):
		// Nothing of the revision was written; git has to change.
		st.Stalled(v1alpha1.ReasonValidationFailed, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	case apply.IsValidation(err):
		// A dry-run failed for a reason of the cluster's (a timeout, a 5xx): retry.
		st.Retrying(v1alpha1.ReasonValidationFailed, err)
		return ctrl.Result{}, err
	case apply.IsInvalid(err):
		st.Stalled(v1alpha1.ReasonApplyFailed, err)
		return ctrl.Result{RequeueAfter: interval}, nil
	}
	st.Retrying(v1alpha1.ReasonReconcileFailed, err)
	return ctrl.Result{}, err
}

// recordApplied tells users, through an Event, that a reconcile changed the cluster:
// a new revision applied, drift corrected, objects pruned. A reconcile that changed
// nothing records nothing.
func (r *Reconciler) recordApplied(obj *v1alpha1.Sync, snap *source.Snapshot, cs, pruned *apply.ChangeSet, drift bool) {
	prunedN := 0
	if pruned != nil {
		prunedN = pruned.Count(apply.ActionPruned)
	}
	if !cs.Changed() && prunedN == 0 {
		return
	}
	reason, verb := v1alpha1.ReasonApplied, "Applied revision"
	if drift && cs.Changed() {
		reason, verb = v1alpha1.ReasonDriftCorrected, "Corrected drift from revision"
		r.Observers.Metrics.CountDriftCorrection(obj)
	}
	msg := fmt.Sprintf("%s %s: %d created, %d configured, %d unchanged, %d pruned", verb, snap.Revision,
		cs.Count(apply.ActionCreated), cs.Count(apply.ActionConfigured), cs.Count(apply.ActionUnchanged), prunedN)
	if prunedN > 0 {
		msg += " (" + pruneSummary(pruned) + ")"
	}
	r.Observers.Recorder.AnnotatedEventf(obj, map[string]string{"revision": snap.Revision.String()}, corev1.EventTypeNormal, reason, "%s", msg)
}

// maxEventMessage bounds a Warning Event's message (the API server's limit on an
// Event's message is 1 KiB in events.k8s.io).
const maxEventMessage = 1024

// recordFailure records a Warning Event when a reconcile finds a new cause of
// failure: the Ready condition turns False, or its reason or message changes. The
// Event's reason is the condition's (RenderFailed, ValidationFailed,
// PruneLimitExceeded, HostUnreachable, ...: see api/v1alpha1/reasons.go and
// source's reasons) and its message the condition's, which names the file or the
// object at fault. A failure that persists is recorded once, not at every retry;
// the same Event recorded again (by a new leader, after a restart) is folded by the
// event recorder into one Event with a count.
func (r *Reconciler) recordFailure(obj *v1alpha1.Sync, before, after v1alpha1.SyncStatus) {
	cond := apimeta.FindStatusCondition(after.Conditions, v1alpha1.ReadyCondition)
	// (A Sync that waits for health is not Ready while Degraded: the health
	// transition's Warning Event says so already.)
	if cond == nil || cond.Status != metav1.ConditionFalse || cond.Reason == v1alpha1.ReasonDeleting || cond.Reason == v1alpha1.ReasonDegraded {
		return
	}
	if !readyChanged(before, after) {
		return
	}
	msg := cond.Message
	if apimeta.IsStatusConditionTrue(after.Conditions, v1alpha1.StalledCondition) {
		msg = "Stalled until git or the Sync changes: " + msg
	}
	if len(msg) > maxEventMessage {
		msg = msg[:maxEventMessage-3] + "..."
	}
	r.Observers.Recorder.AnnotatedEventf(obj, map[string]string{"revision": after.SourceRevision}, corev1.EventTypeWarning, cond.Reason, "%s", msg)
}

// readyChanged reports whether the Ready condition of after differs from before's
// in status, reason or message: a new failure, or a failure that changed.
func readyChanged(before, after v1alpha1.SyncStatus) bool {
	cond := apimeta.FindStatusCondition(after.Conditions, v1alpha1.ReadyCondition)
	old := apimeta.FindStatusCondition(before.Conditions, v1alpha1.ReadyCondition)
	if cond == nil || old == nil {
		return cond != old
	}
	return old.Status != cond.Status || old.Reason != cond.Reason || old.Message != cond.Message
}

// statusWriteGrace bounds the status write of a reconcile whose context was
// cancelled (the agent got SIGTERM): the write still goes out, so that what the
// reconcile did is recorded, but it cannot hold up shutdown for long.
const statusWriteGrace = 10 * time.Second

// report writes the status the reconcile built, once, and logs the outcome. It
// writes even when ctx was cancelled, within statusWriteGrace.
func (r *Reconciler) report(ctx context.Context, obj *v1alpha1.Sync, st *plan.Status, reconcileErr error) error {
	log := ctrl.LoggerFrom(ctx)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusWriteGrace)
	defer cancel()
	if st.IsGone() {
		r.Observers.Metrics.Forget(obj.Namespace, obj.Name)
		if r.Observers.Watcher != nil {
			r.Observers.Watcher.Forget(ctx, client.ObjectKeyFromObject(obj))
		}
		return nil
	}
	status := st.Build()
	r.Observers.Metrics.ObserveStatus(obj, status, r.state.now())
	r.recordFailure(obj, obj.Status, status)
	if failure := cmp.Or(reconcileErr, st.Failure()); failure != nil {
		// Logged at error level once, when it starts or changes; a Sync that fails
		// the same way at every interval would otherwise fill the log with it.
		if readyChanged(obj.Status, status) {
			log.Error(failure, "reconcile failed", "revision", status.SourceRevision)
		} else {
			log.V(1).Info("reconcile failed again", "revision", status.SourceRevision, "error", failure.Error())
		}
	}
	before, err := r.patchStatus(ctx, obj, status)
	if err != nil {
		return fmt.Errorf("writing status of Sync %s/%s: %w", obj.Namespace, obj.Name, err)
	}
	r.recordHealth(obj, before, status)
	if len(status.Objects) > 0 {
		// A search that found nothing is outdated once there is an inventory: if it
		// is lost again, search again.
		r.state.searched.Delete(client.ObjectKeyFromObject(obj))
	}
	log.V(1).Info("reconciled", "revision", status.LastAppliedRevision, "sync", status.Sync, "health", status.Health)
	return nil
}
