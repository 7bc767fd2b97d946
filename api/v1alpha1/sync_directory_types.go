package v1alpha1

// DirectorySpec selects the files of a plain path that render (Argo CD's
// spec.source.directory). A path holding a kustomization is built whole,
// whatever it says.
type DirectorySpec struct {
	// recurse reads subdirectories too: their manifest files, and each one
	// holding a kustomization built as one. Default true (Flux's way; Argo
	// CD's default is false).
	// +optional
	Recurse *bool `json:"recurse,omitempty"`
	// include, when set, renders only the files whose path relative to
	// spec.source.path it matches: a glob as Argo CD reads it ("*" and "?"
	// match "/" too, "{a,b}" is either), such as "*.yaml" or
	// "{deployment.yaml,service.yaml}". A subdirectory holding a
	// kustomization is selected by its own path.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Include string `json:"include,omitempty"`
	// exclude leaves out the files (and kustomization subdirectories) whose
	// path relative to spec.source.path it matches, a glob as include is;
	// it wins over include.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Exclude string `json:"exclude,omitempty"`
}

// RecurseOrDefault reports recurse with its default (true) applied.
func (d *DirectorySpec) RecurseOrDefault() bool {
	return d == nil || d.Recurse == nil || *d.Recurse
}
