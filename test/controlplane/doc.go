// Package controlplane runs a real Kubernetes control plane on loopback for Tether's
// tests and demo.
//
// Tether's behaviour is defined by what a real kube-apiserver does with its requests:
// server-side apply and its field managers, dry-run, admission, RBAC, resourceVersion
// conflicts, finalizers, garbage collection. A fake client gets all of those subtly
// wrong, so tests that talk to Kubernetes talk to the real thing: etcd and
// kube-apiserver, started as child processes on free 127.0.0.1 ports with fresh data and
// fresh certificates. Tests that need workloads to actually roll out (health of a
// Deployment, a StatefulSet, a Job) ask for Options.Workloads and also get
// kube-controller-manager, kube-scheduler and kwok, which plays the kubelet for one fake
// node: pods are scheduled to it and marked running and ready without any container.
// kwok also serves the kubelet's API on 127.0.0.1, so a pod's log (a file the test
// appends lines to: ServePodLog) streams through the apiserver as `kubectl logs -f`.
//
// What the package owns:
//
//   - finding the binaries (TETHER_TESTBIN, else .tools/testbin under the module root,
//     built by `make testbin`) and failing with that advice when one is missing;
//   - a private PKI made at start with crypto/x509: a cluster CA, a serving certificate,
//     a client certificate per identity, a front-proxy CA and a service-account key;
//   - the processes: their flags, their logs (files in Dir), their readiness, and their
//     end (SIGTERM, then SIGKILL; on Linux the kernel also kills them if the test binary
//     dies, so an interrupted test leaves nothing running);
//   - the test glue: RunMain for a TestMain that shares one control plane per test
//     package, Shared to reach it, and NewNamespace for a fresh namespace per test.
//
// What it does not own: anything Tether installs (CRDs, RBAC for the agent). Tests
// apply those themselves through Config.
//
// A test package uses it like this:
//
//	func TestMain(m *testing.M) {
//		os.Exit(controlplane.RunMain(m, controlplane.Options{}))
//	}
//
//	func TestSomething(t *testing.T) {
//		cfg := controlplane.Shared(t).Config()
//		ns := controlplane.NewNamespace(t, cfg)
//		// ... create objects in ns, run the code under test, assert on the cluster
//	}
//
// A program that is not a test (the demo) calls Start and Stop itself and hands
// KubeconfigPath to kubectl and to `tether controller --kubeconfig`.
//
// Timing, measured on a 2-core machine: etcd is healthy 0.8 s after Start and the
// apiserver passes /readyz about 3.5 s later, so Start returns in about 4 s; with
// Workloads, the controllers run and the fake node is Ready about 2 s after that, and
// a 2-replica Deployment is ready within half a second of its creation. Stop takes
// about 1 s.
package controlplane
