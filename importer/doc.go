// Package importer converts Flux's and Argo CD's objects into Syncs: what
// `tether import` prints. It is pure (objects in, Syncs and a list of losses
// out; no cluster, no file), so that every mapping is a table test.
//
// Flux's Kustomization and HelmRelease become one Sync each, with the
// GitRepository, OCIRepository or HelmRepository they refer to folded into
// its spec.source; Argo CD's Application becomes one Sync. Everything of an
// object that Tether cannot carry (a field with no counterpart, a source
// kind Tether does not fetch, an AppProject) is returned as a Loss naming the
// object and the field and saying why, one line each, so that a user sees
// exactly what the move would lose before making it. A field that Tether
// carries with a different meaning (Flux's targetNamespace, which Tether's
// destination.namespace does only for objects that name no namespace) is a
// Loss too. Unknown fields are losses by construction: each converter
// handles the fields it knows and reports every other one.
//
// The mapping is documented field by field in docs/coming-from-argocd-flux.md.
package importer
