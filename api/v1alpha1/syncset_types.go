package v1alpha1

import (
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// SyncSetLabel on a generated Sync names the SyncSet that made it, so that
// `tether get` groups a fleet and a label selector finds it; the ownerReference
// says the same to the garbage collector.
const SyncSetLabel = "tether.dev/syncset"

// RolloutPinAnnotation on a generated Sync repeats the commit a rolling sync
// pinned it to (tether.dev/pin-revision), so that the SyncSet knows the pin is
// its own: when spec.strategy.rollingSync is removed, it removes the pins it
// set, and leaves alone a pin set by hand (`tether rollback`).
const RolloutPinAnnotation = "tether.dev/rollout-pin"

// RolloutFromAnnotation on a generated Sync names the commit it was at before a
// rolling sync with rollback moved it to the new revision: where a failed step
// goes back to.
const RolloutFromAnnotation = "tether.dev/rollout-from"

// RolledBackAnnotation on a generated Sync names the revision a rolling sync
// rolled it back from: the step stays at the commits it had (RolloutFromAnnotation)
// until the SyncSet's Syncs name another revision, rather than trying the failed
// one again.
const RolledBackAnnotation = "tether.dev/rolled-back-from"

// DefaultGeneratedLimit is the most of a SyncSet's Syncs one change of its
// generators may delete when spec.generatedLimit is not set.
const DefaultGeneratedLimit = "50%"

// Condition types set on a SyncSet besides Ready, Reconciling and Stalled.
const (
	// DeletionsHeldCondition is True while Syncs that the generators no longer
	// yield are kept, because the generators yielded nothing or more of the Syncs
	// went than spec.generatedLimit allows; its message says how many and why.
	DeletionsHeldCondition = "DeletionsHeld"
	// RolloutCondition reports spec.strategy.rollingSync: True when every step is
	// Healthy at the newest revision, False with reason RolloutHalted when a step's
	// Sync is Degraded (and, with rollback, once the step is rolled back), Unknown
	// (RolloutProgressing) while a step rolls out.
	RolloutCondition = "Rollout"
)

// SyncSet makes one Sync per parameter set its generators yield (a directory or a
// file of a git repository, an element of a list, a pair of two generators), from
// one template, keeps them as git changes, and may roll a new revision out across
// them step by step. See docs/syncsets.md.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tether,shortName=sys
// +kubebuilder:printcolumn:name="Syncs",type=integer,JSONPath=`.status.syncs`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readySyncs`
// +kubebuilder:printcolumn:name="Step",type=integer,priority=1,JSONPath=`.status.rollout.step`
// +kubebuilder:printcolumn:name="Status",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SyncSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec says which Syncs to make and how to roll a change out across them.
	// +required
	Spec SyncSetSpec `json:"spec"`
	// status is what Tether last observed; written only by Tether.
	// +optional
	Status SyncSetStatus `json:"status,omitempty"`
}

// SyncSetSpec is what a user declares.
type SyncSetSpec struct {
	// generators yield the parameter sets; each set makes one Sync. The sets of
	// all generators are joined (a Sync name made twice is refused).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +required
	Generators []SyncSetGenerator `json:"generators"`

	// template is the Sync made for each parameter set. Its string fields may hold
	// {{parameter}} placeholders, except the ones that decide what a Sync may do
	// (spec.serviceAccountName, spec.dependsOn[].namespace): those are taken as
	// written. Every Sync is made in the SyncSet's own namespace.
	// +required
	Template SyncTemplate `json:"template"`

	// strategy says how a new revision reaches the Syncs: all at once (no
	// strategy) or step by step (rollingSync).
	// +optional
	Strategy *SyncSetStrategy `json:"strategy,omitempty"`

	// preserveSyncsOnDeletion keeps the Syncs (and what they applied) when the
	// SyncSet is deleted: their ownerReferences are removed first. Default false:
	// deleting the SyncSet deletes its Syncs, which prune or orphan their objects
	// as each Sync's deletionPolicy says.
	// +optional
	PreserveSyncsOnDeletion bool `json:"preserveSyncsOnDeletion,omitempty"`

	// generatedLimit is the most of the SyncSet's Syncs that one change of its
	// generators may delete, as a count or a percentage. Default 50%. Generators
	// that suddenly yield nothing never delete anything.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="generatedLimit must be a non-negative count or a percentage between 0% and 100%"
	// +optional
	GeneratedLimit *intstr.IntOrString `json:"generatedLimit,omitempty"`

	// suspend stops the SyncSet: its Syncs are neither made, changed nor deleted
	// (each still follows git on its own).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// SyncSetGenerator is one source of parameter sets: exactly one of its fields.
//
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.git), has(self.matrix), has(self.merge), has(self.clusters)].filter(x, x).size() == 1",message="a generator is exactly one of list, git, matrix, merge or clusters"
type SyncSetGenerator struct {
	// list yields one parameter set per element.
	// +optional
	List *ListGenerator `json:"list,omitempty"`
	// git yields one parameter set per directory or file of a repository.
	// +optional
	Git *GitGenerator `json:"git,omitempty"`
	// matrix yields every combination of one set of each of its two generators.
	// +optional
	Matrix *MatrixGenerator `json:"matrix,omitempty"`
	// merge joins the sets of its generators on mergeKeys: the first generator's
	// sets, each overlaid with the later generators' set of the same keys.
	// +optional
	Merge *MergeGenerator `json:"merge,omitempty"`
	// clusters yields one parameter set per cluster registered with the agent
	// that allows the SyncSet's namespace.
	// +optional
	Clusters *ClustersGenerator `json:"clusters,omitempty"`
}

