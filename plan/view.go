package plan

import (
	"maps"
	"slices"
	"sort"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// How a Sync reads to a person: the words and groupings the CLI (tether get, tree,
// history) and the web UI both show, decided once here so that the two never tell
// a different story about the same Sync.

// ShortRevision writes "main@sha1:4f2c1a…" as "main@4f2c1a2", and "sha1:4f2c…" as
// "4f2c1a2"; anything else is returned as it is.
func ShortRevision(rev string) string {
	ref, hash, ok := strings.Cut(rev, "@sha1:")
	if !ok {
		hash, ok = strings.CutPrefix(rev, "sha1:")
		if !ok {
			return rev
		}
	}
	if len(hash) > 7 {
		hash = hash[:7]
	}
	if ref == "" || ref == rev {
		return hash
	}
	return ref + "@" + hash
}

// ReadyStatus is the Ready condition's status, "Unknown" while the status
// describes an older spec (or has no Ready condition yet).
func ReadyStatus(s *v1alpha1.Sync) string {
	c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil || c.ObservedGeneration != s.Generation {
		return string(metav1.ConditionUnknown)
	}
	return string(c.Status)
}

// ReadyMessage is the message of the Ready condition, or "".
func ReadyMessage(s *v1alpha1.Sync) string {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition); c != nil {
		return c.Message
	}
	return ""
}

// Failing returns why a Sync is failing: the reason and message of its Stalled
// condition, or of a Ready condition that is False for its current spec; "" when
// it is not failing (ready, progressing, suspended or not yet reported on).
func Failing(s *v1alpha1.Sync) (reason, message string) {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition); c != nil &&
		c.Status == metav1.ConditionTrue && c.ObservedGeneration == s.Generation {
		return c.Reason, c.Message
	}
	c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != s.Generation {
		return "", ""
	}
	switch c.Reason {
	case v1alpha1.ReasonProgressing, v1alpha1.ReasonSuspended:
		return "", ""
	}
	return c.Reason, c.Message
}

// AppliedSubject is the subject of the commit the Sync applied last, as its
// history recorded it; "" when the history holds no entry for that revision.
func AppliedSubject(s *v1alpha1.Sync) string {
	if len(s.Status.History) == 0 || s.Status.LastAppliedRevision == "" {
		return ""
	}
	if e := s.Status.History[0]; e.Revision == s.Status.LastAppliedRevision {
		return e.Message
	}
	return ""
}

// ClusterScoped heads the objects of a tree that live in no namespace.
const ClusterScoped = "(cluster-scoped)"

// TreeNamespace is one namespace of a Sync's tree (ClusterScoped for the objects
// that have none), its kinds in order.
type TreeNamespace struct {
	Namespace string
	Kinds     []TreeKind
}

// TreeKind is one kind of a namespace of the tree ("Deployment.apps"), its objects
// by name.
type TreeKind struct {
	Kind    string
	Objects []v1alpha1.ResourceStatus
}

// Tree groups the inventory of a Sync (InventoryDetail) by namespace and kind:
// cluster-scoped objects first, as they are applied first, then namespaces, kinds
// and names in order. While the Sync is suspended nothing is compared with git,
// so every object's sync is Unknown.
func Tree(s *v1alpha1.Sync) []TreeNamespace {
	byNamespace := map[string]map[string][]v1alpha1.ResourceStatus{}
	for _, r := range InventoryDetail(s.Status) {
		if s.Spec.Suspend {
			r.Sync = v1alpha1.SyncStatusUnknown
		}
		ns := r.Namespace
		if ns == "" {
			ns = ClusterScoped
		}
		if byNamespace[ns] == nil {
			byNamespace[ns] = map[string][]v1alpha1.ResourceStatus{}
		}
		kind := r.Kind
		if r.Group != "" {
			kind += "." + r.Group
		}
		byNamespace[ns][kind] = append(byNamespace[ns][kind], r)
	}
	tree := make([]TreeNamespace, 0, len(byNamespace))
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		n := TreeNamespace{Namespace: ns}
		for _, kind := range slices.Sorted(maps.Keys(byNamespace[ns])) {
			objs := byNamespace[ns][kind]
			sort.Slice(objs, func(a, b int) bool { return objs[a].Name < objs[b].Name })
			n.Kinds = append(n.Kinds, TreeKind{Kind: kind, Objects: objs})
		}
		tree = append(tree, n)
	}
	sort.SliceStable(tree, func(i, j int) bool {
		return tree[i].Namespace == ClusterScoped && tree[j].Namespace != ClusterScoped
	})
	return tree
}
