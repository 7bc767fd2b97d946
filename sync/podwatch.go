package sync

import (
	"context"
	"errors"
	"slices"
	"strings"
	gosync "sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodWatch serves the pods of workloads that are not settled from watches, so that
// a workload stuck for an hour costs one LIST and one WATCH of its namespace's pods
// rather than a LIST at every reconcile. It keeps one informer per identity and
// namespace: started when a workload of that namespace first needs its pods, listed
// and watched as the identity (a Sync acting as an account sees only the pods the
// account may list and watch itself, never through the agent's rights), and stopped
// once no reconcile has asked for it for PodWatchOptions.Idle. An identity that may
// list pods but not watch them is answered by a LIST as before (podsOf), and its
// watch is not tried again for PodWatchOptions.RetryRefused.
//
// The informers keep of each pod only what health reads (name, labels, deletion,
// status): about a kilobyte a pod, and only in namespaces with a workload that
// is not settled.
type PodWatch struct {
	opts PodWatchOptions

	mu      gosync.Mutex
	ctx     context.Context // set by Start; nil until then
	watches map[podWatchKey]*podInformer
	refused map[podWatchKey]time.Time // when a watch was refused
}

// PodWatchOptions tune a PodWatch.
type PodWatchOptions struct {
	// Idle is how long an informer nobody asked for is kept: a few times the
	// requeue of a Sync whose objects are still rolling out.
	Idle time.Duration
	// Sync is how long a first ask waits for its informer's first list before it
	// lists pods itself.
	Sync time.Duration
	// RetryRefused is how long an identity whose watch was refused is answered by
	// LISTs before its watch is tried again.
	RetryRefused time.Duration
}

// DefaultPodWatchOptions are the options `tether controller` runs with.
func DefaultPodWatchOptions() PodWatchOptions {
	return PodWatchOptions{Idle: time.Minute, Sync: 10 * time.Second, RetryRefused: 5 * time.Minute}
}

type podWatchKey struct{ user, namespace string }

// podInformer is the informer of one identity's pods in one namespace.
type podInformer struct {
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	refused  chan struct{} // closed when the watch was refused
	once     gosync.Once
	lastUsed time.Time
}

// errNoWatch says a PodWatch cannot answer: it has not started, or the identity
// may not watch pods there. The caller lists pods itself.
var errNoWatch = errors.New("pods are not watched")

// NewPodWatch returns a PodWatch; add it to the manager, which starts it.
func NewPodWatch(opts PodWatchOptions) *PodWatch {
	return &PodWatch{opts: opts, watches: map[podWatchKey]*podInformer{}, refused: map[podWatchKey]time.Time{}}
}

// Start runs until ctx ends, then stops every informer.
func (w *PodWatch) Start(ctx context.Context) error {
	w.mu.Lock()
	w.ctx = ctx
	w.mu.Unlock()
	<-ctx.Done()
	w.mu.Lock()
	defer w.mu.Unlock()
	for key, pi := range w.watches {
		pi.stop()
		delete(w.watches, key)
	}
	return nil
}

// NeedLeaderElection says that only the leader, which reconciles, watches pods.
func (w *PodWatch) NeedLeaderElection() bool { return true }

// Pods returns at most limit pods of namespace that selector matches, by name, from
// the informer of user's pods there (c lists and watches as user), started if need
// be. errNoWatch means the caller is to list them itself.
func (w *PodWatch) Pods(ctx context.Context, user string, c client.WithWatch, namespace string, selector labels.Selector, limit int) ([]*unstructured.Unstructured, error) {
	key := podWatchKey{user, namespace}
	pi, err := w.informerFor(key, c)
	if err != nil {
		return nil, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, w.opts.Sync)
	defer cancel()
	synced := cache.WaitForCacheSync(mergeDone(waitCtx, pi.refused), pi.informer.HasSynced)
	select {
	case <-pi.refused:
		w.refuse(key, pi)
		return nil, errNoWatch
	default:
	}
	if !synced {
		return nil, errNoWatch
	}
	var out []*unstructured.Unstructured
	for _, item := range pi.informer.GetStore().List() {
		if pod, ok := item.(*unstructured.Unstructured); ok && selector.Matches(labels.Set(pod.GetLabels())) {
			out = append(out, pod.DeepCopy())
		}
	}
	slices.SortFunc(out, func(a, b *unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
	return out[:min(len(out), limit)], nil
}

// informerFor returns the running informer of key, starting it if need be.
func (w *PodWatch) informerFor(key podWatchKey, c client.WithWatch) (*podInformer, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ctx == nil || w.ctx.Err() != nil {
		return nil, errNoWatch
	}
	now := time.Now()
	if at, ok := w.refused[key]; ok && now.Sub(at) < w.opts.RetryRefused {
		return nil, errNoWatch
	}
	delete(w.refused, key)
	if pi, ok := w.watches[key]; ok {
		pi.lastUsed = now
		return pi, nil
	}
	pi := w.start(key, c)
	pi.lastUsed = now
	w.watches[key] = pi
	return pi, nil
}

// start starts the informer of key's pods, and the timer that stops it when idle.
func (w *PodWatch) start(key podWatchKey, c client.WithWatch) *podInformer {
	ctx, stop := context.WithCancel(w.ctx)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("v1")
			list.SetKind("PodList")
			err := c.List(ctx, list, client.InNamespace(key.namespace), &client.ListOptions{Raw: &opts})
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("v1")
			list.SetKind("PodList")
			return c.Watch(ctx, list, client.InNamespace(key.namespace), &client.ListOptions{Raw: &opts})
		},
	}
	pod := &unstructured.Unstructured{}
	pod.SetAPIVersion("v1")
	pod.SetKind("Pod")
	pi := &podInformer{
		informer: cache.NewSharedIndexInformer(lw, pod, 0, cache.Indexers{}),
		stop:     stop,
		refused:  make(chan struct{}),
	}
	// Both fail only once the informer runs, and it has not started.
	_ = pi.informer.SetTransform(trimPod)
	_ = pi.informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			pi.once.Do(func() { close(pi.refused) })
		}
	})
	go pi.informer.RunWithContext(ctx)
	var idle func()
	idle = func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.watches[key] != pi {
			return
		}
		if left := w.opts.Idle - time.Since(pi.lastUsed); left > 0 {
			time.AfterFunc(left, idle)
			return
		}
		pi.stop()
		delete(w.watches, key)
	}
	time.AfterFunc(w.opts.Idle, idle)
	return pi
}

