package sync

import (
	"cmp"
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestDependentsAreReadFromAnIndexNotTheWholeFleet(t *testing.T) {
	cfg := controlplane.Shared(t).Config()
	controlplane.InstallCRDs(t, cfg, filepath.Join("..", "deploy", "base", "crd"))
	scheme := runtime.NewScheme()
	harness.Must(t, v1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	harness.Must(t, err)
	harness.Must(t, indexDependencies(t.Context(), mgr.GetFieldIndexer()))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		harness.Must(t, <-done)
	})

	// A fleet: a platform Sync, one app that depends on it (named without a
	// namespace), one in another namespace that names it with its namespace,
	// and Syncs that depend on nothing.
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(t, err)
	ns, other := controlplane.NewNamespace(t, cfg), controlplane.NewNamespace(t, cfg)
	newSync := func(ns, name string, deps ...v1alpha1.DependencyReference) {
		s := &v1alpha1.Sync{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1alpha1.SyncSpec{
				Source:    v1alpha1.SourceSpec{URL: "https://git.example.com/deploy.git", Ref: v1alpha1.GitRef{Branch: "main"}},
				DependsOn: deps,
			},
		}
		harness.Must(t, c.Create(t.Context(), s))
	}
	newSync(ns, "platform")
	newSync(ns, "app", v1alpha1.DependencyReference{Name: "platform"})
	newSync(other, "tenant", v1alpha1.DependencyReference{Namespace: ns, Name: "platform"})
	newSync(other, "platform") // the same name elsewhere: not a dependency
	for _, name := range []string{"team-a", "team-b", "team-c"} {
		newSync(ns, name)
	}

	syncs := &listCounter{Client: mgr.GetClient()}
	r := &Reconciler{Cluster: Cluster{Syncs: syncs}}
	harness.Eventually(t, time.Minute, "the cache to hold the fleet", func(ctx context.Context) (bool, error) {
		var here, there v1alpha1.SyncList
		if err := mgr.GetClient().List(ctx, &here, client.InNamespace(ns)); err != nil {
			return false, err
		}
		if err := mgr.GetClient().List(ctx, &there, client.InNamespace(other)); err != nil {
			return false, err
		}
		return len(here.Items) == 5 && len(there.Items) == 2, nil
	})

	syncs.listed = 0
	got := r.dependents(t.Context(), &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"}})
	want := []ctrl.Request{
		{NamespacedName: types.NamespacedName{Namespace: ns, Name: "app"}},
		{NamespacedName: types.NamespacedName{Namespace: other, Name: "tenant"}},
	}
	byName := func(a, b ctrl.Request) int { return cmp.Compare(a.String(), b.String()) }
	slices.SortFunc(got, byName)
	slices.SortFunc(want, byName)
	if !slices.Equal(got, want) {
		t.Errorf("dependents of platform = %v, want %v", got, want)
	}
	if syncs.listed != len(want) {
		t.Errorf("dependents read %d Syncs from the cache, want only the %d dependents: every readiness change of a fleet's first sync would copy the whole fleet", syncs.listed, len(want))
	}

	syncs.listed = 0
	if got := r.dependents(t.Context(), &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-a"}}); len(got) != 0 || syncs.listed != 0 {
		t.Errorf("a Sync nothing depends on: dependents %v after reading %d Syncs, want none after reading none", got, syncs.listed)
	}
}

// listCounter counts the Syncs that List returns.
type listCounter struct {
	client.Client
	listed int
}

func (c *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	err := c.Client.List(ctx, list, opts...)
	if l, ok := list.(*v1alpha1.SyncList); ok {
		c.listed += len(l.Items)
	}
	return err
}
