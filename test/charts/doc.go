// Package charts holds the chart conformance tests: public charts nobody here
// wrote (kube-prometheus-stack with its subcharts, ingress-nginx, argo-cd with
// redis-ha, grafana, traefik, bitnami's redis with bitnami/common), packaged as
// upstream released them (testdata/README.md), rendered by the shipped binary's
// `tether render` and by the pinned `helm template` (the Makefile's helm, built
// from the Helm SDK go.mod requires) with the same values and capabilities, at
// Tether's default limits, must give the same objects, field for field; and one
// of them synced by the shipped agent into a real API server must leave exactly
// the objects helm template lists, CRDs included.
//
// The package has no code of its own: its tests drive the binary as users do.
package charts
