package syncset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
	"tether.dev/tether/source"
)

// Source is what the controller needs of git: the newest commit of a ref (the
// listing shared with the Syncs of the same repository), and the directories and
// files of a commit.
type Source interface {
	Fetch(ctx context.Context, req source.Request) (source.Revision, error)
	Glob(rev source.Revision, pattern string, kind source.GlobKind) ([]string, error)
	ReadFiles(rev source.Revision, paths []string) (map[string][]byte, error)
}

var _ Source = (*source.Source)(nil)

// Credentials reads a git generator's credentials, and the keys it trusts,
// as a Sync of the SyncSet would read its own (sync.Reconciler.WithAuthAs and
// WithVerificationAs).
type Credentials interface {
	WithAuthAs(ctx context.Context, as *v1alpha1.Sync, name string, req source.Request) (source.Request, error)
	WithVerificationAs(ctx context.Context, as *v1alpha1.Sync, verify *v1alpha1.SourceVerify, req source.Request) (source.Request, error)
}

// Reconciler keeps the Syncs of each SyncSet those its generators make.
type Reconciler struct {
	// Client reads SyncSets and Syncs from the manager's cache and writes them.
	Client client.Client
	// Source reads the git generators' repositories.
	Source Source
	// Credentials reads the Secrets git generators name; nil refuses a
	// generator's secretRef.
	Credentials Credentials
	// Registry lists the registered clusters, for the clusters generators;
	// nil: there are none.
	Registry Registry
}

// Registry lists the clusters registered with the agent (docs/multi-cluster.md)
// that allow a namespace.
type Registry interface {
	Allowing(ctx context.Context, namespace string) ([]fleet.Cluster, error)
}

// Options configure the controller that runs the Reconciler.
type Options struct {
	// Concurrency is how many SyncSets reconcile at once.
	Concurrency int
	// SkipNameValidation lets several managers in one process (tests) each run
	// a controller of the same name.
	SkipNameValidation bool
}

// DefaultOptions returns the options `tether controller` uses.
func DefaultOptions() Options { return Options{Concurrency: 2} }

// SetupWithManager registers the reconciler with mgr: a SyncSet's spec changes
// and the changes of its Syncs that matter to it (their spec, labels, pin,
// revision, readiness and health, or their going) queue it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("syncset").
		For(&v1alpha1.SyncSet{}, builder.WithPredicates(specChanged())).
		Watches(&v1alpha1.Sync{}, coalesced(memberDelay), builder.WithPredicates(memberChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.Concurrency, SkipNameValidation: &opts.SkipNameValidation}).
		Complete(r)
}

// memberDelay is how long the changes of a SyncSet's Syncs gather before they
// queue it: a fleet of a thousand Syncs converging changes a thousand statuses,
// and one reconcile reads them all (plan/fleet's bench: tens of milliseconds
// for 1,000 Syncs), so they are taken together, at most one reconcile per delay.
const memberDelay = 2 * time.Second

// coalesced queues the SyncSet a Sync's label names, delay after the Sync
// changed; the queue keeps one entry per SyncSet, so the changes within delay
// make one reconcile.
func coalesced(delay time.Duration) handler.EventHandler {
	add := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if o == nil {
			return
		}
		if name := o.GetLabels()[v1alpha1.SyncSetLabel]; name != "" {
			q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}, delay)
		}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.ObjectNew, q)
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(e.Object, q)
		},
	}
}

// Reconcile makes the Syncs of one SyncSet those its generators yield now.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ss := &v1alpha1.SyncSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ss); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ss.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // the garbage collector deletes the Syncs it owns
	}
	live, err := r.liveSyncs(ctx, ss)
	if err != nil {
		return ctrl.Result{}, err
	}
	st := newStatus(ss, live)
	result, err := r.reconcile(ctx, ss, live, st)
	if perr := r.writeStatus(ctx, ss, st); perr != nil && err == nil {
		err = perr
	}
	return result, err
}

func (r *Reconciler) reconcile(ctx context.Context, ss *v1alpha1.SyncSet, live []v1alpha1.Sync, st *status) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	requeue := ctrl.Result{RequeueAfter: interval(ss)}
	if ss.Spec.Suspend {
		st.suspended()
		return ctrl.Result{}, nil
	}
	listings, err := r.read(ctx, ss)
	if err != nil {
		st.failed(err)
		if stalls(err) {
			return requeue, nil
		}
		return ctrl.Result{}, err
	}
	st.read(listings)
	desired, entries, err := makeAll(ss, listings)
	if err != nil {
		st.failed(err)
		return requeue, nil
	}
	if rs := rolling(ss); rs != nil {
		every, err := r.roll(ctx, ss, rs, desired, live, st)
		if err != nil {
			st.failed(err)
			return ctrl.Result{}, err
		}
		if every > 0 && every < requeue.RequeueAfter {
			requeue.RequeueAfter = every
		}
	} else {
		unpin(desired, live)
		st.st.Rollout = nil
		apimeta.RemoveStatusCondition(&st.st.Conditions, v1alpha1.RolloutCondition)
	}
	ch, err := fleet.Diff(desired, live, ss.Spec.GeneratedLimitOrDefault())
	if err != nil {
		st.failed(err)
		return requeue, nil
	}
	st.changes(desired, ch)
	if err := r.write(ctx, ch, entries); err != nil {
		st.failed(err)
		if stalls(err) {
			return requeue, nil
		}
		return ctrl.Result{}, err
	}
	if n := len(ch.Create) + len(ch.Update) + len(ch.Delete); n > 0 {
		log.Info("syncs changed", "created", len(ch.Create), "updated", len(ch.Update), "deleted", len(ch.Delete), "held", len(ch.Kept))
	}
	return requeue, nil
}