// refuse stops the informer of key, whose list or watch was refused, and
// remembers when.
func (w *PodWatch) refuse(key podWatchKey, pi *podInformer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watches[key] == pi {
		pi.stop()
		delete(w.watches, key)
	}
	w.refused[key] = time.Now()
}

// Watching reports how many informers run.
func (w *PodWatch) Watching() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.watches)
}

// mergeDone is a channel closed when ctx ends or done is closed.
func mergeDone(ctx context.Context, done <-chan struct{}) <-chan struct{} {
	out := make(chan struct{})
	go func() {
		defer close(out)
		select {
		case <-ctx.Done():
		case <-done:
		}
	}()
	return out
}

// trimPod keeps of a pod what health reads of it: its name, namespace, labels,
// deletion and status (phase, conditions, container states).
func trimPod(obj any) (any, error) {
	pod, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}
	out.SetName(pod.GetName())
	out.SetNamespace(pod.GetNamespace())
	out.SetUID(pod.GetUID())
	out.SetResourceVersion(pod.GetResourceVersion())
	out.SetLabels(pod.GetLabels())
	out.SetDeletionTimestamp(pod.GetDeletionTimestamp())
	if status, ok := pod.Object["status"]; ok {
		out.Object["status"] = status
	}
	return out, nil
}
