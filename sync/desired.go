package sync

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/source"
)

// The one mapping from a Sync to an apply. The agent and `tether diff` both turn a
// Sync and the objects its revision renders to into an apply through these
// functions, so that a diff shows exactly what the agent would do: the same marks,
// the same namespace, the same fields left alone, the same objects pruned.

// ForApply marks objs as owned by s (MarkOwned) and returns the options of their
// apply: base (the agent's options, or apply.DefaultOptions for the CLI) with s's
// destination namespace, its spec.ignoreDifferences, its
// spec.ignoreAutoscaledReplicas, and the fields given up after a fight with another
// manager (the agent's own record, or status.fieldsGivenUp as it last wrote it).
func ForApply(s *v1alpha1.Sync, objs []*unstructured.Unstructured, base apply.Options, givenUp []v1alpha1.GivenUpField) apply.Options {
	MarkOwned(objs, s)
	opts := base
	opts.DefaultNamespace = s.Spec.Destination.Namespace
	opts.Ignore = append(append([]v1alpha1.IgnoreRule(nil), base.Ignore...), s.Spec.IgnoreDifferences...)
	opts.IgnoreScaledReplicas = base.IgnoreScaledReplicas && s.Spec.IgnoreAutoscaledReplicasEnabled()
	opts.IgnoreFields = ignoredFields(givenUp)
	return opts
}

// MarkOwned gives objs the marks of the Sync that applies them: the
// tether.dev/owned-by annotation, which prune and claims check, and the
// tether.dev/sync label, which a lost inventory is rebuilt from.
func MarkOwned(objs []*unstructured.Unstructured, s *v1alpha1.Sync) {
	owner, label := ownerOf(s), v1alpha1.SyncLabelValue(s.Namespace, s.Name)
	for _, o := range objs {
		annotations := o.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.OwnedByAnnotation] = owner
		o.SetAnnotations(annotations)
		labels := o.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[v1alpha1.SyncLabel] = label
		o.SetLabels(labels)
	}
}

// ignoredFields turns given-up fields into apply.Options.IgnoreFields.
func ignoredFields(fields []v1alpha1.GivenUpField) map[v1alpha1.ObjectRef][]string {
	if len(fields) == 0 {
		return nil
	}
	out := map[v1alpha1.ObjectRef][]string{}
	for _, f := range fields {
		out[f.ObjectRef] = append(out[f.ObjectRef], f.JSONPointer)
	}
	return out
}

// InventoryDetail returns every object a Sync's status lists as applied, with its
// sync, health and message: status.resources for those it details, Synced and
// Healthy for the rest (as status.summary counts them).
func InventoryDetail(st v1alpha1.SyncStatus) []v1alpha1.ResourceStatus {
	return loadInventory(st)
}

// Inventory returns the objects a Sync's status lists as applied.
func Inventory(st v1alpha1.SyncStatus) []v1alpha1.ObjectRef {
	objects := loadInventory(st)
	refs := make([]v1alpha1.ObjectRef, len(objects))
	for i, o := range objects {
		refs[i] = o.ObjectRef
	}
	return refs
}

// LeftGit returns the objects of inventory that an apply's change set no longer
// holds: what a sync would prune. An object is the same across versions of its
// kind.
func LeftGit(inventory []v1alpha1.ObjectRef, cs *apply.ChangeSet) []v1alpha1.ObjectRef {
	desired := desiredKeys(cs)
	var out []v1alpha1.ObjectRef
	for _, r := range inventory {
		if !desired[r.Key()] {
			out = append(out, r)
		}
	}
	return out
}

func desiredKeys(cs *apply.ChangeSet) map[string]bool {
	desired := map[string]bool{}
	for _, c := range cs.Changes {
		desired[c.Object.Key()] = true
	}
	return desired
}

// PruneHeld says why a sync would prune none of stale, the objects that left git
// out of an inventory of before objects: "" when it would prune them (each object
// may still be kept, see apply.Manager.Prune), else the reason, as the Sync's
// status says it.
func PruneHeld(s *v1alpha1.Sync, stale []v1alpha1.ObjectRef, before int, renderedEmpty bool) string {
	switch {
	case len(stale) == 0:
		return ""
	case !s.Spec.PruneEnabled():
		return "prune is off"
	case renderedEmpty && !s.Spec.AllowEmpty:
		return "the path renders no objects and spec.allowEmpty is false"
	}
	if err := checkPruneLimit(s, len(stale), before, renderedEmpty); err != nil {
		return err.Error()
	}
	return ""
}

// PruneOptionsFor returns the options of a prune of s's objects after the apply
// applied: only objects s owns, and not those the apply still holds under another
// version.
func PruneOptionsFor(s *v1alpha1.Sync, applied *apply.ChangeSet, concurrency int) apply.PruneOptions {
	return apply.PruneOptions{Owner: ownerOf(s), Keep: liveUIDs(applied), Concurrency: concurrency}
}

// FindOptionsFor returns the options that find the objects s applied by their
// label and owner mark, all over the cluster: how a lost inventory is rebuilt.
func FindOptionsFor(s *v1alpha1.Sync) apply.FindOptions {
	return apply.FindOptions{Label: v1alpha1.SyncLabel, Value: v1alpha1.SyncLabelValue(s.Namespace, s.Name), Owner: ownerOf(s)}
}

// ReadSourceAuth reads the credentials that s's spec.source.secretRef names,
// through secrets (a client acting as whoever should read them), as the agent
// does. Errors name the Secret and never hold its values.
func ReadSourceAuth(ctx context.Context, secrets client.Reader, s *v1alpha1.Sync) (source.Auth, error) {
	if s.Spec.Source.SecretRef == nil {
		return source.Auth{}, nil
	}
	auth, _, err := readAuth(ctx, Identity{Secrets: secrets}, s.Namespace, s.Spec.Source.SecretRef.Name)
	return auth, err
}

// givenUpFieldOf is the status entry of one field given up.
func givenUpFieldOf(ref v1alpha1.ObjectRef, pointer, manager string) v1alpha1.GivenUpField {
	return v1alpha1.GivenUpField{ObjectRef: ref, JSONPointer: pointer, Manager: manager}
}
