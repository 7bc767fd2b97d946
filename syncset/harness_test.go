package syncset_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"tether.dev/tether/agent"
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/syncset"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// waitTimeout guards every wait against hangs; it is not a performance assertion.
const waitTimeout = 90 * time.Second

// startController runs a manager with the SyncSet controller, wired as `tether
// controller` wires it (the agent's manager options, Source and client), until the
// test ends, and returns a plain client for the test and a fresh namespace.
func startController(t *testing.T) (client.Client, string) {
	t.Helper()
	cp := controlplane.Shared(t)
	cfg := cp.Config()
	controlplane.InstallCRDs(t, cfg, filepath.Join("..", "deploy", "base", "crd"))
	// The manager the agent runs the controller on (its scheme, its cache's
	// transform), with its listeners off.
	mgrOpts, err := agent.ManagerOptions(agent.DefaultOptions())
	harness.Must(t, err)
	mgrOpts.Metrics = metricsserver.Options{BindAddress: "0"}
	mgrOpts.HealthProbeBindAddress = "0"
	scheme := mgrOpts.Scheme
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	harness.Must(t, err)
	src, err := source.New(source.Options{CacheDir: t.TempDir()})
	harness.Must(t, err)
	opts := syncset.DefaultOptions()
	opts.SkipNameValidation = true
	harness.Must(t, (&syncset.Reconciler{Client: mgr.GetClient(), Source: src}).SetupWithManager(mgr, opts))
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	harness.Must(t, err)
	return c, controlplane.NewNamespace(t, cfg)
}

// newSyncSet is a SyncSet in ns whose template makes a Sync named by name, of
// the repository url at the path path (both may hold placeholders).
func newSyncSet(t *testing.T, ns, name, url, syncName, path string, gens ...v1alpha1.SyncSetGenerator) *v1alpha1.SyncSet {
	t.Helper()
	spec, err := json.Marshal(map[string]any{
		"source":      map[string]any{"url": url, "path": path, "interval": "1h"},
		"destination": map[string]any{"namespace": "default"},
	})
	harness.Must(t, err)
	return &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SyncSetSpec{
			Generators: gens,
			Template: v1alpha1.SyncTemplate{
				Metadata: v1alpha1.SyncTemplateMeta{Name: syncName},
				Spec:     apiextensionsv1.JSON{Raw: spec},
			},
		},
	}
}

// fast is a git generator interval short enough for a test to see new commits.
var fast = &metav1.Duration{Duration: time.Second}

func dirs(url string, globs ...v1alpha1.GitDirectory) v1alpha1.SyncSetGenerator {
	return v1alpha1.SyncSetGenerator{Git: &v1alpha1.GitGenerator{URL: url, Interval: fast, Directories: globs}}
}

func list(elements ...string) *v1alpha1.ListGenerator {
	g := &v1alpha1.ListGenerator{}
	for _, e := range elements {
		g.Elements = append(g.Elements, apiextensionsv1.JSON{Raw: []byte(e)})
	}
	return g
}

// syncsOf lists the Syncs of SyncSet name in ns by name.
func syncsOf(ctx context.Context, c client.Client, ns, name string) (map[string]v1alpha1.Sync, error) {
	l := &v1alpha1.SyncList{}
	if err := c.List(ctx, l, client.InNamespace(ns), client.MatchingLabels{v1alpha1.SyncSetLabel: name}); err != nil {
		return nil, err
	}
	out := map[string]v1alpha1.Sync{}
	for _, s := range l.Items {
		out[s.Name] = s
	}
	return out, nil
}

func names(syncs map[string]v1alpha1.Sync) []string {
	out := make([]string, 0, len(syncs))
	for n := range syncs {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// waitSyncs waits until SyncSet name has exactly the Syncs want, and returns them.
func waitSyncs(t *testing.T, c client.Client, ns, name string, want ...string) map[string]v1alpha1.Sync {
	t.Helper()
	sort.Strings(want)
	var got map[string]v1alpha1.Sync
	harness.Eventually(t, waitTimeout, "the Syncs of "+name+" to be "+joined(want), func(ctx context.Context) (bool, error) {
		var err error
		got, err = syncsOf(ctx, c, ns, name)
		return err == nil && joined(names(got)) == joined(want), err
	})
	return got
}

func joined(s []string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitCondition waits until the SyncSet's condition typ has status and reason,
// and returns the SyncSet.
func waitCondition(t *testing.T, c client.Client, ns, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha1.SyncSet {
	t.Helper()
	ss := &v1alpha1.SyncSet{}
	harness.Eventually(t, waitTimeout, name+" "+typ+"="+string(status)+" ("+reason+")", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ss); err != nil {
			return false, err
		}
		cond := apimeta.FindStatusCondition(ss.Status.Conditions, typ)
		return cond != nil && cond.Status == status && cond.Reason == reason && cond.ObservedGeneration == ss.Generation, nil
	})
	return ss
}
