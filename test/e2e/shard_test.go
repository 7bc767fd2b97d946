package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestShardsReconcileOnlyTheirOwnSyncs runs three agents, --shard a, --shard b and
// --shard "" (the Syncs without the label), each with leader election on: each
// elects its leader on a Lease of its own and reconciles only its shard's Syncs,
// and a Sync relabelled to another shard is taken over by that shard.
func TestShardsReconcileOnlyTheirOwnSyncs(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "shards")
	files := map[string]string{}
	for _, shard := range []string{"a", "b", "none"} {
		files[shard+"/cm.yaml"] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {v: \"1\"}\n", shard)
	}
	first := repo.Commit(t, files, "one config map per shard")
	// The agents run as deploy/overlays/sharded runs them (with its arguments), one
	// replica each, with the test's namespace as theirs.
	kubeconfig := controlplane.Shared(t).KubeconfigPath()
	agents := map[string]*agent{}
	for _, d := range shardedDeployments(t) {
		args := deploymentArgs(d, ns)
		shard := "none"
		for _, arg := range args {
			if v, ok := strings.CutPrefix(arg, "--shard="); ok && v != "" {
				shard = v
			}
		}
		agents[shard] = startAgentWith(t, kubeconfig, args...)
	}
	if len(agents) != 3 {
		t.Fatalf("deploy/overlays/sharded runs agents for shards %v, want a, b and the unlabelled Syncs", slices.Collect(maps.Keys(agents)))
	}
	syncs := map[string]*v1alpha1.Sync{}
	for _, shard := range []string{"a", "b", "none"} {
		s := gitSync(ns, "sync-"+shard, repo.URL(), shard, 2*time.Second)
		if shard != "none" {
			s.Labels = map[string]string{v1alpha1.ShardLabel: shard}
		}
		createSync(t, c, s)
		syncs[shard] = s
	}
	for _, s := range syncs {
		waitRevision(t, c, s, first)
	}

	t.Run("each shard elects its leader on a Lease of its own", func(t *testing.T) {
		for _, name := range shardLeases {
			lease := &coordinationv1.Lease{}
			harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, lease))
			if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
				t.Errorf("Lease %s has no holder", name)
			}
		}
	})

	t.Run("each agent reconciles only its shard's Syncs", func(t *testing.T) {
		for shard, a := range agents {
			if got, want := reportedSyncs(t, a, ns), []string{"sync-" + shard}; !slices.Equal(got, want) {
				t.Errorf("agent of shard %s reports Syncs %v, want %v", shard, got, want)
			}
		}
	})

	t.Run("a Sync relabelled to another shard is reconciled by that shard", func(t *testing.T) {
		patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"a"}}}`, v1alpha1.ShardLabel)
		harness.Must(t, c.Patch(t.Context(), &v1alpha1.Sync{ObjectMeta: syncs["b"].ObjectMeta}, client.RawPatch(types.MergePatchType, patch)))
		files["b/cm.yaml"] = strings.Replace(files["b/cm.yaml"], `v: "1"`, `v: "2"`, 1)
		second := repo.Commit(t, map[string]string{"b/cm.yaml": files["b/cm.yaml"]}, "change b's config map")
		waitRevision(t, c, syncs["b"], second)
		harness.Eventually(t, waitTimeout, "shard a's agent reports sync-b and shard b's agent does not", func(context.Context) (bool, error) {
			return slices.Equal(reportedSyncs(t, agents["a"], ns), []string{"sync-a", "sync-b"}) && len(reportedSyncs(t, agents["b"], ns)) == 0, nil
		})
	})
}

// shardLeases are the Leases of the shards' leaders in deploy/overlays/sharded.
var shardLeases = []string{"tether.dev-shard-a", "tether.dev-shard-b", "tether.dev-unsharded"}

// shardedDeployments renders deploy/overlays/sharded and returns its Deployments.
func shardedDeployments(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(kubectl(t, "kustomize", filepath.Join("..", "..", "deploy", "overlays", "sharded")), "\n---\n") {
		obj := &unstructured.Unstructured{}
		harness.Must(t, yaml.Unmarshal([]byte(doc), &obj.Object))
		if obj.GetKind() == "Deployment" {
			out = append(out, obj)
		}
	}
	return out
}

var (
	syncReadySeries = regexp.MustCompile(`(?m)^tether_sync_ready\{([^}]*)\}`)
	nameLabel       = regexp.MustCompile(`\bname="([^"]+)"`)
)

// reportedSyncs lists, sorted, the Syncs in namespace ns whose tether_sync_ready
// series agent a exports. (Other tests' Syncs elsewhere in the shared cluster carry
// no shard label, so the unlabelled shard serves them too.)
func reportedSyncs(t *testing.T, a *agent, ns string) []string {
	t.Helper()
	var names []string
	for _, m := range syncReadySeries.FindAllStringSubmatch(a.metrics(t), -1) {
		labels := m[1]
		name := nameLabel.FindStringSubmatch(labels)
		if name == nil || !strings.Contains(labels, `namespace="`+ns+`"`) || slices.Contains(names, name[1]) {
			continue
		}
		names = append(names, name[1])
	}
	slices.Sort(names)
	return names
}
