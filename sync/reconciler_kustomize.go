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
func (r *Reconciler) overlay(obj *v1alpha1.Sync, snap *source.Snapshot) (*source.Snapshot, error) {
	if obj.Spec.Kustomize.IsEmpty() {
		return snap, nil
	}
	return r.Agent.Source.Overlay(snap, obj.Spec.Kustomize)
}
