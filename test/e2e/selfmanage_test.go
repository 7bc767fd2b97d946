package e2e

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestTetherManagesItself installs deploy/install.yaml, then creates a Sync of a git
// repository that holds a copy of deploy/base and deploy/default, as a user who
// lets Tether manage its own install does (docs/self-management.md). The Sync adopts
// the install without deleting or recreating anything or changing the Deployment's
// spec (so nothing rolls); an image tag changed in git rolls the Deployment's spec;
// objects that leave git are pruned, but not the namespace, CRD and RBAC that keep
// Tether running, until a commit lifts their protection and a later one removes them.
func TestTetherManagesItself(t *testing.T) {
	c := newClient(t)
	in := applyInstall(t, "install.yaml")
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "tether-install")
	files := deployCopy(t)
	first := repo.Commit(t, files, "Tether's install, as released")
	before := liveUIDs(t, c, in)
	deployment := &appsv1.Deployment{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: agentNamespace, Name: "tether"}, deployment))

	r := startReplica(t, in)
	s := gitSync(agentNamespace, "e2e-tether", repo.URL(), "deploy/default", time.Hour)
	s.Spec.Destination.Namespace = agentNamespace
	harness.Must(t, c.Create(t.Context(), s))
	t.Cleanup(func() {
		// Orphan: what the Sync applied is the install, which applyInstall removes.
		ctx := context.WithoutCancel(t.Context())
		patch := []byte(`{"spec":{"deletionPolicy":"Orphan"}}`)
		if err := c.Patch(ctx, s, client.RawPatch(types.MergePatchType, patch)); err == nil && c.Delete(ctx, s) == nil {
			// t.Context() is done by now: wait for the finalizer on a context of its own.
			ctx, cancel := context.WithTimeout(ctx, waitTimeout)
			defer cancel()
			_ = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
				return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})), nil
			})
		}
	})

	t.Run("the Sync adopts the install: nothing deleted, recreated or rolled", func(t *testing.T) {
		got := waitForSync(t, c, s, "Ready at the install's commit", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+first && isReady(s)
		})
		if n := len(plan.Inventory(got.Status)); n != len(in.objects) {
			t.Errorf("inventory holds %d objects, want the install's %d", n, len(in.objects))
		}
		sameObjects(t, before, liveUIDs(t, c, in))
		for _, obj := range in.objects {
			live := liveObject(t, c, obj)
			if owner := live.GetAnnotations()[v1alpha1.OwnedByAnnotation]; owner != agentNamespace+"/e2e-tether" {
				t.Errorf("%s %s: owned-by %q, want it adopted by the Sync", obj.GetKind(), obj.GetName(), owner)
			}
		}
		// Its generation moves (the API server counts an annotation change of a
		// Deployment, which its ReplicaSets inherit), but its pods roll only when the
		// pod template changes.
		after := &appsv1.Deployment{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(deployment), after))
		if diff := cmp.Diff(deployment.Spec, after.Spec); diff != "" {
			t.Errorf("adopting the Deployment changed its spec (-before +after):\n%s", diff)
		}
		deployment = after
	})

	t.Run("an image tag changed in git rolls the Deployment's spec", func(t *testing.T) {
		kust := files["deploy/default/kustomization.yaml"] + "\nimages:\n  - name: ghcr.io/tether-dev/tether\n    newTag: v0.1.1\n"
		rev := repo.Commit(t, map[string]string{"deploy/default/kustomization.yaml": kust}, "tether v0.1.1")
		pushed(t, r.agent, repo)
		waitForSync(t, c, s, "Ready at the new tag", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+rev && isReady(s)
		})
		after := &appsv1.Deployment{}
		harness.Must(t, c.Get(t.Context(), client.ObjectKeyFromObject(deployment), after))
		if image := after.Spec.Template.Spec.Containers[0].Image; image != "ghcr.io/tether-dev/tether:v0.1.1" {
			t.Errorf("the Deployment runs %s, want ghcr.io/tether-dev/tether:v0.1.1", image)
		}
		if after.Generation <= deployment.Generation || after.UID != deployment.UID {
			t.Errorf("generation %d → %d, uid %s → %s: want a new generation of the same Deployment",
				deployment.Generation, after.Generation, deployment.UID, after.UID)
		}
		if diff := cmp.Diff(deployment.Spec, after.Spec); strings.Count(diff, "\n-") != 1 {
			t.Errorf("the new tag changed more than the image (-before +after):\n%s", diff)
		}
	})

	// What keeps Tether running; the PDB does not.
	vital := []string{"namespace.yaml", "crd/tether.dev_syncs.yaml", "rbac/controller_role.yaml", "rbac/controller_role_binding.yaml"}
	const watcher, pdb = "rbac/watcher_role.yaml", "pod_disruption_budget.yaml" // of base/controller
	// without returns the base's kustomizations without resources.
	without := func(resources ...string) map[string]string {
		out := map[string]string{}
		for _, file := range []string{"deploy/base/kustomization.yaml", "deploy/base/controller/kustomization.yaml"} {
			out[file] = files[file]
			for _, res := range resources {
				out[file] = strings.Replace(out[file], "  - "+res+"\n", "", 1)
			}
		}
		return out
	}

	t.Run("objects that leave git are pruned, but not what keeps Tether running", func(t *testing.T) {
		rev := repo.Commit(t, without(append(vital, watcher, pdb)...), "drop the namespace, the CRD, some RBAC and the PDB")
		pushed(t, r.agent, repo)
		waitForSync(t, c, s, "Ready after the removal", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+rev && isReady(s)
		})
		waitAbsent(t, c, "policy/v1", "PodDisruptionBudget", agentNamespace, "tether")
		sameObjects(t, before, liveUIDs(t, c, in), "PodDisruptionBudget/tether-system/tether")
		// Kept as they are, not orphaned: they still carry the Sync's mark, so a commit
		// that brings them back into git takes them back.
		for _, obj := range in.objects {
			if obj.GetKind() != "CustomResourceDefinition" && obj.GetKind() != "Namespace" && obj.GetName() != "tether-controller" {
				continue
			}
			if owner := liveObject(t, c, obj).GetAnnotations()[v1alpha1.OwnedByAnnotation]; owner != agentNamespace+"/e2e-tether" {
				t.Errorf("%s %s: owned-by %q after it left git; want it kept with the Sync's mark", obj.GetKind(), obj.GetName(), owner)
			}
		}
		r.running(t)
	})

	t.Run("a commit that lifts the protection, then one that removes the object, prunes it", func(t *testing.T) {
		lift := without(append(vital, pdb)...)
		lift["deploy/base/kustomization.yaml"] += `  - target: {kind: ClusterRole, name: tether-watcher}
    patch: |-
      - op: replace
        path: /metadata/annotations/tether.dev~1prune
        value: enabled
`
		rev := repo.Commit(t, lift, "tether-watcher may be pruned")
		pushed(t, r.agent, repo)
		waitForSync(t, c, s, "Ready with the protection lifted", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+rev && isReady(s)
		})
		rev = repo.Commit(t, without(append(vital, watcher, pdb)...), "remove tether-watcher")
		pushed(t, r.agent, repo)
		waitForSync(t, c, s, "Ready without tether-watcher", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+rev && isReady(s)
		})
		waitAbsent(t, c, "rbac.authorization.k8s.io/v1", "ClusterRole", "", "tether-watcher")
		sameObjects(t, before, liveUIDs(t, c, in), "PodDisruptionBudget/tether-system/tether", "ClusterRole//tether-watcher")
	})
}

