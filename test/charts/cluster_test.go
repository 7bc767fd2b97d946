package charts

import (
	"context"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// waitTimeout bounds each wait for the agent: a guard against hangs, not a
// performance assertion (on a loaded 2-core machine a step takes seconds).
const waitTimeout = 3 * time.Minute

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

// refsOf is the identities of objs as the agent records them, by their keys
// in objs: a namespaced object that names no namespace lands in the Sync's
// destination namespace ns.
func refsOf(t *testing.T, c client.Client, objs objects, ns string) map[objectKey]v1alpha1.ObjectRef {
	t.Helper()
	refs := map[objectKey]v1alpha1.ObjectRef{}
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
		refs[k] = ref
	}
	return refs
}

// refNames is refs as sorted strings, for set differences and messages.
func refNames(refs iter.Seq[v1alpha1.ObjectRef]) []string {
	var names []string
	for r := range refs {
		names = append(names, refName(r))
	}
	slices.Sort(names)
	return names
}

func refName(r v1alpha1.ObjectRef) string {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}.String() + " " + r.Kind + " " + r.Namespace + "/" + r.Name
}

// getLive reads the object ref names from the cluster.
func getLive(ctx context.Context, c client.Client, ref v1alpha1.ObjectRef) (*unstructured.Unstructured, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind})
	err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, live)
	return live, err
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

// commitChart commits the chart directory chart under path in repo, on its
// branch main, as the repository's only commit, and returns that commit. It
// commits with git itself rather than repo.Commit, which cannot hold an empty
// file (grafana's templates/validate.yaml is one).
func commitChart(t testing.TB, repo *gitserver.Repo, chart, path, message string) string {
	t.Helper()
	work := t.TempDir()
	harness.Must(t, os.CopyFS(filepath.Join(work, filepath.FromSlash(path)), os.DirFS(chart)))
	gitserver.Git(t, work, "init", "--quiet", "--initial-branch=main")
	gitserver.Git(t, work, "add", "--all")
	gitserver.Git(t, work, "commit", "--quiet", "--message", message)
	gitserver.Git(t, work, "push", "--quiet", repo.FileURL(), "HEAD:refs/heads/main")
	return gitserver.Git(t, work, "rev-parse", "HEAD")
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
