package sync_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// fluxFile reads one of Flux's own examples of post-build substitution, kept
// byte for byte in source/substitute/testdata/flux (its README names the source).
func fluxFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../source/substitute/testdata/flux/" + name)
	harness.Must(t, err)
	return string(data)
}

// TestPostBuildSubstitutesAsFlux: a repository written for Flux, its
// variables in a ConfigMap and a Secret of the Sync's namespace, is applied
// as Flux documents its output; an object that opts out keeps its ${};
// strict mode names the object and the variable it misses; the Secret's
// value appears nowhere in the status or the Events.
func TestPostBuildSubstitutesAsFlux(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	const token = "s3cr3t-t0ken-from-a-secret"
	harness.Must(t, a.Client.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars", Namespace: ns},
		Data:       map[string]string{"cluster_region": "eu-central-1"},
	}))
	harness.Must(t, a.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-secret-vars", Namespace: ns},
		Data:       map[string][]byte{"token": []byte(token)},
	}))
	repo := gitserver.NewLocalRepo(t, "flux-vars")
	first := repo.Commit(t, map[string]string{
		// Flux's example, byte for byte: a Namespace named apps.
		"apps/namespace.yaml": fluxFile(t, "namespace.yaml"),
		// Flux's Secret example, in the test's namespace.
		"apps/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: secret\ntype: Opaque\nstringData:\n  token: ${token}\n",
		// A script that opts out: strict mode would refuse its ${HOME}.
		"apps/script.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: script\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\ndata:\n  run.sh: echo ${HOME}\n",
	}, "a repository written for Flux")
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
		// The test polls git every two seconds; the Namespace apps it creates
		// is left behind rather than waited for (no namespace controller runs).
		s.Spec.Source.Interval = &metav1.Duration{Duration: 2 * time.Second}
		s.Spec.DeletionPolicy = v1alpha1.DeletionPolicyOrphan
		s.Spec.PostBuild = &v1alpha1.PostBuild{
			Strict: true,
			SubstituteFrom: []v1alpha1.SubstituteReference{
				{Kind: "ConfigMap", Name: "cluster-vars"},
				{Kind: "ConfigMap", Name: "not-there", Optional: true},
				{Kind: "Secret", Name: "cluster-secret-vars"},
			},
		}
	})
	removeWhenDone(t, a, s)

	t.Run("applies the objects as Flux documents their output", func(t *testing.T) {
		a.WaitApplied(t, s, first)
		var want map[string]any
		harness.Must(t, yaml.Unmarshal([]byte(fluxFile(t, "namespace.out.yaml")), &want))
		wantLabels := (&unstructured.Unstructured{Object: want}).GetLabels()
		live := &corev1.Namespace{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Name: "apps"}, live))
		for k, v := range wantLabels {
			if live.Labels[k] != v {
				t.Errorf("Namespace apps label %s = %q, want %q (Flux's documented output)", k, live.Labels[k], v)
			}
		}
		secret := &corev1.Secret{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "secret"}, secret))
		if got := string(secret.Data["token"]); got != token {
			t.Errorf("Secret token = %q, want the value of the Secret's variable", got)
		}
	})

	t.Run("an object with the opt-out annotation keeps its ${}", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "script"}, cm))
		if got := cm.Data["run.sh"]; got != "echo ${HOME}" {
			t.Errorf("run.sh = %q, want echo ${HOME} kept", got)
		}
	})

	t.Run("strict mode names the object and the missing variable; nothing more is applied", func(t *testing.T) {
		commit := repo.Commit(t, map[string]string{
			"apps/zone.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: zone\ndata:\n  zone: ${cluster_zone}\n  token: ${token}\n",
		}, "a variable nobody set")
		got := a.WaitFor(t, s, "Stalled at "+commit, func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.SourceRevision, commit) && apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
		})
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)
		if c.Reason != v1alpha1.ReasonSubstitutionFailed {
			t.Errorf("reason %s, want %s", c.Reason, v1alpha1.ReasonSubstitutionFailed)
		}
		if !strings.Contains(c.Message, "ConfigMap/zone") || !strings.Contains(c.Message, `"cluster_zone"`) {
			t.Errorf("Stalled message %q, want it to name ConfigMap/zone and cluster_zone", c.Message)
		}
		if !strings.HasSuffix(got.Status.LastAppliedRevision, first) {
			t.Errorf("the last good state moved: %s", harness.Describe(got))
		}
		var events []string
		harness.Eventually(t, waitTimeout, "the Warning Event", func(context.Context) (bool, error) {
			events = append(events, a.events()...)
			for _, e := range events {
				if strings.HasPrefix(e, corev1.EventTypeWarning+" "+v1alpha1.ReasonSubstitutionFailed) {
					return true, nil
				}
			}
			return false, nil
		})
		for _, e := range events {
			if strings.Contains(e, token) {
				t.Errorf("an Event holds the Secret's value: %s", e)
			}
		}
	})

	t.Run("inline values override substituteFrom and fill what strict mode missed", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "the Sync updated", func(ctx context.Context) (bool, error) {
			live := &v1alpha1.Sync{}
			if err := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: s.Name}, live); err != nil {
				return false, err
			}
			live.Spec.PostBuild.Substitute = map[string]string{"cluster_zone": "b", "cluster_region": "us-east-1"}
			return a.Client.Update(ctx, live) == nil, nil
		})
		a.WaitApplied(t, s, repo.Head(t))
		zone := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "zone"}, zone))
		if zone.Data["zone"] != "b" || zone.Data["token"] != token {
			t.Errorf("ConfigMap zone holds %v, want zone b and the Secret's token", zone.Data)
		}
		live := &corev1.Namespace{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Name: "apps"}, live))
		if live.Labels["region"] != "us-east-1" {
			t.Errorf("Namespace apps region = %q, want the inline us-east-1 over the ConfigMap's", live.Labels["region"])
		}
	})

	t.Run("a ConfigMap gone: VariablesNotFound naming it, the objects kept", func(t *testing.T) {
		harness.Must(t, a.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars", Namespace: ns}}))
		got := a.WaitFor(t, s, "VariablesNotFound", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			return c != nil && c.Reason == v1alpha1.ReasonVariablesNotFound
		})
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.SourceReadyCondition)
		if !strings.Contains(c.Message, "ConfigMap "+ns+"/cluster-vars") {
			t.Errorf("SourceReady message %q, want it to name the ConfigMap", c.Message)
		}
		zone := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "zone"}, zone))
		if zone.Data["zone"] != "b" {
			t.Errorf("the applied objects changed: %v", zone.Data)
		}
	})

	t.Run("the Secret's value is in no status", func(t *testing.T) {
		live := &v1alpha1.Sync{}
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: s.Name}, live))
		status, err := yaml.Marshal(live.Status)
		harness.Must(t, err)
		if strings.Contains(string(status), token) {
			t.Errorf("the status holds the Secret's value:\n%s", status)
		}
	})
}
