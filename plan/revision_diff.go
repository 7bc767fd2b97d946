package plan

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// RevisionDiff is the unified diff of one object between two renders of a
// Sync's source (from and to, either nil where its render lacks the object),
// labelled with the revisions' names; "" when they are the same. A Secret's
// values are masked on both sides (MaskSecret): the diff says which changed,
// never what they are. `tether ui` shows it between two revisions of a
// Sync's history.
func RevisionDiff(from, to *unstructured.Unstructured, fromName, toName string) (string, error) {
	var a, b *unstructured.Unstructured
	if from != nil {
		a = from.DeepCopy()
	}
	if to != nil {
		b = to.DeepCopy()
	}
	return maskedDiff(a, b, isSecret(a) || isSecret(b), fromName, toName)
}

// isSecret reports whether obj is a core Secret, whose values are masked.
func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == ""
}
