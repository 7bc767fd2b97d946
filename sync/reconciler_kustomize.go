package sync

// spec.kustomize: the fields a Flux Kustomization and an Argo CD Application
// put on top of a render. The render path calls into it in ONE place:
// renderAgain hands every rendered snapshot to Overlay, then to postBuild
// (Flux builds its kustomization before it substitutes).

import (
	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// Overlayer puts spec.kustomize on top of a snapshot's objects behind the
// render wall: Source.Overlay, or source.Overlay with the caller's limits.
type Overlayer func(snap *source.Snapshot, k *v1alpha1.Kustomize) (*source.Snapshot, error)

// Overlay puts obj's spec.kustomize on top of snap's objects, through wall
// (a render worker), and returns a snapshot of its own; a Sync without
// spec.kustomize gets snap back as it is, with no worker asked. A failure is
// a *source.RenderError naming the path and spec.kustomize: Stalled, as any
// render failure, the last good state kept. The agent and the CLI both call
// it, so that they put the same fields on the same objects.
func Overlay(obj *v1alpha1.Sync, snap *source.Snapshot, wall Overlayer) (*source.Snapshot, error) {
	if obj.Spec.Kustomize.IsEmpty() {
		return snap, nil
	}
	return wall(snap, obj.Spec.Kustomize)
}
