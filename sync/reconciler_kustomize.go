package sync

// spec.kustomize: the fields a Flux Kustomization and an Argo CD Application
// put on top of a render. The render path calls into it in ONE place:
// renderAgain hands every rendered snapshot to overlay, then to postBuild
// (Flux builds its kustomization before it substitutes).

import (
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// overlay puts obj's spec.kustomize on top of snap's objects behind the
// render wall (Source.Overlay, its components read from snap's revision) and
// returns a snapshot of its own; a Sync without spec.kustomize gets snap back
// as it is, with no worker asked. A failure is a *source.RenderError naming
// the path and spec.kustomize: Stalled, as any render failure, the last good
// state kept.
//
// Under spec.decryption.requireEncryption every value of every Secret must
// come from a decrypted SOPS file, which the render checked; a component of
// the repository or a patch may not add one: each value of a Secret the
// overlay returns must be one of the Secret values it was given.
func (r *Reconciler) overlay(obj *v1alpha1.Sync, snap *source.Snapshot) (*source.Snapshot, error) {
	if obj.Spec.Kustomize.IsEmpty() {
		return snap, nil
	}
	out, err := r.Agent.Source.Overlay(snap, obj.Spec.Kustomize)
	if err != nil {
		return nil, err
	}
	if d := obj.Spec.Decryption; d != nil && d.RequireEncryption {
		if err := source.CheckOverlaySecrets(snap.Objects, out.Objects, snap.Path); err != nil {
			return nil, err
		}
	}
	return out, nil
}
