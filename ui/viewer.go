package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// viewer is the UI of one user: their config, a client that acts as them, the
// watch on the Syncs they may list and the broker that sends its changes to
// their open pages. `tether ui` serves one viewer, its caller; in a cluster
// (Options.InCluster) each signed-in user has their own, so that no user's
// pages show what only another may read.
type viewer struct {
	cfg    *rest.Config
	client client.Client
	cache  cache.Cache
	scope  scope
	user   string // as the API server knows them, "" when it would not say
	live   *broker
	stop   context.CancelFunc // ends the watch; nil before start
	// recount asks for the fleet's counts to be sent again (publishCounts);
	// one pending request stands for any number.
	recount chan struct{}
}

// countsEvery bounds how often the counts are sent: a burst of changes (the
// first list of a thousand Syncs) costs one count a second, not one a change.
const countsEvery = time.Second

// newViewer finds out which Syncs cfg's user may list (scope.go) and prepares
// the watch on them; it starts nothing.
func newViewer(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string, all bool, user string) (*viewer, error) {
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for %s: %w", cfg.Host, err)
	}
	sc, err := findScope(ctx, c, namespace, all)
	if err != nil {
		return nil, err
	}
	ca, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: sc.cacheNamespaces()})
	if err != nil {
		return nil, fmt.Errorf("creating the watch on Syncs: %w", err)
	}
	return &viewer{cfg: cfg, client: c, cache: ca, scope: sc, user: user, live: newBroker(), recount: make(chan struct{}, 1)}, nil
}

// start starts the watch on Syncs, which lasts until run ends or stop is
// called, and waits until it has listed them or wait ends; from then on each
// change is published to the viewer's open pages.
func (v *viewer) start(run, wait context.Context, log logr.Logger) error {
	run, v.stop = context.WithCancel(run)
	inf, err := v.cache.GetInformer(wait, &v1alpha1.Sync{})
	if err != nil {
		v.stop()
		return fmt.Errorf("watching Syncs: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { v.publishSync(obj, "sync") },
		UpdateFunc: func(_, obj any) { v.publishSync(obj, "sync") },
		DeleteFunc: func(obj any) { v.publishSync(obj, "gone") },
	})
	if err != nil {
		v.stop()
		return fmt.Errorf("watching Syncs: %w", err)
	}
	go func() {
		if err := v.cache.Start(run); err != nil {
			log.Error(err, "the watch on Syncs ended")
		}
	}()
	go v.publishCounts(run)
	if !v.cache.WaitForCacheSync(wait) {
		v.stop()
		return fmt.Errorf("listing Syncs: %w", context.Cause(wait))
	}
	return nil
}

// end stops the watch, if started, and closes the open pages' streams.
func (v *viewer) end() {
	if v.stop != nil {
		v.stop()
	}
	v.live.closeAll()
}

// publishSync sends a Sync's row as a server-sent event of type kind.
func (v *viewer) publishSync(obj any, kind string) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	sy, ok := obj.(*v1alpha1.Sync)
	if !ok {
		return
	}
	data, err := json.Marshal(rowOf(sy))
	if err != nil {
		return
	}
	v.live.publish(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", kind, data))
	select {
	case v.recount <- struct{}{}:
	default: // one is pending already
	}
}

// publishCounts sends the fleet's counts (of every Sync watched, as the fleet
// page counts them) as a server-sent event "counts", and each group's (each
// namespace's, SyncSet's and cluster's) as one "groupCounts" (groupCounts),
// after each change, at most once every countsEvery,
// until ctx ends.
func (v *viewer) publishCounts(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.recount:
		}
		list := &v1alpha1.SyncList{}
		if err := v.cache.List(ctx, list); err == nil {
			rows := make([]row, len(list.Items))
			for i := range list.Items {
				rows[i] = rowOf(&list.Items[i])
			}
			if data, err := json.Marshal(countRows(rows)); err == nil {
				v.live.publish(fmt.Appendf(nil, "event: counts\ndata: %s\n\n", data))
			}
			if data, err := json.Marshal(groupCounts(rows)); err == nil {
				v.live.publish(fmt.Appendf(nil, "event: groupCounts\ndata: %s\n\n", data))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(countsEvery):
		}
	}
}
