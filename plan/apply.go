package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
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
func ForApply(s *v1alpha1.Sync, objs []*unstructured.Unstructured, base contract.Options, givenUp []v1alpha1.GivenUpField) contract.Options {
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
	m := marksOf(s)
	for _, o := range objs {
		m.mark(o, v1alpha1.SyncLabel, "")
	}
}

// marks are the values of a Sync's marks, made once for all its objects: every
// object of a revision shares the two strings instead of holding copies of its
// own while the revision is applied.
type marks struct{ owner, label string }

func marksOf(s *v1alpha1.Sync) marks {
	return marks{owner: Owner(s), label: v1alpha1.SyncLabelValue(s.Namespace, s.Name)}
}

// mark sets o's tether.dev/owned-by annotation to the Sync's, sets the label key
// to the Sync's label value, and removes the label drop (none when empty).
func (m marks) mark(o *unstructured.Unstructured, key, drop string) {
	withEntry(o, "annotations", v1alpha1.OwnedByAnnotation, m.owner, "")
	withEntry(o, "labels", key, m.label, drop)
}

// withEntry gives o a new metadata.<field> map: the one it has (labels or
// annotations) with key set to value and drop removed. o's metadata map is its own
// (a render's objects are, down to it), the maps inside it may be shared, so the
// map is copied rather than changed, once (unstructured's GetLabels and SetLabels
// would copy it twice). A map holding a value that is not a string is read as
// unstructured reads it: as none.
func withEntry(o *unstructured.Unstructured, field, key, value, drop string) {
	md, ok := o.Object["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		o.Object["metadata"] = md
	}
	old, _ := md[field].(map[string]any)
	next := make(map[string]any, len(old)+1)
	for k, v := range old {
		if _, ok := v.(string); !ok {
			clear(next)
			break
		}
		if k != drop {
			next[k] = v
		}
	}
	next[key] = value
	md[field] = next
}

// Owner is the value of the tether.dev/owned-by annotation on the objects s
// applies: "<namespace>/<name>".
func Owner(s *v1alpha1.Sync) string { return s.Namespace + "/" + s.Name }

// ignoredFields turns given-up fields into contract.Options.IgnoreFields.
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

// GivenUpField is the status entry of one field of ref given up to manager.
func GivenUpField(ref v1alpha1.ObjectRef, pointer, manager string) v1alpha1.GivenUpField {
	return v1alpha1.GivenUpField{ObjectRef: ref, JSONPointer: pointer, Manager: manager}
}

// PruneOptionsFor returns the options of a prune of s's objects after the apply
// applied: only objects s owns, and not those the apply still holds under another
// version.
func PruneOptionsFor(s *v1alpha1.Sync, applied *contract.ChangeSet, concurrency int) contract.PruneOptions {
	return contract.PruneOptions{Owner: Owner(s), Keep: liveUIDs(applied), Concurrency: concurrency}
}

// FindOptionsFor returns the options that find the objects s applied by their
// label and owner mark, all over the cluster: how a lost inventory is rebuilt.
func FindOptionsFor(s *v1alpha1.Sync) contract.FindOptions {
	return contract.FindOptions{Label: v1alpha1.SyncLabel, Value: v1alpha1.SyncLabelValue(s.Namespace, s.Name), Owner: Owner(s)}
}

// liveUIDs are the UIDs of the objects an apply left in the cluster.
func liveUIDs(cs *contract.ChangeSet) map[types.UID]bool {
	out := map[types.UID]bool{}
	if cs == nil {
		return out
	}
	for _, c := range cs.Changes {
		if c.Live != nil {
			out[c.Live.UID()] = true
		}
	}
	return out
}
