package main

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Markers that stand in for Secret values. They say whether a value changed and
// nothing else: even a short hash of a low-entropy value (a PIN, a word) gives it
// away to anyone who can try candidates.
const (
	secretMask        = "***"
	secretMaskChanged = "*** (changed)"
	secretMaskAdded   = "*** (added)"
	secretMaskRemoved = "*** (removed)"
)

// lastAppliedAnnotation is where kubectl apply keeps a copy of the whole object,
// Secret values included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// maskSecret replaces every value of a Secret in live (nil when missing) and
// desired with markers, compared on the real values so that a change still shows.
func maskSecret(live, desired *unstructured.Unstructured) {
	for _, field := range []string{"data", "stringData"} {
		maskMap(mapAt(live, field), mapAt(desired, field))
	}
	maskKey(mapAt(live, "metadata", "annotations"), mapAt(desired, "metadata", "annotations"), lastAppliedAnnotation)
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
		live[k], desired[k] = secretMask, secretMask
	case inLive && inDesired:
		live[k], desired[k] = secretMask, secretMaskChanged
	case inLive:
		live[k] = secretMaskRemoved
	case inDesired:
		desired[k] = secretMaskAdded
	}
}
