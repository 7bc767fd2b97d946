package sync

// spec.kustomize: the fields a Flux Kustomization and an Argo CD Application
// put on top of a render. The render path calls into it in ONE place:
// renderAgain hands every rendered snapshot to overlay, then to postBuild
// (Flux builds its kustomization before it substitutes).

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// overlay puts obj's spec.kustomize on top of snap's objects behind the
// render wall (Source.Overlay, its components read from snap's revision) and
// returns a snapshot of its own; a Sync without spec.kustomize gets snap back
// as it is, with no worker asked. A failure is a *source.RenderError naming
// the path and spec.kustomize: Stalled, as any render failure, the last good
// state kept.
//
// Under spec.decryption.requireEncryption every value of every Secret must
// come from a decrypted SOPS file, which the render checked; a component of
// the repository or a patch may not add one: each value of a Secret the
// overlay returns must be one of the Secret values it was given.
func (r *Reconciler) overlay(obj *v1alpha1.Sync, snap *source.Snapshot) (*source.Snapshot, error) {
	if obj.Spec.Kustomize.IsEmpty() {
		return snap, nil
	}
	var given map[string]bool
	if d := obj.Spec.Decryption; d != nil && d.RequireEncryption {
		given = secretValues(snap.Objects)
	}
	out, err := r.Agent.Source.Overlay(snap, obj.Spec.Kustomize)
	if err != nil || given == nil {
		return out, err
	}
	if err := onlyGivenSecretValues(snap.Path, given, out.Objects); err != nil {
		return nil, err
	}
	return out, nil
}

// onlyGivenSecretValues fails when a Secret among objs holds a value given
// does not, naming the Secret and the key, never the value.
func onlyGivenSecretValues(path string, given map[string]bool, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if key, ok := newSecretValue(o, given); ok {
			return &source.RenderError{File: path, Err: fmt.Errorf(
				"spec.kustomize: Secret %s key %s holds a value no decrypted SOPS file gave, and spec.decryption.requireEncryption is set (a component or patch may not add one)",
				namespacedName(o), key)}
		}
	}
	return nil
}

// secretFields are the fields of a Secret that hold its values.
var secretFields = []string{"data", "stringData"}

// secretValues is every value of the Secrets among objs.
func secretValues(objs []*unstructured.Unstructured) map[string]bool {
	values := map[string]bool{}
	for _, o := range objs {
		if !isSecret(o) {
			continue
		}
		for _, f := range secretFields {
			m, _, _ := unstructured.NestedMap(o.Object, f)
			for _, v := range m {
				if s, ok := v.(string); ok {
					values[s] = true
				}
			}
		}
	}
	return values
}

// newSecretValue returns the key of a value of o, a Secret, that given does
// not hold (sorted, so the message is stable).
func newSecretValue(o *unstructured.Unstructured, given map[string]bool) (string, bool) {
	if !isSecret(o) {
		return "", false
	}
	var bad []string
	for _, f := range secretFields {
		m, _, _ := unstructured.NestedMap(o.Object, f)
		for k, v := range m {
			if s, ok := v.(string); !ok || !given[s] {
				bad = append(bad, f+"."+k)
			}
		}
	}
	if len(bad) == 0 {
		return "", false
	}
	slices.Sort(bad)
	return bad[0], true
}

func isSecret(o *unstructured.Unstructured) bool {
	return o.GetKind() == "Secret" && (o.GetAPIVersion() == "v1")
}

func namespacedName(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}
