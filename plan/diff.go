package plan

import (
	"bytes"
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/apply/contract"
)

// DiffContext is how many unchanged lines surround each change, as in diff -u.
const DiffContext = 3

// Markers that stand in for Secret values. They say whether a value changed and
// nothing else: even a short hash of a low-entropy value (a PIN, a word) gives it
// away to anyone who can try candidates.
const (
	SecretMask        = "***"
	SecretMaskChanged = "*** (changed)"
	SecretMaskAdded   = "*** (added)"
	SecretMaskRemoved = "*** (removed)"
)

// LastAppliedAnnotation is where kubectl apply keeps a copy of the whole object,
// Secret values included.
const LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// ObjectDiff is the unified diff of one change of a dry-run apply, from the live
// object (none when it is missing) to the dry-run's result, both without the
// fields the comparison ignores (contract.Normalize), a Secret's values masked
// (MaskSecret). `tether diff` prints it and `tether ui` shows it.
func ObjectDiff(c contract.Change) (string, error) {
	if c.Desired == nil {
		// An immutable field that the object lets Tether delete and recreate: the
		// dry-run was refused, so there is no desired object to show.
		return "# " + strings.Join(c.Diff, "\n# ") + "\n", nil
	}
	var live *unstructured.Unstructured
	if c.Live != nil {
		obj, err := c.Live.Decode()
		if err != nil {
			return "", err
		}
		live = contract.Normalize(obj)
	}
	desired := contract.Normalize(c.Desired)
	return maskedDiff(live, desired, c.Object.Group == "" && c.Object.Kind == "Secret", "live", "desired")
}

// maskedDiff is the unified diff of a and b as YAML (nil is empty), labelled
// aName and bName, "" when they are the same; when secret, a Secret's values
// are masked on both sides first (MaskSecret changes a and b).
func maskedDiff(a, b *unstructured.Unstructured, secret bool, aName, bName string) (string, error) {
	if secret {
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
	return udiff.ToUnified(aName, bName, at, udiff.Lines(at, bt), DiffContext)
}

// yamlText writes obj as YAML with sorted keys; nil is empty.
func yamlText(obj *unstructured.Unstructured) (string, error) {
	if obj == nil {
		return "", nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(obj.Object); err != nil {
		return "", fmt.Errorf("encoding %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// MaskSecret replaces every value of a Secret in live (nil when missing) and
// desired (nil when none) with markers, compared on the real values so that a
// change still shows.
func MaskSecret(live, desired *unstructured.Unstructured) {
	for _, field := range []string{"data", "stringData"} {
		maskMap(mapAt(live, field), mapAt(desired, field))
	}
	maskKey(mapAt(live, "metadata", "annotations"), mapAt(desired, "metadata", "annotations"), LastAppliedAnnotation)
}

// mapAt returns the map at path in obj, or nil; it is the map itself, not a copy.
func mapAt(obj *unstructured.Unstructured, path ...string) map[string]any {
	if obj == nil {
		return nil
	}
	m := obj.Object
	for _, p := range path {
		m, _ = m[p].(map[string]any)
	}
	return m
}

func maskMap(live, desired map[string]any) {
	for k := range live {
		maskKey(live, desired, k)
	}
	for k := range desired {
		if _, ok := live[k]; !ok {
			maskKey(live, desired, k)
		}
	}
}

// maskKey masks key k of live and desired, either of which may lack it or be nil.
func maskKey(live, desired map[string]any, k string) {
	lv, inLive := live[k]
	dv, inDesired := desired[k]
	switch {
	case inLive && inDesired && equality.Semantic.DeepEqual(lv, dv):
		live[k], desired[k] = SecretMask, SecretMask
	case inLive && inDesired:
		live[k], desired[k] = SecretMask, SecretMaskChanged
	case inLive:
		live[k] = SecretMaskRemoved
	case inDesired:
		desired[k] = SecretMaskAdded
	}
}
