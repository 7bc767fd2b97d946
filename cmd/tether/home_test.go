package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestTheAgentsHomeIsItsLeaderElectionLease(t *testing.T) {
	dir := t.TempDir()
	podFile := filepath.Join(dir, "namespace")
	if err := os.WriteFile(podFile, []byte("tether-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lease := func(ns, name string) *corev1.ObjectReference {
		return &corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: ns, Name: name}
	}
	for _, c := range []struct {
		name string
		f    controllerFlags
		file string
		want *corev1.ObjectReference
	}{
		{"the flag's namespace first", controllerFlags{leaderNamespace: "agents"}, podFile, lease("agents", "tether.dev")},
		{"else the pod's namespace", controllerFlags{}, podFile, lease("tether-system", "tether.dev")},
		{"a shard's own Lease", controllerFlags{shard: shardFlag{set: true, name: "a"}}, podFile, lease("tether-system", "tether.dev-shard-a")},
		{"none out of cluster without the flag", controllerFlags{}, filepath.Join(dir, "missing"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, homeOf(&c.f, c.file)); diff != "" {
				t.Errorf("homeOf (-want +got):\n%s", diff)
			}
		})
	}
}