// liveSyncs lists the Syncs of ss: those its label names that it owns or that
// nothing owns (made with preserveSyncsOnDeletion, whose Syncs carry no owner,
// or before it was turned off: the update gives them their owner back).
func (r *Reconciler) liveSyncs(ctx context.Context, ss *v1alpha1.SyncSet) ([]v1alpha1.Sync, error) {
	list := &v1alpha1.SyncList{}
	if err := r.Client.List(ctx, list, client.InNamespace(ss.Namespace), client.MatchingLabels{v1alpha1.SyncSetLabel: ss.Name}); err != nil {
		return nil, fmt.Errorf("listing the Syncs of SyncSet %s/%s: %w", ss.Namespace, ss.Name, err)
	}
	out := list.Items[:0]
	for _, s := range list.Items {
		owner := metav1.GetControllerOf(&s)
		if owner == nil || owner.UID == ss.UID {
			out = append(out, s)
		}
	}
	return out, nil
}

// makeAll generates the parameter sets and makes a Sync of each; two sets that
// make one name are an error naming both entries. entries maps each Sync's name
// to its generator entry, for the errors of the writes.
func makeAll(ss *v1alpha1.SyncSet, listings map[string]fleet.Listing) ([]*v1alpha1.Sync, map[string]string, error) {
	sets, err := fleet.Generate(&ss.Spec, listings)
	if err != nil {
		return nil, nil, err
	}
	desired := make([]*v1alpha1.Sync, 0, len(sets))
	entries := make(map[string]string, len(sets))
	for _, set := range sets {
		s, err := fleet.Make(ss, set)
		if err != nil {
			return nil, nil, err
		}
		if other, dup := entries[s.Name]; dup {
			return nil, nil, &fleet.Error{Entry: set.Entry, Reason: v1alpha1.ReasonGenerateFailed,
				Err: fmt.Errorf("makes Sync %q, as %s does: the template's name must differ for every set", s.Name, other)}
		}
		entries[s.Name] = set.Entry
		desired = append(desired, s)
	}
	return desired, entries, nil
}

// write creates, updates and deletes Syncs. A Sync the API server refuses is
// an error naming its generator entry.
func (r *Reconciler) write(ctx context.Context, ch fleet.Changes, entries map[string]string) error {
	refused := func(s *v1alpha1.Sync, verb string, err error) error {
		if apierrors.IsAlreadyExists(err) && r.ownedElsewhere(ctx, s) {
			return &fleet.Error{Entry: entries[s.Name], Reason: v1alpha1.ReasonGenerateFailed,
				Err: fmt.Errorf("makes Sync %s, which exists and is not this SyncSet's: it is left as it is", s.Name)}
		}
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return &fleet.Error{Entry: entries[s.Name], Reason: v1alpha1.ReasonGenerateFailed, Err: fmt.Errorf("%s Sync %s: %w", verb, s.Name, err)}
		}
		return fmt.Errorf("%s Sync %s/%s: %w", verb, s.Namespace, s.Name, err)
	}
	// The writes go out writeWorkers at a time: one SyncSet over a thousand
	// directories makes a thousand Syncs in its first reconcile, and one after
	// the other they took longer than the Syncs took to apply.
	var (
		mu   gosync.Mutex
		errs []error
		wg   gosync.WaitGroup
	)
	slots := make(chan struct{}, writeWorkers)
	send := func(write func() error) {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if err := write(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	for _, s := range ch.Create {
		send(func() error {
			if err := r.Client.Create(ctx, s); err != nil {
				return refused(s, "creating", err)
			}
			return nil
		})
	}
	for _, s := range ch.Update {
		send(func() error {
			if err := r.Client.Update(ctx, s); err != nil {
				return refused(s, "updating", err)
			}
			return nil
		})
	}
	for _, s := range ch.Delete {
		send(func() error {
			if err := r.Client.Delete(ctx, s, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("deleting Sync %s/%s: %w", s.Namespace, s.Name, err)
			}
			return nil
		})
	}
	wg.Wait()
	// In a stable order, whichever write finished first: the status message
	// must not change from one reconcile to the next for the same failures.
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// writeWorkers is how many writes of Syncs one reconcile has in flight, as
// `kubectl apply` of a directory of Syncs in a pipeline would send them.
const writeWorkers = 8

// ownedElsewhere reports whether the Sync named like s exists with no label of
// this SyncSet (one written by hand, or another SyncSet's); one that is this
// SyncSet's was made by a reconcile the cache has not caught up with yet, and
// the create is retried.
func (r *Reconciler) ownedElsewhere(ctx context.Context, s *v1alpha1.Sync) bool {
	live := &v1alpha1.Sync{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
		return false
	}
	return live.Labels[v1alpha1.SyncSetLabel] != s.Labels[v1alpha1.SyncSetLabel]
}

// stalls reports whether err is bad input that a retry cannot fix.
func stalls(err error) bool {
	var fe *fleet.Error
	var re *source.RenderError
	return errors.As(err, &fe) || errors.As(err, &re)
}

// interval is the shortest interval of the SyncSet's git generators, or the
// default when it has none.
func interval(ss *v1alpha1.SyncSet) time.Duration {
	d := time.Duration(0)
	for _, g := range fleet.GitGenerators(&ss.Spec) {
		if i := g.Git.IntervalOrDefault(); d == 0 || i < d {
			d = i
		}
	}
	if d == 0 {
		return v1alpha1.DefaultInterval
	}
	return d
}

func rolling(ss *v1alpha1.SyncSet) *v1alpha1.RollingSyncStrategy {
	if ss.Spec.Strategy == nil {
		return nil
	}
	return ss.Spec.Strategy.RollingSync
}
