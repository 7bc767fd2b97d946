package v1alpha1

// PostBuild says what happens to a revision's objects after they are rendered
// and before they are applied (spec.postBuild, Flux's shape): variable
// substitution, for a repository written for Flux's postBuild.substitute.
type PostBuild struct {
	// substitute holds variables and their values, substituted for ${name} (and
	// the other forms Flux documents, ${name:=default}, ${name:-default}, ...)
	// in every rendered object. They take precedence over substituteFrom. Names
	// match ^[_[:alpha:]][_[:alpha:][:digit:]]*$.
	// +kubebuilder:validation:MaxProperties=256
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`

	// substituteFrom reads variables from the keys of ConfigMaps and Secrets of
	// the Sync's namespace, as the Sync's identity; a later one overrides an
	// earlier one. The values of a Secret never appear in the Sync's status,
	// Events or errors.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`

	// strict fails the render when an object refers to a variable that is not
	// set and gives no default (${name} without :=, :-, ...), naming the object
	// and the variable: Flux's StrictPostBuildSubstitutions, for this Sync.
	// Without it such a reference becomes the empty string, as in Flux.
	// +optional
	Strict bool `json:"strict,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret whose keys are variables.
type SubstituteReference struct {
	// kind of the object: ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	// +required
	Kind string `json:"kind"`
	// name of the object, in the Sync's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// optional tolerates the object's absence, as if it held no variables.
	// Without it a missing object fails the reconcile (VariablesNotFound).
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// SubstituteAnnotation, set to SubstituteDisabled on a rendered object (as an
// annotation or a label), leaves its ${...} as they are: Flux's opt-out, kept
// under Flux's name so that a repository written for Flux behaves alike.
const (
	SubstituteAnnotation = "kustomize.toolkit.fluxcd.io/substitute"
	SubstituteDisabled   = "disabled"
)
