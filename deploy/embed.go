// Package deploy carries the one-file installs of this version of Tether into the
// binary, so that `tether install` applies what the repository ships at the
// version it was built from: install.yaml (deploy/default), namespaced.yaml
// (deploy/overlays/namespaced) and ui.yaml (deploy/ui), which hack/installgen
// renders from the kustomize directories beside this file (make generate).
//
// It owns nothing but those bytes: it imports nothing of Tether, parses nothing
// and talks to no cluster. cmd/tether decodes and applies them.
package deploy

import _ "embed" // the manifests below

// Install is deploy/install.yaml: the CRDs, the tether-system namespace, the
// agent's RBAC and its Deployment, for a cluster-wide install.
//
//go:embed install.yaml
var Install []byte

// Namespaced is deploy/namespaced.yaml: the multi-tenant install, with the
// example tenants team-a and team-b (NamespacedTemplateTenant and the other one)
// that a caller replaces with its own.
//
//go:embed namespaced.yaml
var Namespaced []byte

// UI is deploy/ui.yaml: the in-cluster web UI, an optional addition to either
// install.
//
//go:embed ui.yaml
var UI []byte

// The example tenants of Namespaced: each has the same objects in its
// namespace, so the first is a template for any tenant and the second is one
// more copy of it.
const (
	NamespacedTemplateTenant = "team-a"
	NamespacedOtherTenant    = "team-b"
)
