package plan

import (
	udiff "github.com/aymanbagabas/go-udiff"
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
	if isSecret(a) || isSecret(b) {
		MaskSecret(a, b)
	}
	at, err := yamlText(a)
	if err != nil {
		return "", err
	}
	bt, err := yamlText(b)
	if err != nil {
		return "", err
	}
	if at == bt {
		return "", nil
	}
	return udiff.ToUnified(fromName, toName, at, udiff.Lines(at, bt), DiffContext)
}

// isSecret reports whether obj is a core Secret, whose values are masked.
func isSecret(obj *unstructured.Unstructured) bool {
	return obj != nil && obj.GetKind() == "Secret" && obj.GroupVersionKind().Group == ""
}
