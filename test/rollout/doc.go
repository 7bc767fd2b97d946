// Package rollout proves Tether's health on real rollouts: a control plane with
// kube-controller-manager, kube-scheduler and kwok's fake node (test/controlplane
// with Workloads), so that a Deployment Tether applies really gets a ReplicaSet and
// pods that become Ready, or fail through the fault stages of test/controlplane.
//
// The agent runs in process, wired as `tether controller` wires it, and records
// real Events through the API server. Tests read what a user reads: the Sync's
// status.health, status.resources, its conditions and its Events.
//
// BenchmarkHealthFollowsRollout measures how long a Sync takes to turn Healthy
// after its last object became ready, with the status watch and with only the
// progressing requeue (the timer Tether used before).
package rollout
