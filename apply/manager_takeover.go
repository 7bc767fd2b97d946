package apply

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/csaupgrade"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// LastAppliedAnnotation is where client-side `kubectl apply` keeps what it applied.
// Once Tether takes an object over, the annotation is Tether's, and the next apply
// (which does not send it) removes it.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// takeOverManagers are the managers of opts.TakeOver that opts.NeverTakeOver does
// not exclude.
func takeOverManagers(opts Options) sets.Set[string] {
	out := sets.New[string]()
	for _, m := range opts.TakeOver {
		if m != opts.FieldManager && !slices.Contains(opts.NeverTakeOver, m) {
			out.Insert(m)
		}
	}
	return out
}

// takeOver moves the fields that client-side apply managers own in live (their
// Update entries) to Tether's Apply entry, with the same rewrite of managedFields
// that `kubectl apply --server-side` does on migration. Without it, a field that
// kubectl applied and git later drops would stay for ever: Tether never owned it,
// so leaving it out of an apply removes nothing. live is updated in place; it
// reports whether it wrote. The patch carries live's resourceVersion, so a
// concurrent change is a conflict, not a lost update.
func (m *Manager) takeOver(ctx context.Context, live *unstructured.Unstructured, opts Options) (bool, error) {
	managers := takeOverManagers(opts)
	if opts.DryRun || managers.Len() == 0 {
		return false, nil
	}
	patch, err := csaupgrade.UpgradeManagedFieldsPatch(live, managers, opts.FieldManager)
	if err != nil || patch == nil {
		return false, err
	}
	if err := m.client.Patch(ctx, live, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(opts.FieldManager)); err != nil {
		return false, err
	}
	return true, nil
}
