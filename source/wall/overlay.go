package wall

import (
	"errors"
	"fmt"
	"maps"
	"path"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"
	sigsyaml "sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/render"
	"tether.dev/tether/source/result"
)

// OverlayJob is spec.kustomize as a worker receives it: the objects to put it
// on, as the render cache keeps them, and the fields.
type OverlayJob struct {
	Objects   [][]byte
	Kustomize v1alpha1.Kustomize
	// Components are the components' directories, relative to the
	// repository's root (Kustomize.Components are relative to the path), and
	// Files and Dirs the repository's files they read, by absolute path.
	Components []string
	Files      map[string][]byte
	Dirs       []string
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
//
// Components are read from a repository: source.Source.Overlay reads them from
// snap's revision; this function, given no repository, refuses them.
func Overlay(snap *result.Snapshot, k *v1alpha1.Kustomize, opts render.Options) (*result.Snapshot, error) {
	if k.IsEmpty() {
		return snap, nil
	}
	if len(k.Components) > 0 {
		return nil, &result.RenderError{File: snap.Path, Err: errors.New("spec.kustomize.components: there is no repository here to read them from")}
	}
	return RunOverlay(snap, &OverlayJob{Kustomize: *k}, opts)
}

// RunOverlay runs ov, its objects snap's, in a worker.
func RunOverlay(snap *result.Snapshot, ov *OverlayJob, opts render.Options) (*result.Snapshot, error) {
	held, err := compact(snap.Objects)
	if err != nil {
		return nil, &result.RenderError{File: snap.Path, Err: fmt.Errorf("spec.kustomize: %w", err)}
	}
	ov.Objects, ov.Secrets = held, holdsSecret(snap)
	return runOnObjects(snap, &Job{Dir: snap.Path, Opts: opts, Overlay: ov}, opts)
}

// runOnObjects runs job, a job over snap's objects (an overlay, a
// substitution), in a worker and returns snap with the objects it answered.
func runOnObjects(snap *result.Snapshot, job *Job, opts render.Options) (*result.Snapshot, error) {
	r, err := Run(job, opts)
	if err != nil {
		return nil, err
	}
	out := *snap
	out.Objects = r.objs
	return &out, nil
}

// holdsSecret reports whether one of snap's objects is a Secret.
func holdsSecret(snap *result.Snapshot) bool {
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
func runOverlay(dir string, ov *OverlayJob, opts render.Options) (Rendered, error) {
	fs, err := componentsFS(ov)
	if err != nil {
		return Rendered{}, &result.RenderError{File: dir, Err: fmt.Errorf("spec.kustomize.components: %w", err)}
	}
	kust := kustomizationOf(&ov.Kustomize)
	for _, c := range ov.Components {
		// The kustomization's own directory lies at the root.
		kust.Components = append(kust.Components, path.Join("..", c))
	}
	for i, o := range ov.Objects {
		name := fmt.Sprintf("object-%d.json", i+1)
		if err := fs.WriteFile(path.Join(overlayDir, name), o); err != nil {
			return Rendered{}, &result.RenderError{File: dir, Err: fmt.Errorf("spec.kustomize: %w", err)}
		}
		kust.Resources = append(kust.Resources, name)
	}
	data, err := sigsyaml.Marshal(kust)
	if err != nil {
		return Rendered{}, &result.RenderError{File: dir, Err: fmt.Errorf("spec.kustomize: %w", err)}
	}
	if err := fs.WriteFile(path.Join(overlayDir, "kustomization.yaml"), data); err != nil {
		return Rendered{}, &result.RenderError{File: dir, Err: fmt.Errorf("spec.kustomize: %w", err)}
	}
	objs, err := render.Path(fs, overlayDir, render.Directory{}, opts, nil)
	if err != nil {
		reason := render.FileError(dir, err).Reason
		var re *result.RenderError
		if errors.As(err, &re) && re.Reason != "" {
			reason = re.Reason
		}
		// err reads "spec.kustomize: kustomize build: ...", or names the
		// object file over a budget.
		return Rendered{}, &result.RenderError{File: dir, Reason: reason, Err: err}
	}
	return Rendered{objs: objs}, nil
}

// componentsFS is a file system holding the repository's files ov's
// components read, and nothing where the kustomization over the objects is
// written.
func componentsFS(ov *OverlayJob) (*render.FS, error) {
	fs := render.NewFS()
	for _, d := range ov.Dirs {
		if err := fs.MkdirAll(d); err != nil {
			return nil, err
		}
	}
	for p, data := range ov.Files {
		if err := fs.WriteFile(p, data); err != nil {
			return nil, err
		}
	}
	if fs.Exists(overlayDir) {
		return nil, fmt.Errorf("the repository holds %s, where Tether writes the kustomization over the Rendered objects", overlayDir[1:])
	}
	return fs, nil
}

// kustomizationOf is the kustomization k makes, its resources aside. Common
// labels go on metadata alone, as Flux's commonMetadata puts them: a
// selector or a pod template left alone is not an immutable field changed.
func kustomizationOf(k *v1alpha1.Kustomize) *types.Kustomization {
	kust := &types.Kustomization{
		TypeMeta:          types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Namespace:         k.Namespace,
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
