// Package v1alpha1 holds the Sync API (group tether.dev, version v1alpha1): the one
// resource users write to tell Tether which git source to keep a cluster equal to.
//
// The package owns only types, their validation markers and small accessors that
// resolve defaults. It does no I/O. spec is desired state written by users; status is
// observed state written only by Tether's reconciler, under its own field manager.
//
// Two things every other package shares are declared here, once: the identity of
// a managed object (ObjectRef, with its one key, embedded inline in the status
// types that name an object, and grouped by kind and namespace in the inventory,
// InventoryGroup), and the reasons of conditions
// and Events with what each means (Reasons, from which the failure metric's label
// set and docs/reasons.md are derived).
//
// The CRD manifest in deploy/base/crd and zz_generated.deepcopy.go are generated from
// these types by controller-gen ('make generate'); 'make verify' fails when they are stale.
//
// +kubebuilder:object:generate=true
// +groupName=tether.dev
package v1alpha1
