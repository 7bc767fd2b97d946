package notify

import (
	"context"
	"fmt"
	"strings"
	gosync "sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"tether.dev/tether/api/v1alpha1"
)

// Options configure the Controller.
type Options struct {
	// Sender says how receivers are called (hosts allowed, retries, timeouts).
	Sender SenderOptions
	// Queue bounds each receiver's queue and coalesces bursts.
	Queue QueueOptions
	// Registerer takes the notification metrics; nil registers none.
	Registerer prometheus.Registerer
}

// DefaultOptions are the agent's.
func DefaultOptions() Options {
	return Options{Sender: DefaultSenderOptions(), Queue: DefaultQueueOptions()}
}

// Cluster is what the Controller reads and writes.
type Cluster struct {
	// Cache is the manager's: the Syncs' informer and the Notifiers.
	Cache cache.Cache
	// Secrets reads a Notifier's Secrets, from the API server (never cached).
	Secrets client.Reader
	// Status writes a Notifier's status.
	Status client.StatusClient
	// Events, when set, is a cache of the Kubernetes Events recorded on Syncs
	// (and only those: a field selector on involvedObject.kind), for what
	// leaves no mark in a Sync's status: a drift corrected, a person's action.
	Events cache.Cache
}

// Controller turns what Syncs record into notifications. It is a manager
// Runnable that runs on the leader only, beside the reconciler and never in its
// way: the Syncs' informer hands it each change, it queues what to send without
// blocking, and one worker per Notifier sends.
type Controller struct {
	cluster Cluster
	opts    Options
	metrics *metrics

	mu      gosync.Mutex
	ctx     context.Context
	workers map[types.NamespacedName]*worker
	// started is when the Controller started: Events recorded before it were
	// told by the agent that ran then.
	started time.Time
}

// worker is one Notifier's queue, and the levels it last queued, per key, so
// that a level is sent when it changes and once after a restart.
type worker struct {
	queue  *Queue
	sent   map[string]string
	cancel context.CancelFunc
	target *notifierTarget
}

var _ manager.LeaderElectionRunnable = (*Controller)(nil)

// New returns a Controller; add it to the manager with mgr.Add.
func New(cluster Cluster, opts Options) (*Controller, error) {
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Controller{cluster: cluster, opts: opts, metrics: m, workers: map[types.NamespacedName]*worker{}}, nil
}

// NeedLeaderElection: one replica speaks, the leader.
func (c *Controller) NeedLeaderElection() bool { return true }

// Start watches Syncs and Notifiers until ctx ends.
func (c *Controller) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	// Events carry whole seconds: one recorded in the second the Controller
	// started is told.
	c.started = time.Now().Truncate(time.Second)
	c.mu.Unlock()
	syncs, err := c.cluster.Cache.GetInformer(ctx, &v1alpha1.Sync{})
	if err != nil {
		return fmt.Errorf("watching Syncs for notifications: %w", err)
	}
	notifiers, err := c.cluster.Cache.GetInformer(ctx, &v1alpha1.Notifier{})
	if err != nil {
		return fmt.Errorf("watching Notifiers: %w", err)
	}
	if _, err := notifiers.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.notifierChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { c.notifierChanged(ctx, obj) },
		DeleteFunc: func(obj any) { c.notifierDeleted(obj) },
	}); err != nil {
		return err
	}
	if !c.cluster.Cache.WaitForCacheSync(ctx) {
		return ctx.Err()
	}
	if _, err := syncs.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(ctx, nil, asSync(obj)) },
		UpdateFunc: func(old, obj any) { c.observe(ctx, asSync(old), asSync(obj)) },
	}); err != nil {
		return err
	}
	if c.cluster.Events != nil {
		events, err := c.cluster.Events.GetInformer(ctx, &corev1.Event{})
		if err != nil {
			return fmt.Errorf("watching the Events of Syncs for notifications: %w", err)
		}
		if _, err := events.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.observeRecord(ctx, nil, asEvent(obj)) },
			UpdateFunc: func(old, obj any) { c.observeRecord(ctx, asEvent(old), asEvent(obj)) },
		}); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return nil
}

func asEvent(obj any) *corev1.Event {
	e, _ := obj.(*corev1.Event)
	return e
}

