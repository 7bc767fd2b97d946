package importer

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// The fields a Flux Kustomization and an Argo CD Application's
// source.kustomize put on top of a render, carried as spec.kustomize.

// kustomizeOf is s's spec.kustomize, made when first needed.
func kustomizeOf(s *v1alpha1.Sync) *v1alpha1.Kustomize {
	if s.Spec.Kustomize == nil {
		s.Spec.Kustomize = &v1alpha1.Kustomize{}
	}
	return s.Spec.Kustomize
}

// fluxKustomizeFields are the handlers of a Flux Kustomization's fields
// that spec.kustomize carries.
func (c *converter) fluxKustomizeFields(o *unstructured.Unstructured, s *v1alpha1.Sync) map[string]func(any) {
	return map[string]func(any){
		"namePrefix": func(v any) { kustomizeOf(s).NamePrefix = str(v) },
		"nameSuffix": func(v any) { kustomizeOf(s).NameSuffix = str(v) },
		"components": func(v any) { kustomizeOf(s).Components = stringList(v) },
		"images":     func(v any) { kustomizeOf(s).Images = c.fluxImages(o, v) },
		"patches":    func(v any) { kustomizeOf(s).Patches = c.patches(o, "spec.patches", v) },
		"commonMetadata": func(v any) {
			k := kustomizeOf(s)
			c.fields(o, "spec.commonMetadata", object(v), map[string]func(any){
				"labels":      func(v any) { k.CommonLabels = stringMap(v) },
				"annotations": func(v any) { k.CommonAnnotations = stringMap(v) },
			}, noCounterpart)
		},
		"targetNamespace": func(v any) {
			// Flux overrides every namespaced object's namespace, as
			// spec.kustomize.namespace does; the destination names where
			// the Sync applies too.
			s.Spec.Destination.Namespace = str(v)
			kustomizeOf(s).Namespace = str(v)
		},
	}
}

// fluxImages reads Flux's images, kustomize's own shape.
func (c *converter) fluxImages(o *unstructured.Unstructured, v any) []v1alpha1.KustomizeImage {
	var out []v1alpha1.KustomizeImage
	for i, e := range list(v) {
		m := object(e)
		img := v1alpha1.KustomizeImage{Name: str(m["name"]), NewName: str(m["newName"]), NewTag: str(m["newTag"]), Digest: str(m["digest"])}
		c.fields(o, "spec.images["+strconv.Itoa(i)+"]", m, map[string]func(any){
			"name": nil, "newName": nil, "newTag": nil, "digest": nil,
		}, noCounterpart)
		out = append(out, img)
	}
	return out
}

// patches reads a list of kustomize patches, Flux's and Argo CD's shape: an
// inline patch and a target. A patch read from a file is reported.
func (c *converter) patches(o *unstructured.Unstructured, field string, v any) []v1alpha1.KustomizePatch {
	var out []v1alpha1.KustomizePatch
	for i, e := range list(v) {
		m := object(e)
		at := field + "[" + strconv.Itoa(i) + "]"
		p := v1alpha1.KustomizePatch{Patch: str(m["patch"])}
		c.fields(o, at, m, map[string]func(any){
			"patch":  nil,
			"target": func(v any) { p.Target = c.target(o, at+".target", object(v)) },
			"path": func(any) {
				c.lose(o, at+".path", "a patch in a file of the repository: write it inline, as patch")
			},
		}, noCounterpart)
		if p.Patch != "" {
			out = append(out, p)
		}
	}
	return out
}

// target reads a patch's target selector.
func (c *converter) target(o *unstructured.Unstructured, field string, m map[string]any) *v1alpha1.KustomizeSelector {
	t := &v1alpha1.KustomizeSelector{Group: str(m["group"]), Version: str(m["version"]), Kind: str(m["kind"]),
		Name: str(m["name"]), Namespace: str(m["namespace"]),
		LabelSelector: str(m["labelSelector"]), AnnotationSelector: str(m["annotationSelector"])}
	c.fields(o, field, m, map[string]func(any){
		"group": nil, "version": nil, "kind": nil, "name": nil, "namespace": nil, "labelSelector": nil, "annotationSelector": nil,
	}, noCounterpart)
	return t
}

// appKustomize folds an Application's spec.source.kustomize into s.
func (c *converter) appKustomize(o *unstructured.Unstructured, s *v1alpha1.Sync, m map[string]any) {
	k := kustomizeOf(s)
	const at = "spec.source.kustomize"
	withoutSelector := boolean(m["labelWithoutSelector"])
	c.fields(o, at, m, map[string]func(any){
		"namePrefix":        func(v any) { k.NamePrefix = str(v) },
		"nameSuffix":        func(v any) { k.NameSuffix = str(v) },
		"namespace":         func(v any) { k.Namespace = str(v) },
		"commonAnnotations": func(v any) { k.CommonAnnotations = stringMap(v) },
		"components":        func(v any) { k.Components = stringList(v) },
		"patches":           func(v any) { k.Patches = c.patches(o, at+".patches", v) },
		"images":            func(v any) { k.Images = c.appImages(o, v) },
		"commonLabels": func(v any) {
			k.CommonLabels = stringMap(v)
			if !withoutSelector && len(k.CommonLabels) > 0 {
				c.lose(o, at+".commonLabels", "carried onto the objects' metadata alone: Argo CD also sets them in selectors and pod templates (labelWithoutSelector: false)")
			}
		},
		"labelWithoutSelector": nil,
		"version": func(v any) {
			c.lose(o, at+".version", str(v)+": Tether builds with the kustomize it is built with")
		},
	}, noCounterpart)
	if k.IsEmpty() {
		s.Spec.Kustomize = nil
	}
}

// appImages reads Argo CD's images, each in the form of `kustomize edit set
// image`: name=newName:newTag, name=newName@digest, name:newTag,
// name@digest or name=newName.
func (c *converter) appImages(o *unstructured.Unstructured, v any) []v1alpha1.KustomizeImage {
	var out []v1alpha1.KustomizeImage
	for i, e := range list(v) {
		img, ok := parseImageOverride(str(e))
		if !ok {
			c.lose(o, "spec.source.kustomize.images["+strconv.Itoa(i)+"]", str(e)+": not an image override kustomize reads")
			continue
		}
		out = append(out, img)
	}
	return out
}

// parseImageOverride reads one image override of `kustomize edit set image`.
func parseImageOverride(s string) (v1alpha1.KustomizeImage, bool) {
	name, image, renamed := strings.Cut(s, "=")
	if !renamed {
		image = s
	}
	newName, tag, digest := splitImage(image)
	if !renamed {
		name, newName = newName, ""
	} else if n, _, _ := splitImage(name); n != name {
		return v1alpha1.KustomizeImage{}, false // a tag or digest on the name replaced
	}
	if name == "" || (newName == "" && tag == "" && digest == "") {
		return v1alpha1.KustomizeImage{}, false
	}
	return v1alpha1.KustomizeImage{Name: name, NewName: newName, NewTag: tag, Digest: digest}, true
}

// splitImage splits an image reference into its name, tag and digest: a
// colon after the last slash starts a tag (one before it is a registry's
// port).
func splitImage(image string) (name, tag, digest string) {
	name, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return name, tag, digest
}

// stringMap reads a map of strings; values of other types are left out.
func stringMap(v any) map[string]string {
	m := object(v)
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		if s, ok := x.(string); ok {
			out[k] = s
		}
	}
	return out
}
