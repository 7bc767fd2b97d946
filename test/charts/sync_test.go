package charts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/agentbin"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// waitTimeout bounds each wait for the agent: a guard against hangs, not a
// performance assertion (on a loaded 2-core machine a step takes seconds).
const waitTimeout = 3 * time.Minute

// TestASyncOfTraefikAppliesTheObjectsHelmTemplateLists: traefik's chart, as
// released, committed to a git repository and synced by the shipped agent
// into a real API server with a values file, leaves exactly the objects helm
// template renders with the same values and the capabilities the agent sees
// (the server's version and every API it serves): its 25 CRDs included, each
// object in the Sync's inventory and in the cluster.
func TestASyncOfTraefikAppliesTheObjectsHelmTemplateLists(t *testing.T) {
	helm := helmCLI(t)
	c := agentbin.Client(t)
	cp := controlplane.Shared(t)
	ns := controlplane.NewNamespace(t, cp.Config())
	r := release{name: "edge", namespace: ns, values: "deployment:\n  replicas: 2\n", caps: serverCapabilities(t)}

	chart := unpack(t, "traefik-41.3.0.tgz")
	writeValues(t, chart, r)
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "edge")
	commit := repo.Commit(t, treeFiles(t, chart, "charts/traefik"), "traefik 41.3.0 as released, and our values")
	want := helmTemplate(t, helm, chart, r)

	startAgent(t, cp.KubeconfigPath())
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "charts/traefik",
				Interval: &metav1.Duration{Duration: 2 * time.Second}},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
			Helm:        &v1alpha1.HelmSpec{ReleaseName: r.name, ValuesFiles: []string{valuesFile}},
		},
	}
	harness.Must(t, c.Create(t.Context(), s))
	t.Cleanup(func() { deleteSync(t, c, s) })

	got := &v1alpha1.Sync{}
	harness.Eventually(t, waitTimeout, "the Sync Ready at "+commit, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		ready := apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.ReadyCondition)
		if !ready || !strings.HasSuffix(got.Status.LastAppliedRevision, commit) {
			return false, fmt.Errorf("status: revision %q, conditions %+v", got.Status.LastAppliedRevision, got.Status.Conditions)
		}
		return true, nil
	})

	wantRefs := refsOf(t, c, want, ns)
	t.Run("the inventory is helm template's objects", func(t *testing.T) {
		gotRefs := refNames(v1alpha1.InventoryRefs(got.Status.Objects))
		if extra, missing := setDiff(gotRefs, wantRefs), setDiff(wantRefs, gotRefs); len(extra)+len(missing) > 0 {
			t.Errorf("the Sync's inventory differs from helm template's %d objects:\nonly in the inventory: %v\nonly in helm template: %v",
				len(wantRefs), extra, missing)
		}
		crds := 0
		for _, ref := range wantRefs {
			if strings.Contains(ref, " CustomResourceDefinition ") {
				crds++
			}
		}
		if crds != 25 {
			t.Errorf("helm template rendered %d CRDs, want traefik's 25", crds)
		}
	})

	t.Run("the values file reached the chart: the Deployment has 2 replicas, as helm template's", func(t *testing.T) {
		deployments := 0
		for k, obj := range want {
			if k.Kind != "Deployment" {
				continue
			}
			deployments++
			live := &unstructured.Unstructured{Object: map[string]any{"apiVersion": k.APIVersion, "kind": k.Kind}}
			harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: k.Name}, live))
			wantReplicas, _, _ := unstructured.NestedFloat64(obj, "spec", "replicas")
			gotReplicas, _, _ := unstructured.NestedInt64(live.Object, "spec", "replicas")
			if wantReplicas != 2 || gotReplicas != 2 {
				t.Errorf("%s: %d replicas live, %v in helm template, want 2", k, gotReplicas, wantReplicas)
			}
		}
		if deployments != 1 {
			t.Errorf("helm template rendered %d Deployments, want traefik's one", deployments)
		}
	})

	t.Run("each of them is in the cluster, applied by tether", func(t *testing.T) {
		for _, ref := range v1alpha1.InventoryRefs(got.Status.Objects) {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, live); err != nil {
				t.Errorf("%s: %v", refName(ref), err)
				continue
			}
			if owner := live.GetAnnotations()[v1alpha1.OwnedByAnnotation]; owner != ns+"/edge" {
				t.Errorf("%s: owned by %q, want %s/edge", refName(ref), owner, ns)
			}
		}
	})
}

