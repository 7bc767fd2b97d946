package sync_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/harness"
)

// warnings returns the Warning Events among events with reason.
func warnings(events []string, reason string) []string {
	var out []string
	for _, e := range events {
		if strings.HasPrefix(e, corev1.EventTypeWarning+" "+reason+" ") {
			out = append(out, e)
		}
	}
	return out
}

// TestEveryFailureIsOneWarningEvent drives a Sync through each class of failure and
// checks that each is told once, as a Warning Event whose reason is the Ready
// condition's and whose message names the file or the object at fault; a reconcile
// that meets the same failure again records nothing.
func TestEveryFailureIsOneWarningEvent(t *testing.T) {
	cases := []struct {
		name, reason string
		// files is the commit that fails (over threeConfigMaps).
		files map[string]string
		// mentions is what the message must name.
		mentions []string
	}{
		{"render", v1alpha1.ReasonRenderFailed, map[string]string{"apps/broken.yaml": "kind: [oops\n"}, []string{"Stalled", "apps/broken.yaml"}},
		{"render over a bound", v1alpha1.ReasonRenderLimitExceeded,
			map[string]string{"apps/flat.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flat}\nvalues: [" + strings.Repeat("1,", 140_000) + "1]\n"},
			[]string{"Stalled", "apps/flat.yaml", "YAML nodes"}},
		{"validation", v1alpha1.ReasonValidationFailed,
			map[string]string{"apps/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n"},
			[]string{"Stalled", "ConfigMap", "Not_A_Name"}},
		{"prune held by the limit", v1alpha1.ReasonPruneLimit, map[string]string{"apps/b.yaml": "", "apps/c.yaml": ""}, []string{"2 of 3 objects left git"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newPruneEnv(t, threeConfigMaps())
			e.a.events()
			e.push(t, tc.files)
			e.stalledBy(t, tc.reason)
			got := warnings(e.a.events(), tc.reason)
			if len(got) != 1 {
				t.Fatalf("%d Warning %s events, want 1: %q", len(got), tc.reason, got)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(got[0], m) {
					t.Errorf("event %q does not mention %q", got[0], m)
				}
			}
			// The next reconcile must read the failure from the cache, as a resync would.
			harness.Eventually(t, waitTimeout, "the manager's cache to see the failure", func(ctx context.Context) (bool, error) {
				cached := &v1alpha1.Sync{}
				err := e.a.Reconciler.Cluster.Syncs.Get(ctx, client.ObjectKeyFromObject(e.sync), cached)
				return readyReason(cached) == tc.reason, err
			})
			e.a.Reconcile(t, e.sync)
			if again := warnings(e.a.events(), tc.reason); len(again) != 0 {
				t.Errorf("the same failure recorded again: %q", again)
			}
		})
	}

	t.Run("fetch", func(t *testing.T) {
		e := newPruneEnv(t, threeConfigMaps())
		e.a.events()
		s := &v1alpha1.Sync{}
		harness.Must(t, e.a.Client.Get(t.Context(), client.ObjectKeyFromObject(e.sync), s))
		s.Spec.Source.Ref = v1alpha1.GitRef{Branch: "no-such-branch"}
		harness.Must(t, e.a.Client.Update(t.Context(), s))
		e.a.WaitFor(t, s, "Ready False for "+source.ReasonRefNotFound, func(s *v1alpha1.Sync) bool {
			return readyReason(s) == source.ReasonRefNotFound
		})
		got := warnings(e.a.events(), source.ReasonRefNotFound)
		if len(got) != 1 || !strings.Contains(got[0], "no-such-branch") {
			t.Errorf("Warning %s events %q, want one naming the branch", source.ReasonRefNotFound, got)
		}
	})
}

func readyReason(s *v1alpha1.Sync) string {
	for _, c := range s.Status.Conditions {
		if c.Type == v1alpha1.ReadyCondition && c.Status == metav1.ConditionFalse {
			return c.Reason
		}
	}
	return ""
}
