// Package e2e tests Tether the way users run it: the real `tether controller` binary,
// built from this tree, against a real kube-apiserver and etcd (test/controlplane) and
// a real git smart-HTTP server (test/gitserver), all on loopback.
//
// The package holds only tests. TestMain builds the binary once, starts one control
// plane and installs the CRD from deploy/base/crd; each test then starts its own agent
// and works in its own namespace.
package e2e
