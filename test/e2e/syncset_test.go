package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// stateConfig is a ConfigMap whose health the Syncs' CEL check reads from its
// state: "bad" is Degraded.
const stateConfig = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {state: %s, rev: %q}\n"

// TestASyncSetRollsARevisionOutStepByStep runs the real agent: a SyncSet makes a
// Sync per directory of a monorepo, rolls each commit out staging, then eu, then
// us, and halts when eu turns Degraded at the new commit, leaving us where it was.
func TestASyncSetRollsARevisionOutStepByStep(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "fleet")
	files := func(rev string, bad ...string) map[string]string {
		out := map[string]string{}
		for _, env := range []string{"staging", "eu", "us"} {
			state := "good"
			for _, b := range bad {
				if b == env {
					state = "bad"
				}
			}
			out["apps/"+env+"/cm.yaml"] = fmt.Sprintf(stateConfig, env, state, rev)
		}
		return out
	}
	first := repo.Commit(t, files("1"), "three environments")
	startAgent(t)

	spec, err := json.Marshal(map[string]any{
		"source":      map[string]any{"url": repo.URL(), "path": "{{path}}", "interval": "2s"},
		"destination": map[string]any{"namespace": ns},
		"healthChecks": []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap", "current": "true",
			"failed": "has(self.data.state) && self.data.state == 'bad'"}},
	})
	harness.Must(t, err)
	ss := &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet"},
		Spec: v1alpha1.SyncSetSpec{
			Generators: []v1alpha1.SyncSetGenerator{{Git: &v1alpha1.GitGenerator{URL: repo.URL(),
				Interval: &metav1.Duration{Duration: 2 * time.Second}, Directories: []v1alpha1.GitDirectory{{Path: "apps/*"}}}}},
			Template: v1alpha1.SyncTemplate{
				Metadata: v1alpha1.SyncTemplateMeta{Name: "app-{{path.basename}}", Labels: map[string]string{"env": "{{path.basename}}"}},
				Spec:     apiextensionsv1.JSON{Raw: spec},
			},
			Strategy: &v1alpha1.SyncSetStrategy{RollingSync: &v1alpha1.RollingSyncStrategy{Steps: []v1alpha1.RollingSyncStep{
				{MatchLabels: map[string]string{"env": "staging"}},
				{MatchLabels: map[string]string{"env": "eu"}},
				{MatchLabels: map[string]string{"env": "us"}},
			}}},
		},
	}
	harness.Must(t, c.Create(t.Context(), ss))
	t.Cleanup(func() {
		// No garbage collector runs beside this control plane: the Syncs go by hand.
		ctx := context.WithoutCancel(t.Context())
		_ = c.Delete(ctx, ss)
		for _, env := range []string{"staging", "eu", "us"} {
			s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-" + env}}
			if err := c.Delete(ctx, s); client.IgnoreNotFound(err) == nil {
				waitGone(t, c, s)
			}
		}
	})

	rollout := func(t *testing.T, status metav1.ConditionStatus, reason string) *v1alpha1.SyncSet {
		t.Helper()
		got := &v1alpha1.SyncSet{}
		harness.Eventually(t, waitTimeout, "the SyncSet's Rollout "+string(status)+" ("+reason+")", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(ss), got); err != nil {
				return false, err
			}
			cond := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.RolloutCondition)
			if cond == nil {
				return false, fmt.Errorf("no Rollout condition yet")
			}
			if cond.Status == status && cond.Reason == reason {
				return true, nil
			}
			return false, fmt.Errorf("Rollout %s (%s): %s", cond.Status, cond.Reason, cond.Message)
		})
		return got
	}
	data := func(t *testing.T, env string) map[string]string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: env}, cm))
		return cm.Data
	}

	t.Run("the first commit reaches every step, one after the other", func(t *testing.T) {
		got := rollout(t, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		if got.Status.Syncs != 3 || got.Status.Rollout == nil || got.Status.Rollout.Revision != first {
			t.Errorf("status %+v; want 3 Syncs rolled out to %s", got.Status, first)
		}
		for _, env := range []string{"staging", "eu", "us"} {
			waitRevision(t, c, &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app-" + env}}, first)
		}
	})
	t.Run("a step Degraded at the new commit halts the steps after it", func(t *testing.T) {
		second := repo.Commit(t, files("2", "eu"), "eu breaks")
		got := rollout(t, metav1.ConditionFalse, v1alpha1.ReasonRolloutHalted)
		cond := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.RolloutCondition)
		if !strings.Contains(cond.Message, "app-eu") || got.Status.Rollout.Revision != second || got.Status.Rollout.Step != 2 {
			t.Errorf("Rollout %q at %+v; want step 2 of %s halted, naming app-eu", cond.Message, got.Status.Rollout, second)
		}
		if d := data(t, "staging"); d["rev"] != "2" {
			t.Errorf("staging holds revision %q; want 2", d["rev"])
		}
		if d := data(t, "eu"); d["state"] != "bad" {
			t.Errorf("eu holds state %q; want the bad commit applied", d["state"])
		}
		us := &v1alpha1.Sync{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "app-us"}, us))
		if d := data(t, "us"); d["rev"] != "1" || us.Annotations[v1alpha1.PinRevisionAnnotation] != first {
			t.Errorf("us holds revision %q, pinned to %q; want 1, pinned to %s", d["rev"], us.Annotations[v1alpha1.PinRevisionAnnotation], first)
		}
	})
}
