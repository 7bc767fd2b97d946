package sync_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

func TestAnIntervalBelowTheMinimumPollsAtTheMinimum(t *testing.T) {
	if testing.Short() {
		t.Skip("counts polls over a few seconds")
	}
	const window = 4 * time.Second // the harness's minimum interval is 1s
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	healthy, broken := git.CreateRepo(t, "healthy"), git.CreateRepo(t, "broken")
	first := healthy.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("fine", "hello")}, "fine")
	broken.Commit(t, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n"}, "broken")
	tight := func(name string) func(*v1alpha1.Sync) {
		return func(s *v1alpha1.Sync) {
			s.Name = name
			s.Spec.Source.Interval = &metav1.Duration{Duration: time.Millisecond}
		}
	}
	ready := a.newSync(t, ns, healthy.URL(), tight("ready"))
	stalled := a.newSync(t, ns, broken.URL(), tight("stalled"))
	removeWhenDone(t, a, ready, stalled)
	a.WaitApplied(t, ready, first)
	a.WaitFor(t, stalled, "Stalled", func(s *v1alpha1.Sync) bool {
		return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
	})

	before := map[string]int{"ready": healthy.Requests().RefListings, "stalled": broken.Requests().RefListings}
	time.Sleep(window) // counting polls over a stated window
	after := map[string]int{"ready": healthy.Requests().RefListings, "stalled": broken.Requests().RefListings}
	for name := range before {
		// One poll a second (jittered ±10%), and one more at an edge of the window.
		if n := after[name] - before[name]; n < 2 || n > 6 {
			t.Errorf("the %s Sync with interval 1ms listed refs %d times in %s; want about one a second", name, n, window)
		}
	}
}

// TestHostileRepositoriesStallAloneAndReachNothing runs the hostile repositories
// of the issue in one agent beside a healthy Sync: each is Stalled with
// RenderFailed naming the file at fault, no request reaches the server that
// stands for the cluster's network, and the healthy Sync keeps applying.
func TestHostileRepositoriesStallAloneAndReachNothing(t *testing.T) {
	var requests atomic.Int64
	metadata := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		_, _ = w.Write([]byte("instance-secret"))
	}))
	t.Cleanup(metadata.Close)
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})

	var aliases strings.Builder
	for i := range 400 {
		fmt.Fprintf(&aliases, "  k%d: *big\n", i)
	}
	cases := []struct{ name, file, reason, says string }{
		{"ssrf", "apps/kustomization.yaml", v1alpha1.ReasonRenderFailed, "configMapGenerator[0].files[0]"},
		{"amplify", "apps/cm.yaml", v1alpha1.ReasonRenderLimitExceeded, "too large"},
		{"generate-name", "apps/job.yaml", v1alpha1.ReasonRenderFailed, "only metadata.generateName"},
	}
	files := map[string]map[string]string{
		"ssrf": {"apps/kustomization.yaml": "configMapGenerator:\n- name: c\n  files: [\"" + metadata.URL + "/latest/meta-data\"]\n"},
		"amplify": {"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: amp}\nbig: &big " +
			strings.Repeat("y", 1<<20) + "\ndata:\n" + aliases.String()},
		"generate-name": {"apps/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: migrate-}\n"},
	}
	syncs := map[string]*v1alpha1.Sync{}
	for _, tc := range cases {
		git.CreateRepo(t, tc.name).Commit(t, files[tc.name], "hostile")
		syncs[tc.name] = a.newSync(t, ns, git.URL(tc.name), func(s *v1alpha1.Sync) { s.Name = tc.name })
	}
	healthy := git.CreateRepo(t, "healthy")
	first := healthy.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("fine", "hello")}, "fine")
	fine := a.newSync(t, ns, healthy.URL(), func(s *v1alpha1.Sync) { s.Name = "fine" })
	removeWhenDone(t, a, fine, syncs["ssrf"], syncs["amplify"], syncs["generate-name"])

	for _, tc := range cases {
		t.Run(tc.name+" is Stalled with "+tc.reason+" naming "+tc.file, func(t *testing.T) {
			got := a.WaitFor(t, syncs[tc.name], "Stalled", func(s *v1alpha1.Sync) bool {
				return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
			})
			c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)
			if c.Reason != tc.reason || !strings.Contains(c.Message, tc.file) || !strings.Contains(c.Message, tc.says) {
				t.Errorf("Stalled %s: %s; want %s naming %s and saying %q", c.Reason, c.Message, tc.reason, tc.file, tc.says)
			}
		})
	}
	t.Run("the healthy Sync beside them applies a push", func(t *testing.T) {
		a.WaitApplied(t, fine, first)
		second := healthy.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("fine", "bonjour")}, "push")
		requestReconcile(t, a, fine)
		a.WaitApplied(t, fine, second)
	})
	if n := requests.Load(); n != 0 {
		t.Errorf("the hostile repositories made %d requests to the cluster's network; want none", n)
	}
}

// removeWhenDone deletes the Syncs when the test ends, while its agent still runs,
// and waits until they are gone: an agent of a later test would otherwise find
// them in their terminating namespace and finalize them in the middle of its own
// measurements.
func removeWhenDone(t *testing.T, a *agent, syncs ...*v1alpha1.Sync) {
	t.Helper()
	t.Cleanup(func() {
		ctx := context.WithoutCancel(t.Context()) // the test's own context has ended
		for _, s := range syncs {
			if err := a.Client.Delete(ctx, s); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting Sync %s: %v", s.Name, err)
			}
		}
		for _, s := range syncs {
			harness.Eventually(t, waitTimeout, "Sync "+s.Name+" is gone", func(ctx context.Context) (bool, error) {
				err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
				return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
			})
		}
	})
}
