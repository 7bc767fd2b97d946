package main

import (
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// inClusterNamespaceFile holds the namespace of the pod's ServiceAccount, which
// controller-runtime's leader election takes when no namespace is given.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// homeOf is the object of the agent's own namespace that Events outliving a
// tenant namespace (ObjectsLeftBehind) are recorded about: the agent's leader
// election Lease, in --leader-election-namespace or else the pod's namespace
// (read from namespaceFile). The Lease need not exist (an agent without leader
// election) for an Event to name it. Nil when no namespace is known (an agent run
// out of cluster without the flag): such Events are then recorded on the Sync.
func homeOf(f *controllerFlags, namespaceFile string) *corev1.ObjectReference {
	ns := f.leaderNamespace
	if ns == "" {
		data, err := os.ReadFile(namespaceFile)
		if err != nil {
			return nil
		}
		ns = strings.TrimSpace(string(data))
	}
	if ns == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "coordination.k8s.io/v1", Kind: "Lease", Namespace: ns, Name: f.shard.leaseName()}
}