// serverCapabilities is what the agent's charts see of the shared control
// plane: its version, and every group/version and group/version/Kind it
// serves, as helm's own client reads them.
func serverCapabilities(t *testing.T) capabilities {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(controlplane.Shared(t).Config())
	harness.Must(t, err)
	version, err := dc.ServerVersion()
	harness.Must(t, err)
	_, lists, err := dc.ServerGroupsAndResources()
	harness.Must(t, err)
	caps := capabilities{kubeVersion: version.GitVersion}
	for _, l := range lists {
		caps.apiVersions = append(caps.apiVersions, l.GroupVersion)
		for _, res := range l.APIResources {
			if !strings.Contains(res.Name, "/") {
				caps.apiVersions = append(caps.apiVersions, l.GroupVersion+"/"+res.Kind)
			}
		}
	}
	return caps
}

// refsOf is the identities of objs as the agent records them: a namespaced
// object that names no namespace lands in the Sync's destination namespace ns.
func refsOf(t *testing.T, c client.Client, objs objects, ns string) []string {
	t.Helper()
	var refs []string
	for k := range objs {
		gv, err := schema.ParseGroupVersion(k.APIVersion)
		harness.Must(t, err)
		ref := v1alpha1.ObjectRef{Group: gv.Group, Version: gv.Version, Kind: k.Kind, Namespace: k.Namespace, Name: k.Name}
		namespaced, err := c.IsObjectNamespaced(&unstructured.Unstructured{Object: objs[k]})
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		if !namespaced {
			ref.Namespace = ""
		} else if ref.Namespace == "" {
			ref.Namespace = ns
		}
		refs = append(refs, refName(ref))
	}
	slices.Sort(refs)
	return refs
}

func refNames(refs []v1alpha1.ObjectRef) []string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, refName(r))
	}
	slices.Sort(names)
	return names
}

func refName(r v1alpha1.ObjectRef) string {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}.String() + " " + r.Kind + " " + r.Namespace + "/" + r.Name
}

// setDiff is the elements of a that b lacks.
func setDiff(a, b []string) []string {
	var d []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			d = append(d, x)
		}
	}
	return d
}

// treeFiles reads the files under dir as a commit's files under prefix.
func treeFiles(t *testing.T, dir, prefix string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			// gitserver's Commit deletes a file given no content.
			return fmt.Errorf("%s is empty, which the test's repository cannot commit", rel)
		}
		files[prefix+"/"+filepath.ToSlash(rel)] = string(data)
		return nil
	})
	harness.Must(t, err)
	return files
}

// startAgent runs the shipped binary as the agent, at its default flags but
// for its addresses, cache and a short minimum interval, until the test ends;
// it prints the agent's log if the test failed.
func startAgent(t *testing.T, kubeconfig string) {
	t.Helper()
	log := &harness.Buffer{}
	cmd := exec.Command(tetherBinary, "controller", "--kubeconfig", kubeconfig,
		"--metrics-bind-address", harness.FreeAddr(t), "--health-probe-bind-address", harness.FreeAddr(t),
		"--webhook-bind-address", harness.FreeAddr(t), "--cache-dir", t.TempDir(), "--min-interval", "1s")
	cmd.Stdout, cmd.Stderr = log, log
	harness.Must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			t.Logf("tether stopped: %v", err)
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("tether did not stop within 30s of SIGTERM: %v", <-done)
		}
		if t.Failed() {
			t.Logf("tether log:\n%s", log.String())
		}
	})
}

// deleteSync deletes s and waits until its finalizer has pruned what it
// applied (the CRDs, cluster-wide, included).
func deleteSync(t *testing.T, c client.Client, s *v1alpha1.Sync) {
	t.Helper()
	ctx := context.WithoutCancel(t.Context())
	if err := c.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
		t.Errorf("deleting Sync %s: %v", s.Name, err)
		return
	}
	harness.Eventually(t, waitTimeout, "the Sync gone", func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