// SyncSetChildGenerator is a generator inside a matrix or a merge: a list, a
// git or a clusters generator (matrices do not nest).
//
// +kubebuilder:validation:XValidation:rule="[has(self.list), has(self.git), has(self.clusters)].filter(x, x).size() == 1",message="a generator inside a matrix or a merge is exactly one of list, git or clusters"
type SyncSetChildGenerator struct {
	// list yields one parameter set per element.
	// +optional
	List *ListGenerator `json:"list,omitempty"`
	// git yields one parameter set per directory or file of a repository.
	// +optional
	Git *GitGenerator `json:"git,omitempty"`
	// clusters yields one parameter set per registered cluster.
	// +optional
	Clusters *ClustersGenerator `json:"clusters,omitempty"`
}

// ListGenerator yields its elements as parameter sets.
type ListGenerator struct {
	// elements are objects whose fields become parameters; nested fields are
	// named with dots ({cluster: {region: eu}} gives cluster.region).
	// +kubebuilder:validation:MaxItems=1000
	// +listType=atomic
	// +required
	Elements []apiextensionsv1.JSON `json:"elements"`
}

// GitGenerator yields a parameter set per directory, or per file, of one
// repository at the newest commit of a ref, with the credentials of secretRef
// read as the Syncs it makes would read theirs.
//
// +kubebuilder:validation:XValidation:rule="has(self.directories) != has(self.files)",message="a git generator lists exactly one of directories or files"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.verify.mode) || self.verify.mode == 'HEAD' || has(self.ref.tag) || has(self.ref.semver)",message="verify.mode Tag and TagAndHEAD need ref.tag or ref.semver"
type GitGenerator struct {
	// url of the repository, as a Sync's spec.source.url.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^((https?|ssh|file)://.+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+)$`
	// +required
	URL string `json:"url"`
	// ref to read: exactly one of branch, tag, semver or commit. Default branch main.
	// +kubebuilder:default={branch: "main"}
	// +optional
	Ref GitRef `json:"ref,omitzero"`
	// secretRef names a Secret of the SyncSet's namespace holding the
	// repository's credentials, with the keys of a Sync's spec.source.secretRef.
	// It is read as the template's spec.serviceAccountName (else the agent's
	// default account, else the agent itself), as the Syncs it makes read
	// theirs: a SyncSet reads no Secret its Syncs could not.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// verify has the revision the generator reads checked as a Sync's
	// spec.source.verify checks its own (docs/supply-chain.md): its keys Secret,
	// of the SyncSet's namespace, is read as secretRef is. A revision that fails
	// makes no Syncs and keeps those made before.
	// +optional
	Verify *SourceVerify `json:"verify,omitempty"`
	// interval is how often the repository is listed again. Default 1m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// directories yield one set per directory that an entry matches and no
	// exclude entry does, with the parameters path, path.basename,
	// path.basenameNormalized and path[N].
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Directories []GitDirectory `json:"directories,omitempty"`
	// files yield one set per YAML or JSON file an entry matches: the file's
	// fields, flattened with dots, and path, path.basename, path.filename
	// (path is the file's directory). A file holding a list yields one set per
	// element.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Files []GitFile `json:"files,omitempty"`
}