// sameObjects fails t for every object of before, but those named by except, that
// is gone from after or was recreated (has another UID).
func sameObjects(t *testing.T, before, after map[string]types.UID, except ...string) {
	t.Helper()
	for key, uid := range before {
		switch {
		case slices.Contains(except, key):
		case after[key] == "":
			t.Errorf("%s was deleted", key)
		case after[key] != uid:
			t.Errorf("%s was recreated (uid %s → %s)", key, uid, after[key])
		}
	}
}

// deployCopy returns deploy/base and deploy/default as files of a repository, under
// deploy/.
func deployCopy(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	root := filepath.Join("..", "..")
	for _, dir := range []string{"deploy/base", "deploy/default"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			files[filepath.ToSlash(rel)] = string(data)
			return err
		})
		harness.Must(t, err)
	}
	return files
}

// liveUIDs maps "Kind/namespace/name" of every object of the install to its UID.
func liveUIDs(t *testing.T, c client.Client, in *install) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, obj := range in.objects {
		live := liveObject(t, c, obj)
		if live != nil {
			out[obj.GetKind()+"/"+obj.GetNamespace()+"/"+obj.GetName()] = live.GetUID()
		}
	}
	return out
}

// liveObject reads obj's metadata from the API server; nil if it does not exist.
func liveObject(t *testing.T, c client.Client, obj *unstructured.Unstructured) *metav1.PartialObjectMetadata {
	t.Helper()
	live := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: obj.GetAPIVersion(), Kind: obj.GetKind()}}
	err := c.Get(t.Context(), client.ObjectKeyFromObject(obj), live)
	if apierrors.IsNotFound(err) {
		return nil
	}
	harness.Must(t, err)
	return live
}

// waitAbsent waits until the object is gone.
func waitAbsent(t *testing.T, c client.Client, apiVersion, kind, ns, name string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, kind+" "+name+" is gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