// observeRecord queues, for every chat or webhook Notifier that hears its
// Sync, what a Kubernetes Event recorded on a Sync tells of (EventOfRecord).
func (c *Controller) observeRecord(ctx context.Context, old, ev *corev1.Event) {
	if ev == nil {
		return
	}
	s := &v1alpha1.Sync{}
	key := client.ObjectKey{Namespace: ev.InvolvedObject.Namespace, Name: ev.InvolvedObject.Name}
	if err := c.cluster.Cache.Get(ctx, key, s); err != nil {
		return // a Sync gone, or not this agent's: nothing to tell
	}
	e, ok := EventOfRecord(old, ev, s, c.started)
	if !ok {
		return
	}
	var list v1alpha1.NotifierList
	if err := c.cluster.Cache.List(ctx, &list, client.InNamespace(s.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Notifiers", "namespace", s.Namespace)
		return
	}
	for i := range list.Items {
		nf := &list.Items[i]
		if nf.Spec.Suspend || !hears(nf, s) || nf.Spec.Type.IsCommitStatus() || nf.Spec.Type == v1alpha1.NotifierAlertmanager {
			continue
		}
		if w := c.worker(nf); w != nil {
			w.queue.AddEvents(filter([]Event{e}, nf.Spec.Severity)...)
		}
	}
}

func asSync(obj any) *v1alpha1.Sync {
	s, _ := obj.(*v1alpha1.Sync)
	return s
}

// observe queues, for every Notifier that hears cur, the events of the change
// from old and the levels cur asserts. It reads the cache and never blocks on a
// receiver.
func (c *Controller) observe(ctx context.Context, old, cur *v1alpha1.Sync) {
	if cur == nil || !cur.DeletionTimestamp.IsZero() {
		return
	}
	var list v1alpha1.NotifierList
	if err := c.cluster.Cache.List(ctx, &list, client.InNamespace(cur.Namespace)); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "listing Notifiers", "namespace", cur.Namespace)
		return
	}
	var events []Event
	if old != nil {
		events = EventsOf(old, cur, time.Now())
	}
	for i := range list.Items {
		nf := &list.Items[i]
		if nf.Spec.Suspend || !hears(nf, cur) {
			continue
		}
		w := c.worker(nf)
		if w == nil {
			return
		}
		switch {
		case nf.Spec.Type.IsCommitStatus():
			c.queueCommits(w, cur)
		case nf.Spec.Type == v1alpha1.NotifierAlertmanager:
			c.queueAlert(w, cur)
		default:
			w.queue.AddEvents(filter(events, nf.Spec.Severity)...)
		}
	}
}

// hears reports whether the Notifier's selector selects the Sync.
func hears(nf *v1alpha1.Notifier, s *v1alpha1.Sync) bool {
	if nf.Spec.Syncs == nil {
		return true
	}
	sel, err := metav1.LabelSelectorAsSelector(nf.Spec.Syncs)
	return err == nil && sel.Matches(labels.Set(s.Labels))
}

func filter(events []Event, sev v1alpha1.Severity) []Event {
	if sev != v1alpha1.SeverityError {
		return events
	}
	var out []Event
	for _, e := range events {
		if e.Severity == v1alpha1.SeverityError {
			out = append(out, e)
		}
	}
	return out
}

func (c *Controller) queueCommits(w *worker, s *v1alpha1.Sync) {
	for _, cm := range CommitsOf(s) {
		key := s.Name + "@" + cm.SHA
		if !w.changed(key, string(cm.State)) {
			continue
		}
		ns, name := s.Namespace, s.Name
		w.queue.AddLevel(Job{Key: key, Value: string(cm.State), Describe: name + ": " + string(cm.State) + " " + cm.SHA,
			Build: func(r Receiver) (Request, error) { return CommitStatusRequest(r, ns, name, cm) }})
	}
}

func (c *Controller) queueAlert(w *worker, s *v1alpha1.Sync) {
	a := AlertOf(s)
	value := "resolved"
	if a.Firing {
		value = "firing " + a.Reason
	}
	// A Sync never seen failing has no alert to resolve: say nothing of it.
	if !a.Firing && !w.seen(s.Name) {
		return
	}
	if !w.changed(s.Name, value) {
		return
	}
	ns, name := s.Namespace, s.Name
	w.queue.AddLevel(Job{Key: s.Name, Value: value, Describe: name + ": " + value,
		Build: func(r Receiver) (Request, error) { return AlertRequest(r, ns, name, a, time.Now()) }})
}

// changed records value as the level of key and reports whether it differs
// from the one queued before.
func (w *worker) changed(key, value string) bool {
	w.target.mu.Lock()
	defer w.target.mu.Unlock()
	if w.sent[key] == value {
		return false
	}
	w.sent[key] = value
	return true
}

func (w *worker) seen(key string) bool {
	w.target.mu.Lock()
	defer w.target.mu.Unlock()
	_, ok := w.sent[key]
	return ok
}

// forget drops a level whose delivery was given up, so the next change of its
// Sync queues it again.
func (w *worker) forget(key, value string) {
	w.target.mu.Lock()
	defer w.target.mu.Unlock()
	if w.sent[key] == value {
		delete(w.sent, key)
	}
}

// worker returns the Notifier's worker, started on first use.
func (c *Controller) worker(nf *v1alpha1.Notifier) *worker {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil || c.ctx.Err() != nil {
		return nil
	}
	key := types.NamespacedName{Namespace: nf.Namespace, Name: nf.Name}
	if w, ok := c.workers[key]; ok {
		return w
	}
	ctx, cancel := context.WithCancel(c.ctx)
	t := &notifierTarget{c: c, key: key}
	w := &worker{sent: map[string]string{}, cancel: cancel, target: t}
	t.w = w
	w.queue = NewQueue(t, c.opts.Queue)
	c.workers[key] = w
	go w.queue.Run(ctx)
	return w
}

