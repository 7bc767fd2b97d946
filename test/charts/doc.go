// Package charts holds the chart conformance tests: public charts nobody here
// wrote (kube-prometheus-stack with its subcharts, ingress-nginx, argo-cd with
// redis-ha, grafana, traefik, bitnami's redis with bitnami/common), packaged as
// upstream released them (testdata/README.md), rendered by the shipped binary's
// `tether render` and by the pinned `helm template` (the Makefile's helm, built
// from the Helm SDK go.mod requires) with the same values and capabilities, at
// Tether's default limits, must give the same objects, field for field; and each
// of them synced by the shipped agent into a real API server (one agent, one Sync
// per chart) must leave exactly the objects helm template lists with the same
// values, CRDs included. The API server runs no controllers, so the synced
// charts' values turn off the hook Jobs and admission webhooks that would wait
// for a running pod (sync_test.go says which), helm template given the same.
//
// BenchmarkRenderOfKubePrometheusStack measures what a first render of the
// largest of them and a render the cache answers cost the agent's source, the
// shipped binary as its render worker.
//
// The package has no code of its own: its tests drive the binary as users do.
package charts
