package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// HelmSpec says how a Helm chart renders (spec.helm). Values are layered, each
// layer merged over the ones before it: the chart's own values.yaml, then
// valuesFiles in order, then valuesFrom in order, then values.
type HelmSpec struct {
	// releaseName is the chart's .Release.Name. Default: the Sync's name.
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// values are inline values, merged last, over every other layer.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// valuesFiles are values files of the chart's repository, relative to the
	// chart's directory, merged in order over the chart's values.yaml.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=atomic
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// valuesFrom are values read from ConfigMaps and Secrets of the Sync's
	// namespace, as the Sync's identity, merged in order over valuesFiles.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// skipCRDs leaves out the chart's crds/ directory. Without it the CRDs are
	// applied first, before the templates' objects.
	// +optional
	SkipCRDs bool `json:"skipCRDs,omitempty"`
}

// ValuesReference names a key of a ConfigMap or Secret holding values as YAML.
type ValuesReference struct {
	// kind of the object: ConfigMap or Secret.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	// +required
	Kind string `json:"kind"`
	// name of the object, in the Sync's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// key whose value holds the values. Default values.yaml.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:default=values.yaml
	// +optional
	Key string `json:"key,omitempty"`
}

// DefaultValuesKey is the key of a valuesFrom reference that names none.
const DefaultValuesKey = "values.yaml"

// KeyOrDefault reports the key with its default (values.yaml) applied.
func (r ValuesReference) KeyOrDefault() string {
	if r.Key == "" {
		return DefaultValuesKey
	}
	return r.Key
}

// ChartSource is a packaged chart in a chart repository or an OCI registry
// (spec.source.chart).
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || self.repository.startsWith('oci://')",message="verify checks cosign signatures of charts in OCI registries: it needs an oci:// repository"
type ChartSource struct {
	// repository is the chart repository's URL (an index.yaml over http(s)), or
	// an OCI registry's oci://host/path, the chart's name appended as Helm does
	// (oci://host/path/name, its tags the versions).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^(https?|oci)://.+$`
	// +required
	Repository string `json:"repository"`
	// name of the chart in the repository (in an OCI registry, the last
	// component of its repository path).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// version is an exact version or a semver range; the newest match is
	// followed at the interval. Default: the newest version.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Version string `json:"version,omitempty"`
	// verify has the chart's cosign signature checked against trusted public
	// keys before it is rendered (a chart in an OCI registry, signed by
	// digest): an unsigned or wrongly signed version is refused, and the one
	// applied last stays applied. See docs/oci-artifacts.md.
	// +optional
	Verify *OCIVerify `json:"verify,omitempty"`
}

// HelmReleaseName reports the release name a Sync's chart renders with: spec.helm's
// releaseName, or the Sync's name.
func (s *Sync) HelmReleaseName() string {
	if s.Spec.Helm != nil && s.Spec.Helm.ReleaseName != "" {
		return s.Spec.Helm.ReleaseName
	}
	return s.Name
}
