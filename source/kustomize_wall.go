package source

import (
	"errors"
	"fmt"
	"maps"
	"path"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
)

// jobOverlay is spec.kustomize as a worker receives it: the objects to put it
// on, as the render cache keeps them, and the fields.
type jobOverlay struct {
	Objects   [][]byte
	Kustomize v1alpha1.Kustomize
	// Secrets says that some object is a Secret: the worker then serves no
	// other render.
	Secrets bool
}

// overlayDir is where a worker writes the kustomization it builds over the
// rendered objects, in a file system holding nothing else: errors name it, so
// that a user reads that spec.kustomize failed and not the path.
const overlayDir = "/spec.kustomize"

// Overlay puts k (spec.kustomize) on top of snap's objects behind the render
// wall, in a worker under opts' limits, as a render runs: the objects are the
// repository's, and kustomize reads them. The worker builds a kustomization
// whose resources are the objects and whose fields are k's, with the render's
// budgets (bytes, YAML nodes, objects) on the result. The snapshot returned is
// snap with objects of its own; a failure is a *RenderError naming snap's path
// and spec.kustomize (a patch that does not apply, a bad target). A k that
// puts nothing on top gets snap back as it is.
func Overlay(snap *Snapshot, k *v1alpha1.Kustomize, opts Options) (*Snapshot, error) {
	if k.IsEmpty() {
		return snap, nil
	}
	held, err := compact(snap.Objects)
	if err != nil {
		return nil, &RenderError{File: snap.Path, Err: fmt.Errorf("spec.kustomize: %w", err)}
	}
	job := &renderJob{Dir: snap.Path, Opts: opts, Overlay: &jobOverlay{
		Objects: held, Kustomize: *k, Secrets: holdsSecret(snap),
	}}
	r, err := runWorker(job, opts)
	if err != nil {
		return nil, err
	}
	out := *snap
	out.Objects = r.objs
	return &out, nil
}

// Overlay puts k on top of snap's objects behind the render wall, within the
// source's render limits (the function Overlay).
func (s *Source) Overlay(snap *Snapshot, k *v1alpha1.Kustomize) (*Snapshot, error) {
	return Overlay(snap, k, s.opts)
}

// holdsSecret reports whether one of snap's objects is a Secret.
func holdsSecret(snap *Snapshot) bool {
	for _, o := range snap.Objects {
		if o.GetKind() == "Secret" && (o.GroupVersionKind().Group == "") {
			return true
		}
	}
	return false
}

// runOverlay is a worker's spec.kustomize: one file per object and a
// kustomization over them, in memory, rendered as a repository's
// kustomization is (Render: no plugins, no URLs, the budgets of opts).
func runOverlay(dir string, ov *jobOverlay, opts Options) (rendered, error) {
	fs := newInMemoryFS()
	kust := kustomizationOf(&ov.Kustomize)
	for i, o := range ov.Objects {
		name := fmt.Sprintf("object-%d.json", i+1)
		if err := fs.WriteFile(path.Join(overlayDir, name), o); err != nil {
			return rendered{}, &RenderError{File: dir, Err: fmt.Errorf("spec.kustomize: %w", err)}
		}
		kust.Resources = append(kust.Resources, name)
	}
	data, err := sigsyaml.Marshal(kust)
	if err != nil {
		return rendered{}, &RenderError{File: dir, Err: fmt.Errorf("spec.kustomize: %w", err)}
	}
	if err := fs.WriteFile(path.Join(overlayDir, "kustomization.yaml"), data); err != nil {
		return rendered{}, &RenderError{File: dir, Err: fmt.Errorf("spec.kustomize: %w", err)}
	}
	objs, err := renderCopied(fs, overlayDir, opts, nil)
	if err != nil {
		reason := renderError(dir, err).Reason
		var re *RenderError
		if errors.As(err, &re) && re.Reason != "" {
			reason = re.Reason
		}
		// err reads "spec.kustomize: kustomize build: ...", or names the
		// object file over a budget.
		return rendered{}, &RenderError{File: dir, Reason: reason, Err: err}
	}
	return rendered{objs: objs}, nil
}

// kustomizationOf is the kustomization k makes, its resources aside. Common
// labels go on metadata alone, as Flux's commonMetadata puts them: a
// selector or a pod template left alone is not an immutable field changed.
func kustomizationOf(k *v1alpha1.Kustomize) *types.Kustomization {
	kust := &types.Kustomization{
		TypeMeta:          types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		NamePrefix:        k.NamePrefix,
		NameSuffix:        k.NameSuffix,
		CommonAnnotations: maps.Clone(k.CommonAnnotations),
	}
	if len(k.CommonLabels) > 0 {
		kust.Labels = []types.Label{{Pairs: maps.Clone(k.CommonLabels)}}
	}
	for _, img := range k.Images {
		kust.Images = append(kust.Images, types.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	for _, p := range k.Patches {
		patch := types.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			patch.Target = &types.Selector{
				ResId: resid.ResId{
					Gvk:       resid.Gvk{Group: t.Group, Version: t.Version, Kind: t.Kind},
					Name:      t.Name,
					Namespace: t.Namespace,
				},
				LabelSelector:      t.LabelSelector,
				AnnotationSelector: t.AnnotationSelector,
			}
		}
		kust.Patches = append(kust.Patches, patch)
	}
	return kust
}
