// Package multicluster tests one agent that applies to other clusters than its
// own (spec.destination.kubeConfig and spec.destination.cluster): the hub is the
// shared control plane, and each test starts the remote control planes it
// needs, on loopback.
package multicluster
