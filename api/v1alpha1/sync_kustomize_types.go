package v1alpha1

// Kustomize is what a Sync puts on top of its render (spec.kustomize): the
// fields a Flux Kustomization and an Argo CD Application's source.kustomize
// add to what a path renders to. They apply after rendering, the same way to
// plain YAML, a kustomization and a Helm chart: the rendered objects become
// the resources of a kustomization made of these fields, built by kustomize
// behind the render wall, and before spec.postBuild's substitution (Flux's
// order). See docs/overlays.md.
type Kustomize struct {
	// namespace is set on every namespaced object, whatever namespace it
	// names, and on the subjects of RoleBindings and ClusterRoleBindings that
	// name a ServiceAccount: kustomize's namespace, Flux's targetNamespace.
	// spec.destination.namespace, by contrast, sets only the objects that
	// name none (Argo CD's destination.namespace).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// namePrefix is put in front of the name of every object, and of every
	// reference to it that kustomize knows (a ConfigMap a Deployment mounts,
	// ...): kustomize's namePrefix.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	NamePrefix string `json:"namePrefix,omitempty"`

	// nameSuffix is put after the name of every object and of every reference
	// to it that kustomize knows: kustomize's nameSuffix.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	NameSuffix string `json:"nameSuffix,omitempty"`

	// commonLabels are set on the metadata of every object, as Flux's
	// commonMetadata.labels: selectors and pod templates are left alone (a
	// Deployment's selector is immutable).
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	CommonLabels map[string]string `json:"commonLabels,omitempty"`

	// commonAnnotations are set on the metadata of every object: kustomize's
	// commonAnnotations, Flux's commonMetadata.annotations.
	// +kubebuilder:validation:MaxProperties=64
	// +optional
	CommonAnnotations map[string]string `json:"commonAnnotations,omitempty"`

	// images override the name, tag or digest of container images, in every
	// field kustomize knows holds one: kustomize's images.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Images []KustomizeImage `json:"images,omitempty"`

	// patches are strategic merge or JSON 6902 patches, inline, each applied
	// to the objects its target selects (to the object it names when it has
	// no target): kustomize's patches. A patch without target naming an
	// object that is not rendered fails the render; a target that selects
	// nothing is no error, as in kustomize.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Patches []KustomizePatch `json:"patches,omitempty"`

	// components are kustomize Components (directories whose
	// kustomization.yaml is of kind Component) in the Sync's repository, each
	// relative to spec.source.path, put on the rendered objects before the
	// other fields (kustomize's order: a component sees the names the path
	// renders): kustomize's components, as a Flux Kustomization and an Argo
	// CD Application list them. A packaged chart (spec.source.chart) has no
	// repository to read them from.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=atomic
	// +optional
	Components []string `json:"components,omitempty"`
}

// KustomizeImage overrides one container image: kustomize's image override.
type KustomizeImage struct {
	// name is the image to override, as the objects name it, without tag or
	// digest.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Name string `json:"name"`
	// newName replaces the image's name.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	NewName string `json:"newName,omitempty"`
	// newTag replaces the image's tag.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	NewTag string `json:"newTag,omitempty"`
	// digest replaces the image's tag with a digest (sha256:...); it takes
	// precedence over newTag.
	// +kubebuilder:validation:MaxLength=128
	// +optional
	Digest string `json:"digest,omitempty"`
}

// KustomizePatch is one inline patch and the objects it applies to.
type KustomizePatch struct {
	// patch is a strategic merge patch (a partial object, YAML or JSON) or a
	// JSON 6902 patch (a list of operations, which needs a target).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=65536
	// +required
	Patch string `json:"patch"`
	// target selects the objects the patch applies to; without it, a
	// strategic merge patch applies to the object it names.
	// +optional
	Target *KustomizeSelector `json:"target,omitempty"`
}

// KustomizeSelector selects rendered objects as kustomize's patch target
// does: every field set must match; name and namespace are regular
// expressions.
type KustomizeSelector struct {
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Version string `json:"version,omitempty"`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind string `json:"kind,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// labelSelector is a label selector (app=web,tier in (a,b)).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
	// annotationSelector selects on annotations as labelSelector does on labels.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
}

// IsEmpty reports whether k puts nothing on top of a render.
func (k *Kustomize) IsEmpty() bool {
	return k == nil || (k.Namespace == "" && k.NamePrefix == "" && k.NameSuffix == "" && len(k.CommonLabels) == 0 &&
		len(k.CommonAnnotations) == 0 && len(k.Images) == 0 && len(k.Patches) == 0 && len(k.Components) == 0)
}