// GitDirectory is a glob of directories ("apps/*"), each part matched as Go's
// path.Match does; "**" is not supported.
type GitDirectory struct {
	// path is the glob, relative to the repository's root.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Path string `json:"path"`
	// exclude removes the directories the glob matches from those the other
	// entries match.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// GitFile is a glob of files ("clusters/*/config.yaml").
type GitFile struct {
	// path is the glob, relative to the repository's root.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	Path string `json:"path"`
	// exclude removes the files the glob matches from those the other entries match.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// MatrixGenerator combines exactly two generators.
type MatrixGenerator struct {
	// generators are the two generators combined.
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=2
	// +listType=atomic
	// +required
	Generators []SyncSetChildGenerator `json:"generators"`
}

// MergeGenerator joins generators on keys.
type MergeGenerator struct {
	// mergeKeys are the parameters whose values join the sets.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	// +required
	MergeKeys []string `json:"mergeKeys"`
	// generators are the generators joined; the first one decides which sets exist.
	// +kubebuilder:validation:MinItems=2
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +required
	Generators []SyncSetChildGenerator `json:"generators"`
}

// ClustersGenerator yields a parameter set per cluster registered with the
// agent (a Secret labelled tether.dev/cluster=true in its namespace) whose
// tether.dev/allowed-namespaces annotation allows the SyncSet's namespace, as
// Argo CD's cluster generator: the parameters cluster (its name), cluster.server
// (its API server's URL) and cluster.labels.<key> (the Secret's labels). The
// template's spec.destination.cluster may be written "{{cluster}}": the one
// placeholder that field takes. See docs/syncsets.md.
type ClustersGenerator struct {
	// selector chooses registered clusters by their Secret's labels; none: all.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// SyncTemplate is the Sync made from each parameter set.
type SyncTemplate struct {
	// metadata of the Sync. The namespace is always the SyncSet's.
	// +required
	Metadata SyncTemplateMeta `json:"metadata"`
	// spec of the Sync, as a Sync's spec (see docs/api.md), whose string values may
	// hold {{parameter}} placeholders. It is checked whole, after substitution, for
	// each Sync made.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +required
	Spec apiextensionsv1.JSON `json:"spec"`
}

// SyncTemplateMeta is the metadata a template gives each Sync.
type SyncTemplateMeta struct {
	// name of the Sync; it must differ for every parameter set
	// ("{{path.basenameNormalized}}").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Name string `json:"name"`
	// labels of the Sync; their values may hold placeholders. rollingSync steps
	// select Syncs by these.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations of the Sync; their values may hold placeholders.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// SyncSetStrategy says how a new revision reaches a SyncSet's Syncs.
type SyncSetStrategy struct {
	// rollingSync rolls a new revision out step by step.
	// +optional
	RollingSync *RollingSyncStrategy `json:"rollingSync,omitempty"`
}

// RollingSyncStrategy rolls a revision out in steps chosen by label: a step
// begins once every Sync of the steps before it is Healthy at the new revision,
// and a Degraded Sync halts the steps after its own. Syncs no step selects form
// a last step of their own.
type RollingSyncStrategy struct {
	// steps in order.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +required
	Steps []RollingSyncStep `json:"steps"`
	// rollback, when true, moves the Syncs of a halted step back to the commits
	// they were at before the step began (pinned there), and keeps them there
	// until the Syncs' ref names a new revision. Syncs that had applied nothing
	// before stay where they are. Default false: a halted step stays at the new
	// revision for a person to look at.
	// +optional
	Rollback bool `json:"rollback,omitempty"`
}

// RollingSyncStep selects the Syncs of one step.
type RollingSyncStep struct {
	// matchLabels selects the step's Syncs by their (template) labels; a Sync
	// belongs to the first step that selects it.
	// +required
	MatchLabels map[string]string `json:"matchLabels"`
	// maxUpdate is the most of the step's Syncs that move to the new revision at
	// once, as a count or a percentage of the step (rounded up; at least one).
	// Default, or a value that is neither: all of them.
	// +kubebuilder:validation:XIntOrString
	// +optional
	MaxUpdate *intstr.IntOrString `json:"maxUpdate,omitempty"`
}

// SyncSetStatus is what Tether last observed of a SyncSet.
type SyncSetStatus struct {
	// observedGeneration is the generation of the spec this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// syncs is how many Syncs the SyncSet has (made and kept).
	// +optional
	Syncs int `json:"syncs"`
	// readySyncs is how many of them are Ready.
	// +optional
	ReadySyncs int `json:"readySyncs"`
	// revisions are the commits the git generators last read, by repository.
	// +optional
	// +listType=atomic
	Revisions []string `json:"revisions,omitempty"`
	// rollout is where spec.strategy.rollingSync stands.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
	// conditions: Ready, Reconciling, Stalled, DeletionsHeld, Rollout.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// RolloutStatus is where a rolling sync stands.
type RolloutStatus struct {
	// revision is the commit being rolled out.
	// +optional
	Revision string `json:"revision,omitempty"`
	// step is the step rolling out, from 1; one past the last when all are done.
	// +optional
	Step int `json:"step,omitempty"`
	// steps is how many steps there are (those of the spec, and one for Syncs
	// no step selects when there are any).
	// +optional
	Steps int `json:"steps,omitempty"`
}

// SyncSetList is a list of SyncSets.
//
// +kubebuilder:object:root=true
type SyncSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SyncSet `json:"items"`
}

// GeneratedLimitOrDefault reports spec.generatedLimit with its default applied.
func (s *SyncSetSpec) GeneratedLimitOrDefault() intstr.IntOrString {
	if s.GeneratedLimit == nil {
		return intstr.FromString(DefaultGeneratedLimit)
	}
	return *s.GeneratedLimit
}

func init() {
	SchemeBuilder.Register(&SyncSet{}, &SyncSetList{})
}

// IntervalOrDefault reports spec.generators[].git.interval with its default (1m).
func (g *GitGenerator) IntervalOrDefault() time.Duration {
	if g.Interval == nil || g.Interval.Duration <= 0 {
		return DefaultInterval
	}
	return g.Interval.Duration
}
