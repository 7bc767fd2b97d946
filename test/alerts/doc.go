// Package alerts tests Tether's alerts the way they page people: two real
// `tether controller` replicas with leader election, built from this tree, sync from a
// real git server (test/gitserver) into a real control plane with workloads
// (test/controlplane: kube-controller-manager, kube-scheduler and kwok, so rollouts
// happen or visibly fail), and a real Prometheus (test/promserver) scrapes both and
// evaluates the shipped rules, with `for` shortened by a test overlay. The tests read
// the alerts through Prometheus's HTTP API, as Alertmanager would receive them.
//
// The package holds only tests. TestMain builds the binary once and starts one
// control plane for the package.
package alerts