func (c *Controller) notifierDeleted(obj any) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	nf, ok := obj.(*v1alpha1.Notifier)
	if !ok {
		return
	}
	key := types.NamespacedName{Namespace: nf.Namespace, Name: nf.Name}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w, ok := c.workers[key]; ok {
		w.cancel()
		delete(c.workers, key)
	}
	c.metrics.forget(nf.Namespace, nf.Name)
}

// notifierChanged checks a Notifier whose spec is new to its status (it reads
// its Secrets and parses its address), and says so in its Ready condition.
func (c *Controller) notifierChanged(ctx context.Context, obj any) {
	nf, ok := obj.(*v1alpha1.Notifier)
	if !ok || nf.Status.ObservedGeneration == nf.Generation {
		return
	}
	go func() {
		_, _, err := ResolveReceiver(ctx, c.cluster.Secrets, nf)
		c.patchStatus(ctx, types.NamespacedName{Namespace: nf.Namespace, Name: nf.Name}, func(st *v1alpha1.NotifierStatus, gen int64) {
			st.ObservedGeneration = gen
			setReady(st, gen, err)
		})
	}()
}

// Condition reasons of a Notifier's Ready condition.
const (
	ReasonConfigured     = "Configured"
	ReasonInvalid        = "Invalid"
	ReasonDeliveryFailed = "DeliveryFailed"
)

func setReady(st *v1alpha1.NotifierStatus, gen int64, err error) {
	c := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: ReasonConfigured, ObservedGeneration: gen,
		Message: "the receiver is configured; deliveries succeed"}
	if err != nil {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonInvalid, firstLine(err.Error())
	}
	meta.SetStatusCondition(&st.Conditions, c)
}

// patchStatus reads the Notifier from the cache, lets edit change its status,
// and writes it with a merge patch.
func (c *Controller) patchStatus(ctx context.Context, key types.NamespacedName, edit func(*v1alpha1.NotifierStatus, int64)) {
	nf := &v1alpha1.Notifier{}
	if err := c.cluster.Cache.Get(ctx, key, nf); err != nil {
		return
	}
	orig := nf.DeepCopy()
	edit(&nf.Status, nf.Generation)
	if err := c.cluster.Status.Status().Patch(ctx, nf, client.MergeFrom(orig)); err != nil && ctx.Err() == nil {
		ctrl.LoggerFrom(ctx).Error(err, "writing a Notifier's status", "notifier", key.String())
	}
}

// notifierTarget is a worker's Target: the Notifier as it is when a delivery is
// made, and where its outcomes go.
type notifierTarget struct {
	c   *Controller
	key types.NamespacedName
	w   *worker

	mu        gosync.Mutex
	ca, proxy string
	sender    *Sender
	failures  int64
}

var _ Target = (*notifierTarget)(nil)

func (t *notifierTarget) Resolve(ctx context.Context) (Receiver, *Sender, error) {
	nf := &v1alpha1.Notifier{}
	if err := t.c.cluster.Cache.Get(ctx, t.key, nf); err != nil {
		return Receiver{}, nil, fmt.Errorf("reading Notifier %s: %w", t.key, err)
	}
	r, ca, err := ResolveReceiver(ctx, t.c.cluster.Secrets, nf)
	if err != nil {
		return Receiver{}, nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sender == nil || t.ca != string(ca) || t.proxy != r.Proxy {
		s, err := NewSender(t.c.opts.Sender, ca, r.Proxy)
		if err != nil {
			return Receiver{}, nil, fmt.Errorf("Notifier %s: %w", t.key, err)
		}
		t.sender, t.ca, t.proxy = s, string(ca), r.Proxy
	}
	return r, t.sender, nil
}

func (t *notifierTarget) Report(ctx context.Context, o Outcome) {
	t.c.metrics.observe(t.key.Namespace, t.key.Name, o.Err)
	if o.Err != nil {
		ctrl.LoggerFrom(ctx).Info("notification not delivered", "notifier", t.key.String(), "event", o.Describe, "reason", o.Err.Error())
		if o.Key != "" {
			t.w.forget(o.Key, o.Value)
		}
		t.mu.Lock()
		t.failures++
		t.mu.Unlock()
	}
	if o.Err == nil && !o.Idle {
		return
	}
	t.mu.Lock()
	failures := t.failures
	t.mu.Unlock()
	t.c.patchStatus(ctx, t.key, func(st *v1alpha1.NotifierStatus, gen int64) {
		d := &v1alpha1.Delivery{Time: metav1.NewTime(o.Time), Event: truncate(o.Describe, 512), Result: v1alpha1.DeliveryDelivered}
		c := metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: ReasonConfigured, ObservedGeneration: gen,
			Message: "the last delivery succeeded"}
		if o.Err != nil {
			d.Result, d.Message = v1alpha1.DeliveryFailed, truncate(o.Err.Error(), 1024)
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonDeliveryFailed, d.Message
		}
		st.LastDelivery, st.Failures, st.ObservedGeneration = d, failures, gen
		meta.SetStatusCondition(&st.Conditions, c)
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}
