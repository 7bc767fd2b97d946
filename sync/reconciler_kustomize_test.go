package sync_test

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

const kustomizeDeployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "ghcr.io/acme/web:1.0"}]
      volumes: [{name: config, configMap: {name: web-config}}]
`

// TestKustomizeOnTopOfTheRender: a Sync's spec.kustomize (a name prefix, an
// image override and a patch) is put on the objects its path renders before
// they are applied; a new prefix applies the objects under their new names and
// prunes the old ones; a patch that does not apply stalls the Sync naming
// spec.kustomize, the objects applied before kept.
func TestKustomizeOnTopOfTheRender(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "kustomize-fields")
	commit := repo.Commit(t, map[string]string{
		"apps/deployment.yaml": kustomizeDeployment,
		"apps/config.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {color: red}\n",
	}, "a Deployment and its ConfigMap")
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
		// A new prefix takes every object out of git under its old name:
		// over the default prune limit (50%) until the next interval.
		all := intstr.FromString("100%")
		s.Spec.PruneLimit = &all
		s.Spec.Kustomize = &v1alpha1.Kustomize{
			NamePrefix: "a-",
			Images:     []v1alpha1.KustomizeImage{{Name: "ghcr.io/acme/web", NewTag: "2.0"}},
			Patches:    []v1alpha1.KustomizePatch{{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {color: blue}\n"}},
		}
	})
	removeWhenDone(t, a, s)

	t.Run("applies the objects renamed, their image overridden, patched", func(t *testing.T) {
		a.WaitApplied(t, s, commit)
		checkKustomized(t, a, ns, "a-")
		for _, name := range []string{"web", "web-config"} {
			if err := a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: name}, &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
				t.Errorf("ConfigMap %s, unprefixed: %v; want it never applied", name, err)
			}
		}
	})

	t.Run("a new prefix applies the objects under their new names and prunes the old ones", func(t *testing.T) {
		gen := updateKustomize(t, a, s, func(k *v1alpha1.Kustomize) { k.NamePrefix = "b-" })
		a.WaitFor(t, s, "Ready at generation", func(s *v1alpha1.Sync) bool { return s.Status.ObservedGeneration >= gen && rig.IsReady(s) })
		checkKustomized(t, a, ns, "b-")
		harness.Eventually(t, waitTimeout, "a-web and a-web-config pruned", func(ctx context.Context) (bool, error) {
			errD := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-web"}, &appsv1.Deployment{})
			errC := a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "a-web-config"}, &corev1.ConfigMap{})
			return apierrors.IsNotFound(errD) && apierrors.IsNotFound(errC), nil
		})
	})

	t.Run("a patch that does not apply stalls the Sync naming spec.kustomize; the objects stay", func(t *testing.T) {
		gen := updateKustomize(t, a, s, func(k *v1alpha1.Kustomize) {
			k.Patches = append(k.Patches, v1alpha1.KustomizePatch{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\ndata: {a: b}\n"})
		})
		got := a.WaitFor(t, s, "Stalled at generation", func(s *v1alpha1.Sync) bool {
			return s.Status.ObservedGeneration >= gen && apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
		})
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.StalledCondition)
		if c.Reason != v1alpha1.ReasonRenderFailed || !strings.Contains(c.Message, "apps: spec.kustomize") || !strings.Contains(c.Message, "gone") {
			t.Errorf("Stalled %s %q; want %s naming apps, spec.kustomize and the patch's ConfigMap gone", c.Reason, c.Message, v1alpha1.ReasonRenderFailed)
		}
		checkKustomized(t, a, ns, "b-")
	})

	t.Run("spec.source.directory leaving a file out prunes its object", func(t *testing.T) {
		var gen int64
		harness.Eventually(t, waitTimeout, "the Sync updated", func(ctx context.Context) (bool, error) {
			live := &v1alpha1.Sync{}
			if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
				return false, err
			}
			live.Spec.Kustomize.Patches = live.Spec.Kustomize.Patches[:1]
			live.Spec.Source.Directory = &v1alpha1.DirectorySpec{Exclude: "deployment.yaml"}
			if err := a.Client.Update(ctx, live); err != nil {
				return false, nil
			}
			gen = live.Generation
			return true, nil
		})
		a.WaitFor(t, s, "Ready at generation", func(s *v1alpha1.Sync) bool { return s.Status.ObservedGeneration >= gen && rig.IsReady(s) })
		harness.Eventually(t, waitTimeout, "b-web pruned", func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(a.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "b-web"}, &appsv1.Deployment{})), nil
		})
		harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: "b-web-config"}, &corev1.ConfigMap{}))
	})
}

// checkKustomized checks the Deployment and ConfigMap applied under prefix:
// the image's new tag, the Deployment mounting the renamed ConfigMap, the
// ConfigMap patched.
func checkKustomized(t *testing.T, a *agent, ns, prefix string) {
	t.Helper()
	d := &appsv1.Deployment{}
	harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: prefix + "web"}, d))
	if got := d.Spec.Template.Spec.Containers[0].Image; got != "ghcr.io/acme/web:2.0" {
		t.Errorf("image %s; want ghcr.io/acme/web:2.0", got)
	}
	if got := d.Spec.Template.Spec.Volumes[0].ConfigMap.Name; got != prefix+"web-config" {
		t.Errorf("the Deployment mounts ConfigMap %s; want %sweb-config", got, prefix)
	}
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: prefix + "web-config"}, cm))
	if cm.Data["color"] != "blue" {
		t.Errorf("ConfigMap %sweb-config holds %v; want the patch's color blue", prefix, cm.Data)
	}
}

// updateKustomize changes s's spec.kustomize and returns the generation
// that holds the change.
func updateKustomize(t *testing.T, a *agent, s *v1alpha1.Sync, change func(*v1alpha1.Kustomize)) int64 {
	t.Helper()
	var gen int64
	harness.Eventually(t, waitTimeout, "the Sync updated", func(ctx context.Context) (bool, error) {
		live := &v1alpha1.Sync{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), live); err != nil {
			return false, err
		}
		change(live.Spec.Kustomize)
		if err := a.Client.Update(ctx, live); err != nil {
			return false, nil
		}
		gen = live.Generation
		return true, nil
	})
	return gen
}
