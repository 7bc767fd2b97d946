package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Finalizer is set on every Sync so that deleting it can first prune (or orphan) what
// it applied; Tether removes it once that is done.
const Finalizer = "tether.dev/finalizer"

// ShardLabel on a Sync assigns it to the agents started with --shard set to its
// value; agents started with --shard "" serve the Syncs without it.
const ShardLabel = "tether.dev/shard"

// Registered clusters (spec.destination.cluster): Secrets of the agent's namespace
// that hold a kubeconfig under ClusterKubeConfigKey. See docs/multi-cluster.md.
const (
	// ClusterLabel set to "true" on a Secret of the agent's namespace registers a
	// cluster, named as the Secret.
	ClusterLabel = "tether.dev/cluster"
	// AllowedNamespacesAnnotation on a registered cluster's Secret lists the
	// namespaces whose Syncs may apply to it, comma-separated; "*" allows all.
	// Without it no Sync may.
	AllowedNamespacesAnnotation = "tether.dev/allowed-namespaces"
	// ClusterKubeConfigKey is the key of a registered cluster's kubeconfig, and
	// the first key tried of a spec.destination.kubeConfig Secret that names none.
	ClusterKubeConfigKey = "value"
)

// Annotations Tether reads or writes on the objects it manages.
const (
	// OwnedByAnnotation names the Sync ("<namespace>/<name>") that applied an object,
	// so ownership is visible with kubectl and a second Sync never takes an object over.
	OwnedByAnnotation = "tether.dev/owned-by"
	// AcceptRevisionAnnotation on a Sync lets it apply one commit (its full hash)
	// that does not descend from the revision applied through the same ref: a
	// branch force-pushed to an older or a rewritten history. Without it such a
	// commit is held (reason HistoryRewritten) and the cluster stays as it is.
	AcceptRevisionAnnotation = "tether.dev/accept-revision"
	// PruneAnnotation set to "disabled" keeps an object when it leaves git.
	PruneAnnotation = "tether.dev/prune"
	// ForceAnnotation set to "true" lets Tether delete and recreate an object whose
	// immutable fields changed in git.
	ForceAnnotation = "tether.dev/force"
	// PinRevisionAnnotation on a Sync pins it to one commit (its full hash) of its
	// repository: while it is set the Sync applies that commit, through the same
	// dry-run gate as any other, keeps fetching its ref to report what git holds,
	// and says so with the Pinned condition. `tether rollback` sets it; removing
	// it (`tether rollback --undo`) resumes following the ref.
	PinRevisionAnnotation = "tether.dev/pin-revision"
)

// ReconcileRequestedAnnotation on a Sync asks for a reconcile that looks at git at
// once, whatever its interval: setting it to a new value (a timestamp) is enough.
// The reconciler acknowledges it by copying the value it handled into
// status.lastHandledReconcileAt, so that whoever asked (`tether reconcile --wait`)
// knows when the answer is in:
//
//	kubectl annotate sync web tether.dev/reconcile-requested-at="$(date +%s)" --overwrite
const ReconcileRequestedAnnotation = "tether.dev/reconcile-requested-at"

// SyncLabel marks every object a Sync applies with SyncLabelValue of that Sync, so
// that a label selector finds them all: a lost inventory is rebuilt from it.
const SyncLabel = "tether.dev/sync"

// Condition types set on a Sync. Ready, Reconciling and Stalled follow kstatus, so
// generic tools (kubectl wait, kstatus, Flux's and Argo's health checks) understand them.
const (
	// ReadyCondition is True when the newest revision is applied in full.
	ReadyCondition = "Ready"
	// ReconcilingCondition is True while Tether works towards the newest spec or revision.
	ReconcilingCondition = "Reconciling"
	// StalledCondition is True when Tether cannot make progress without a change in git
	// or in the Sync (bad input); it does not retry hot in that state.
	StalledCondition = "Stalled"
	// SourceReadyCondition is True when the git source was fetched and rendered.
	SourceReadyCondition = "SourceReady"
	// HealthyCondition is True when every managed object is healthy.
	HealthyCondition = "Healthy"
	// FieldConflictCondition is True while Tether has stopped correcting fields that
	// another field manager kept changing back; its message names object, field and
	// manager, and the ignore rule that would settle it.
	FieldConflictCondition = "FieldConflict"
	// PinnedCondition is True while the Sync applies the commit its
	// tether.dev/pin-revision annotation names instead of its ref's newest.
	PinnedCondition = "Pinned"
	// RolledBackCondition is True while the Sync applies an earlier revision
	// because the newest failed (spec.rollback.onFailure); its reason says why
	// (Degraded or HealthTimeout) and its message names the failed revision.
	RolledBackCondition = "RolledBack"
)

// Default values, resolved by the accessors below as well as by the API server's
// defaulting, so that objects built in Go (which skip server defaulting) behave alike.
const (
	DefaultInterval   = time.Minute
	DefaultPath       = "."
	DefaultPruneLimit = "50%"
	// DefaultHealthTimeout is how long a revision has to turn Healthy before
	// spec.rollback counts it as failed.
	DefaultHealthTimeout = 5 * time.Minute
	// MaxHistory is how many applied revisions status.history keeps.
	MaxHistory = 10
)

// Sync keeps the objects that a path of a git repository renders to applied in the
// cluster, and reports whether the cluster matches git (sync) and whether what it
// applied works (health).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=tether,shortName=sy
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.lastAppliedRevision`
// +kubebuilder:printcolumn:name="Sync",type=string,JSONPath=`.status.sync`
// +kubebuilder:printcolumn:name="Health",type=string,JSONPath=`.status.health`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Pinned",type=string,JSONPath=`.metadata.annotations.tether\.dev/pin-revision`
// +kubebuilder:printcolumn:name="Cluster",type=string,priority=1,JSONPath=`.status.cluster`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Phase",type=string,priority=1,JSONPath=`.status.run.phase`
// +kubebuilder:printcolumn:name="Wave",type=integer,priority=1,JSONPath=`.status.run.wave`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].message`
type Sync struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state: which git source to follow and how to apply it.
	// +required
	Spec SyncSpec `json:"spec"`
	// status is what Tether last observed; written only by Tether.
	// +optional
	Status SyncStatus `json:"status,omitempty"`
}

// SyncSpec is what a user declares.
type SyncSpec struct {
	// source is the git repository, ref and path that hold the desired state.
	// +required
	Source SourceSpec `json:"source"`

	// destination says which cluster the objects go to (the agent's own, or
	// another through a kubeconfig) and where those that name no namespace go.
	// +optional
	Destination DestinationSpec `json:"destination,omitempty"`

	// serviceAccountName is a ServiceAccount in the Sync's namespace that Tether acts
	// as for everything it does with this Sync's objects (read, dry-run, apply, take
	// over, prune, orphan) and to read spec.source.secretRef: what the account may not
	// do, the Sync cannot do. Empty means the agent's --default-service-account, or,
	// when that is not set either, the agent's own identity. See docs/multi-tenancy.md.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// prune deletes objects that Tether applied and that left git. Default true.
	// +kubebuilder:default=true
	// +optional
	Prune *bool `json:"prune,omitempty"`

	// selfHeal corrects drift in the cluster as soon as it is seen. When false, drift is
	// only reported (status.sync OutOfSync) and new git revisions are still applied.
	// Default true.
	// +kubebuilder:default=true
	// +optional
	SelfHeal *bool `json:"selfHeal,omitempty"`

	// allowEmpty lets a render that yields no objects prune everything the Sync applied.
	// Without it, an empty render is treated as a mistake and nothing is deleted.
	// +optional
	AllowEmpty bool `json:"allowEmpty,omitempty"`

	// pruneLimit is the most of the inventory one sync may prune, as a count or a
	// percentage. Default 50%.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="pruneLimit must be a non-negative count or a percentage between 0% and 100%"
	// +optional
	PruneLimit *intstr.IntOrString `json:"pruneLimit,omitempty"`

	// deletionPolicy says what happens to applied objects when the Sync is deleted:
	// Delete prunes them, Orphan leaves them in place. Default: Delete when prune is
	// true, Orphan otherwise.
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// wait makes the Ready condition wait for health, as Flux's wait does: after a
	// revision is applied, Ready is Unknown (reason Progressing) until every object
	// is Healthy (or Suspended), and False (reason Degraded) when one is Degraded, so
	// that `kubectl wait --for=condition=Ready` waits for the rollout. Without it,
	// Ready says the revision is applied and the Healthy condition says the rest.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// suspend stops all reconciling of this Sync; nothing is fetched or applied.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ignoreDifferences lists fields that Tether neither diffs nor applies, so that it
	// never fights another owner of those fields (an HPA's spec.replicas above all).
	// +optional
	// +listType=atomic
	IgnoreDifferences []IgnoreRule `json:"ignoreDifferences,omitempty"`

	// ignoreAutoscaledReplicas leaves spec.replicas to an autoscaler, with no rule
	// written: it is ignored in workloads that a HorizontalPodAutoscaler targets, or
	// whose replicas another manager set through the scale subresource. Default true;
	// false applies git's replicas over the autoscaler's.
	// +kubebuilder:default=true
	// +optional
	IgnoreAutoscaledReplicas *bool `json:"ignoreAutoscaledReplicas,omitempty"`

	// healthChecks judge the health of the kinds they name with CEL expressions, in
	// place of Tether's built-in readers: for custom resources whose controllers
	// follow no condition convention Tether knows. See docs/health.md.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(x, self.exists_one(y, y.apiVersion == x.apiVersion && y.kind == x.kind))",message="each apiVersion and kind may have one health check"
	HealthChecks []HealthCheck `json:"healthChecks,omitempty"`

	// dependsOn lists Syncs that must be Ready at their current revision before
	// this one applies anything, as Flux's dependsOn does. See docs/ordering.md.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=32
	DependsOn []DependencyReference `json:"dependsOn,omitempty"`
	// decryption decrypts SOPS-encrypted files of the revision in the agent, with
	// the keys of a Secret in the Sync's namespace, before they are applied (Flux's
	// spec.decryption). The plaintext stays in the agent's memory. See
	// docs/secrets.md.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`
	// rollback re-applies the last revision that was Healthy when a newer one
	// fails. See docs/rollback.md.
	// +optional
	Rollback *RollbackSpec `json:"rollback,omitempty"`
	// helm says how a Helm chart renders: the release name, the values and
	// whether the chart's CRDs are applied. A path holding a Chart.yaml is a
	// chart, rendered with its own values when helm is not set. See docs/helm.md.
	// +optional
	Helm *HelmSpec `json:"helm,omitempty"`
	// postBuild substitutes variables (${name}, ${name:=default}, ...) in the
	// rendered objects, from inline values and from ConfigMaps and Secrets,
	// as Flux's spec.postBuild does. See docs/substitution.md.
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`
	// kustomize puts a namespace, a name prefix and suffix, common labels and
	// annotations, image overrides, patches and components on top of what the
	// path renders to (plain YAML, a kustomization or a Helm chart alike),
	// before postBuild's
	// substitution: the fields of a Flux Kustomization and of an Argo CD
	// Application's source.kustomize. See docs/overlays.md.
	// +optional
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// RollbackSpec says when a Sync goes back to its last Healthy revision by itself.
type RollbackSpec struct {
	// onFailure re-applies the last revision of status.history that was Healthy
	// when the revision just applied turns Degraded, or is not Healthy within
	// healthTimeout. The Sync stays there (condition RolledBack) until its ref
	// names a newer commit, which it then tries; the failed commit is not tried
	// again unless it is pushed again or a reconcile is requested.
	// +optional
	OnFailure bool `json:"onFailure,omitempty"`
	// healthTimeout is how long a newly applied revision has to turn Healthy
	// before it counts as failed, as a Go duration. Default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	HealthTimeout *metav1.Duration `json:"healthTimeout,omitempty"`
}

// HealthTimeoutOrDefault reports healthTimeout with its default (5m) applied.
func (r *RollbackSpec) HealthTimeoutOrDefault() time.Duration {
	if r == nil || r.HealthTimeout == nil || r.HealthTimeout.Duration <= 0 {
		return DefaultHealthTimeout
	}
	return r.HealthTimeout.Duration
}

// DecryptionProviderSOPS is the one decryption provider: Mozilla SOPS files,
// encrypted with age or OpenPGP keys.
const DecryptionProviderSOPS = "sops"

// Decryption says how SOPS-encrypted files of a revision are decrypted.
type Decryption struct {
	// provider of the encryption; "sops" is the only one.
	// +kubebuilder:validation:Enum=sops
	// +required
	Provider string `json:"provider"`
	// secretRef names a Secret in the Sync's namespace holding the private keys,
	// read as the Sync's identity: every key named *.agekey holds age identities
	// (AGE-SECRET-KEY-1…, one a line), every key named *.asc an armored OpenPGP
	// private key without a passphrase. Only these keys decrypt: the agent's own
	// environment, files and keyrings are never used.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// requireEncryption fails the render when a Secret the revision holds is not
	// encrypted with SOPS: a Secret manifest that is no SOPS file, or a kustomize
	// secretGenerator with literals or reading a file that is no SOPS file.
	// +optional
	RequireEncryption bool `json:"requireEncryption,omitempty"`
}

// HealthCheck judges objects of one kind with CEL expressions over the live
// object, which they see as self and, as in Flux's healthCheckExprs, through its
// top-level fields metadata, spec and status (empty when absent). They are
// evaluated in the order inProgress, failed, current; the first that is true gives
// Progressing, Degraded or Healthy; none true is Progressing. An expression that
// does not compile stalls the Sync (reason HealthCheckInvalid); one that fails to
// evaluate, or exceeds its cost limit, makes the object's health Unknown.
type HealthCheck struct {
	// apiVersion of the objects ("cert-manager.io/v1"); every version of the group
	// and kind is judged alike.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	APIVersion string `json:"apiVersion"`
	// kind of the objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`
	// current is true when the object works (Healthy).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=4096
	// +required
	Current string `json:"current"`
	// inProgress is true while the object is still being worked on (Progressing).
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	InProgress string `json:"inProgress,omitempty"`
	// failed is true when the object failed (Degraded).
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Failed string `json:"failed,omitempty"`
}

// SourceSpec locates desired state in git, or a packaged Helm chart.
//
// +kubebuilder:validation:XValidation:rule="[has(self.url), has(self.chart), has(self.oci)].filter(x, x).size() == 1",message="exactly one of url or chart or oci must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || has(self.url)",message="verify checks the signatures of git revisions: it needs url"
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || !has(self.verify.mode) || self.verify.mode == 'HEAD' || has(self.ref.tag) || has(self.ref.semver)",message="verify.mode Tag and TagAndHEAD need ref.tag or ref.semver"
type SourceSpec struct {
	// url of the git repository: https://, http://, ssh://, git@host:path or file://.
	// Exactly one of url, chart and oci is set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^((https?|ssh|file)://.+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:.+)$`
	// +optional
	URL string `json:"url,omitempty"`

	// chart is a packaged Helm chart from a chart repository, in place of a git
	// repository (url). Exactly one of url, chart and oci is set. See docs/helm.md.
	// +optional
	Chart *ChartSource `json:"chart,omitempty"`

	// oci is an artifact in an OCI registry, in place of a git repository:
	// a directory packed as Flux's artifact format (flux push artifact, tether
	// push artifact) or a plain single-layer tarball; path is rendered inside
	// it. Exactly one of url, chart and oci is set. See docs/supply-chain.md.
	// +optional
	OCI *OCISource `json:"oci,omitempty"`

	// ref selects the revision to follow: exactly one of branch, tag, semver or commit.
	// Default: branch main.
	// +kubebuilder:default={branch: "main"}
	// +optional
	Ref GitRef `json:"ref,omitzero"`

	// path is the directory inside the repository to render, relative to its root.
	// It holds plain YAML/JSON manifests (read recursively) or a kustomization.
	// Default ".".
	// +kubebuilder:default="."
	// +optional
	Path string `json:"path,omitempty"`

	// directory selects which files of a plain path (one without a
	// kustomization) render: Argo CD's spec.source.directory. See
	// docs/overlays.md.
	// +optional
	Directory *DirectorySpec `json:"directory,omitempty"`

	// secretRef names a Secret in the Sync's namespace with credentials for the
	// repository: username and password, bearerToken, or identity and known_hosts.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// verify has every revision checked for a signature by a trusted key
	// before it is rendered: a revision that fails is refused, and the one
	// applied last stays applied. See docs/supply-chain.md.
	// +optional
	Verify *SourceVerify `json:"verify,omitempty"`

	// interval is how often Tether looks for new commits and re-checks the cluster,
	// as a Go duration ("30s", "1m", "1h"). Default 1m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:default="1m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// OCISource is an artifact in an OCI registry (spec.source.oci).
type OCISource struct {
	// url of the artifact's repository: oci://host[:port]/path. A registry on
	// a loopback address is spoken to over http, any other over https;
	// oci://docker.io/name is Docker Hub's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^oci://[^/]+/.+$`
	// +required
	URL string `json:"url"`
	// ref selects the artifact: exactly one of tag, semver or digest.
	// Default: tag latest.
	// +kubebuilder:default={tag: "latest"}
	// +optional
	Ref OCIRef `json:"ref,omitzero"`
	// secretRef names a Secret of the Sync's namespace with the registry's
	// credentials: a kubernetes.io/dockerconfigjson Secret, or username and
	// password (or bearerToken) keys. Read as the Sync's identity.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`
	// verify has the artifact's cosign signature checked against trusted
	// public keys before it is rendered: an unsigned or wrongly signed
	// artifact is refused, and the one applied last stays applied.
	// +optional
	Verify *OCIVerify `json:"verify,omitempty"`
}

// OCIRef selects an artifact of a repository.
// +kubebuilder:validation:XValidation:rule="[has(self.tag), has(self.semver), has(self.digest)].filter(x, x).size() == 1",message="exactly one of tag, semver or digest must be set"
type OCIRef struct {
	// tag to apply; the artifact it names is looked up at every interval, so
	// a tag pushed again is followed.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9._-]*$`
	// +optional
	Tag string `json:"tag,omitempty"`
	// semver range; the artifact of the newest tag that satisfies it is
	// applied (e.g. ">=1.4 <2").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SemVer string `json:"semver,omitempty"`
	// digest pins one artifact by its manifest's digest (sha256:<hex>).
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
}

// String names the ref the way revisions are written: the tag or range, or
// nothing for a pinned digest.
func (r OCIRef) String() string {
	if r.Tag != "" {
		return r.Tag
	}
	return r.SemVer
}

// Signature providers of spec.source.oci.verify.
const (
	// VerifyCosign checks cosign signatures made with a key pair.
	VerifyCosign = "cosign"
)

// OCIVerify says whose artifact signatures a Sync trusts.
type OCIVerify struct {
	// provider of the signatures: cosign (key pairs). Default cosign.
	// +kubebuilder:validation:Enum=cosign
	// +kubebuilder:default=cosign
	// +optional
	Provider string `json:"provider,omitempty"`
	// secretRef names a Secret of the Sync's namespace whose every value is
	// a PEM public key (cosign.pub). It is read as the Sync's identity.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`
}

// Verification modes of spec.source.verify.
const (
	// VerifyHEAD: the commit to apply must carry a good signature.
	VerifyHEAD = "HEAD"
	// VerifyTag: the tag followed (ref.tag, or the tag ref.semver chose) must be
	// an annotated tag carrying a good signature.
	VerifyTag = "Tag"
	// VerifyTagAndHEAD: both the tag and the commit it names.
	VerifyTagAndHEAD = "TagAndHEAD"
)

// SourceVerify says whose signatures a Sync trusts. A pinned commit (ref.commit,
// the pin annotation, a rollback) is verified as a commit whatever the mode: it
// was reached through no tag.
type SourceVerify struct {
	// mode: HEAD (the commit), Tag (the annotated tag followed) or TagAndHEAD.
	// Default HEAD.
	// +kubebuilder:validation:Enum=HEAD;Tag;TagAndHEAD
	// +kubebuilder:default=HEAD
	// +optional
	Mode string `json:"mode,omitempty"`
	// secretRef names a Secret of the Sync's namespace whose every value is
	// either armored OpenPGP public keys or SSH allowed_signers lines (git's
	// gpg.ssh.allowedSignersFile format). It is read as the Sync's identity.
	// +required
	SecretRef LocalObjectReference `json:"secretRef"`
}

// Verifies reports whether s has the signatures of what it applies checked:
// spec.source.verify, or the verify of its OCI artifact or chart.
func (s *SourceSpec) Verifies() bool {
	return s.Verify != nil || (s.OCI != nil && s.OCI.Verify != nil) || (s.Chart != nil && s.Chart.Verify != nil)
}

// ModeOrDefault is the mode, HEAD when unset.
func (v *SourceVerify) ModeOrDefault() string {
	if v.Mode == "" {
		return VerifyHEAD
	}
	return v.Mode
}

// GitRef selects one revision of a repository.
//
// +kubebuilder:validation:XValidation:rule="[has(self.branch), has(self.tag), has(self.semver), has(self.commit)].filter(x, x).size() == 1",message="exactly one of branch, tag, semver or commit must be set"
type GitRef struct {
	// branch to follow; its newest commit is applied.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Branch string `json:"branch,omitempty"`
	// tag to apply.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Tag string `json:"tag,omitempty"`
	// semver range; the newest tag that satisfies it is applied (e.g. ">=1.2 <2").
	// +kubebuilder:validation:MinLength=1
	// +optional
	SemVer string `json:"semver,omitempty"`
	// commit pins one commit by its full SHA-1 hash.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{40}$`
	// +optional
	Commit string `json:"commit,omitempty"`
}

// String names the ref the way revisions are written: the branch, tag or range
// followed by "@", or nothing for a pinned commit.
func (r GitRef) String() string {
	switch {
	case r.Branch != "":
		return r.Branch
	case r.Tag != "":
		return r.Tag
	case r.SemVer != "":
		return r.SemVer
	}
	return ""
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the referent.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
}

// DestinationSpec says where objects go: which cluster, and which namespace of it.
// +kubebuilder:validation:XValidation:rule="!(has(self.kubeConfig) && has(self.cluster))",message="a destination names a kubeConfig or a cluster, not both"
type DestinationSpec struct {
	// namespace for namespaced objects that name none in git.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// kubeConfig applies to another cluster: a Secret of the Sync's own namespace
	// holds its kubeconfig. Tether acts there with the rights of the kubeconfig's
	// user (and as spec.serviceAccountName in that cluster, when set). Only inline
	// credentials are used: a kubeconfig that names a file, or a credential plugin
	// while the agent runs without --allow-kubeconfig-exec, is refused. See
	// docs/multi-cluster.md.
	// +optional
	KubeConfig *KubeConfigReference `json:"kubeConfig,omitempty"`
	// cluster applies to a cluster the operator registered: a Secret of the agent's
	// namespace labelled tether.dev/cluster=true, of this name, whose annotation
	// tether.dev/allowed-namespaces lists the Sync's namespace (or "*").
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Cluster string `json:"cluster,omitempty"`
}

// KubeConfigReference names the Secret that holds a cluster's kubeconfig.
type KubeConfigReference struct {
	// secretRef is a Secret of the Sync's own namespace.
	// +required
	SecretRef SecretKeyReference `json:"secretRef"`
}

// SecretKeyReference names a Secret of the referrer's namespace and one of its keys.
type SecretKeyReference struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// key of the Secret's data that holds the kubeconfig; empty means "value",
	// then "value.yaml" (Flux's keys).
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// InCluster is the cluster name of a Sync that applies to the cluster the agent
// runs in, in status.cluster, `tether get` and the metrics' cluster label.
const InCluster = "in-cluster"

// IsRemote reports whether d names a cluster other than the agent's own.
func (d DestinationSpec) IsRemote() bool { return d.KubeConfig != nil || d.Cluster != "" }

// ClusterName names the cluster d's objects go to: InCluster, a registered
// cluster's name, or "secret/<name>" for a kubeconfig of the Sync's namespace.
// It is bounded by the Syncs there are, and is what metrics label.
func (d DestinationSpec) ClusterName() string {
	switch {
	case d.Cluster != "":
		return d.Cluster
	case d.KubeConfig != nil:
		return "secret/" + d.KubeConfig.SecretRef.Name
	}
	return InCluster
}

// DeletionPolicy says what deleting a Sync does to the objects it applied.
// +kubebuilder:validation:Enum=Delete;Orphan
type DeletionPolicy string

const (
	// DeletionPolicyDelete prunes every object the Sync applied before it goes.
	DeletionPolicyDelete DeletionPolicy = "Delete"
	// DeletionPolicyOrphan leaves the objects and removes Tether's ownership marks.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// IgnoreRule selects fields of some objects that Tether leaves to other owners.
// +kubebuilder:validation:XValidation:rule="has(self.jsonPointers) || has(self.managers)",message="an ignore rule needs jsonPointers or managers"
type IgnoreRule struct {
	// group of the objects; empty means the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// kind of the objects; "*" matches every kind.
	// +kubebuilder:validation:MinLength=1
	// +required
	Kind string `json:"kind"`
	// name of the object; empty matches every name.
	// +optional
	Name string `json:"name,omitempty"`
	// namespace of the object; empty matches every namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// jsonPointers (RFC 6901) of the fields to ignore, e.g. /spec/replicas.
	// +optional
	// +listType=atomic
	JSONPointers []string `json:"jsonPointers,omitempty"`
	// managers whose fields (per metadata.managedFields) are ignored.
	// +optional
	// +listType=atomic
	Managers []string `json:"managers,omitempty"`
}

// SyncStatusCode says whether the cluster matches git.
// +kubebuilder:validation:Enum=Synced;OutOfSync;Unknown
type SyncStatusCode string

// Sync status codes.
const (
	SyncStatusSynced    SyncStatusCode = "Synced"
	SyncStatusOutOfSync SyncStatusCode = "OutOfSync"
	SyncStatusUnknown   SyncStatusCode = "Unknown"
)

// HealthStatusCode says whether what Tether applied works.
// +kubebuilder:validation:Enum=Healthy;Progressing;Degraded;Suspended;Missing;Unknown
type HealthStatusCode string

// Health status codes.
const (
	HealthHealthy     HealthStatusCode = "Healthy"
	HealthProgressing HealthStatusCode = "Progressing"
	HealthDegraded    HealthStatusCode = "Degraded"
	HealthSuspended   HealthStatusCode = "Suspended"
	HealthMissing     HealthStatusCode = "Missing"
	HealthUnknown     HealthStatusCode = "Unknown"
)

// SyncStatus is what Tether observed, written once per reconcile.
type SyncStatus struct {
	// observedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// cluster names the cluster the objects go to (spec.destination): "in-cluster",
	// a registered cluster's name, or "secret/<name>" for a kubeconfig Secret.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// lastHandledReconcileAt is the value of the tether.dev/reconcile-requested-at
	// annotation that the reconcile this status describes had seen: a request is
	// answered once this equals the value that was set.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
	// sourceRevision is the newest revision fetched: "<ref>@sha1:<hash>".
	// +optional
	SourceRevision string `json:"sourceRevision,omitempty"`
	// lastAppliedRevision is the revision whose state was last applied in full.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`
	// lastAppliedSigner is who signed lastAppliedRevision, when
	// spec.source.verify is set: the trusted key's identity, its method and its
	// fingerprint ("Alice <alice@example.com> (openpgp 0A1B…)").
	// +optional
	LastAppliedSigner string `json:"lastAppliedSigner,omitempty"`
	// lastAppliedTime is when lastAppliedRevision was last applied in full.
	// +optional
	LastAppliedTime *metav1.Time `json:"lastAppliedTime,omitempty"`
	// sync says whether every managed object matches git.
	// +optional
	Sync SyncStatusCode `json:"sync,omitempty"`
	// health aggregates the health of every managed object.
	// +optional
	Health HealthStatusCode `json:"health,omitempty"`
	// conditions: Ready, Reconciling, Stalled, SourceReady and Healthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// objects is the inventory: every object Tether manages for this Sync, grouped
	// by kind and namespace, each group listing its objects' names. An object is
	// added before it is first written and removed once its deletion is confirmed,
	// so a crash never loses track of it. The managed objects also carry the label
	// tether.dev/sync, from which a lost inventory is rebuilt.
	// +optional
	// +listType=atomic
	Objects []InventoryGroup `json:"objects,omitempty"`
	// inventory is the inventory as agents before objects wrote it, one id per
	// object: "<namespace>_<name>_<group>_<kind>_<version>". Tether reads it (with
	// objects, when both are set) and moves its entries to objects the next time
	// it records the inventory.
	// +optional
	// +listType=atomic
	LegacyInventory []string `json:"inventory,omitempty"`
	// resources details the managed objects that are not Synced and Healthy, or
	// that Tether has something to say about (fields left to another manager), the
	// worst first and at most a few hundred; resourcesOmitted counts the rest.
	// summary counts every object of the inventory.
	// +optional
	// +listType=atomic
	Resources []ResourceStatus `json:"resources,omitempty"`
	// resourcesOmitted is how many objects with details were left out of resources
	// to keep the status small.
	// +optional
	ResourcesOmitted int32 `json:"resourcesOmitted,omitempty"`
	// summary counts the objects of the inventory by sync and health status.
	// +optional
	Summary *ResourceSummary `json:"summary,omitempty"`
	// fieldsGivenUp lists the fields Tether stopped correcting because another field
	// manager kept changing them back (the FieldConflict condition explains each):
	// they are neither compared nor applied until the Sync changes or the agent
	// restarts, by the agent and by `tether diff` alike.
	// +optional
	// +listType=atomic
	FieldsGivenUp []GivenUpField `json:"fieldsGivenUp,omitempty"`
	// run is the ordered apply of a revision with hooks or waves: the phase and
	// wave in progress, or where it failed. See docs/ordering.md.
	// +optional
	Run *RunStatus `json:"run,omitempty"`
	// hooks lists the hook objects Tether created and has not deleted yet (their
	// delete policies keep them), so that they are deleted before the hook runs
	// again and when the Sync is deleted. Hooks are not in the inventory.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	Hooks []HookStatus `json:"hooks,omitempty"`
	// history lists the revisions applied in full, newest first, at most 10: when
	// each was applied and the health it reached. A revision applied again (a
	// rollback, a pin) is a new entry.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	History []HistoryEntry `json:"history,omitempty"`
	// rollback is set while the Sync applies an earlier revision because a newer
	// one failed (spec.rollback.onFailure); the RolledBack condition says the same
	// in words.
	// +optional
	Rollback *RollbackStatus `json:"rollback,omitempty"`
}

// HistoryEntry is one revision a Sync applied in full.
type HistoryEntry struct {
	// revision applied: "<ref>@sha1:<hash>".
	// +kubebuilder:validation:MaxLength=512
	// +required
	Revision string `json:"revision"`
	// appliedAt is when it was applied.
	// +required
	AppliedAt metav1.Time `json:"appliedAt"`
	// health is the health the revision reached while it was applied: Healthy once
	// it was, else the last seen.
	// +optional
	Health HealthStatusCode `json:"health,omitempty"`
	// message is the commit's subject, its first line, bounded and stripped of
	// control characters (it is text from git, written by anyone who can push).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Message string `json:"message,omitempty"`
	// author is the name of the commit's author (never the email), bounded and
	// stripped of control characters like message.
	// +kubebuilder:validation:MaxLength=256
	// +optional
	Author string `json:"author,omitempty"`
	// healthyAt is when the revision first became Healthy while applied; unset
	// while it has not. healthyAt - appliedAt is how long it took.
	// +optional
	HealthyAt *metav1.Time `json:"healthyAt,omitempty"`
}

// RollbackStatus records an automatic rollback.
type RollbackStatus struct {
	// failedRevision is the revision that failed; it is not applied again until
	// the ref moves on, or a reconcile is requested.
	// +required
	FailedRevision string `json:"failedRevision"`
	// revision is the earlier revision applied in its place.
	// +required
	Revision string `json:"revision"`
	// reason is why failedRevision failed: Degraded or HealthTimeout.
	// +required
	Reason string `json:"reason"`
	// at is when the rollback was decided.
	// +required
	At metav1.Time `json:"at"`
}

// GivenUpField is one field of one managed object that Tether left to another
// field manager after a fight.
type GivenUpField struct {
	ObjectRef `json:",inline"`
	// jsonPointer (RFC 6901) of the field, e.g. /spec/replicas.
	// +required
	JSONPointer string `json:"jsonPointer"`
	// manager is the field manager that kept changing it.
	// +optional
	Manager string `json:"manager,omitempty"`
}

// InventoryGroup is the objects of one kind in one namespace that a Sync manages:
// status.objects holds one per kind and namespace, so that each object costs its
// name alone (about 10,000 objects of ordinary names take 130 KiB).
type InventoryGroup struct {
	// group of the kind, empty for the core group.
	// +optional
	Group string `json:"group,omitempty"`
	// version the objects were last applied as.
	// +required
	Version string `json:"version"`
	// kind of the objects.
	// +required
	Kind string `json:"kind"`
	// namespace of the objects, empty for cluster-scoped kinds.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// names of the objects, sorted.
	// +required
	// +listType=atomic
	Names []string `json:"names"`
}

// ResourceSummary counts managed objects by state; objects not counted in any
// other field are Synced and Healthy.
type ResourceSummary struct {
	// total is the size of the inventory.
	Total int32 `json:"total"`
	// +optional
	OutOfSync int32 `json:"outOfSync,omitempty"`
	// +optional
	Progressing int32 `json:"progressing,omitempty"`
	// +optional
	Degraded int32 `json:"degraded,omitempty"`
	// +optional
	Suspended int32 `json:"suspended,omitempty"`
	// +optional
	Missing int32 `json:"missing,omitempty"`
	// +optional
	Unknown int32 `json:"unknown,omitempty"`
}

// ResourceStatus is one managed object and what Tether last saw of it.
type ResourceStatus struct {
	ObjectRef `json:",inline"`
	// sync of this object.
	// +optional
	Sync SyncStatusCode `json:"sync,omitempty"`
	// health of this object.
	// +optional
	Health HealthStatusCode `json:"health,omitempty"`
	// message explains sync or health when there is something to say.
	// +optional
	Message string `json:"message,omitempty"`
}

// SyncList is a list of Syncs.
//
// +kubebuilder:object:root=true
type SyncList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Sync `json:"items"`
}

// PruneEnabled reports spec.prune with its default (true) applied.
func (s *SyncSpec) PruneEnabled() bool { return s.Prune == nil || *s.Prune }

// SelfHealEnabled reports spec.selfHeal with its default (true) applied.
func (s *SyncSpec) SelfHealEnabled() bool { return s.SelfHeal == nil || *s.SelfHeal }

// IgnoreAutoscaledReplicasEnabled reports spec.ignoreAutoscaledReplicas with its
// default (true) applied.
func (s *SyncSpec) IgnoreAutoscaledReplicasEnabled() bool {
	return s.IgnoreAutoscaledReplicas == nil || *s.IgnoreAutoscaledReplicas
}

// IntervalOrDefault reports spec.source.interval with its default (1m) applied.
func (s *SourceSpec) IntervalOrDefault() time.Duration {
	if s.Interval == nil || s.Interval.Duration <= 0 {
		return DefaultInterval
	}
	return s.Interval.Duration
}

// PathOrDefault reports spec.source.path with its default (".") applied.
func (s *SourceSpec) PathOrDefault() string {
	if s.Path == "" {
		return DefaultPath
	}
	return s.Path
}

// EffectiveDeletionPolicy resolves an empty deletionPolicy from prune.
func (s *SyncSpec) EffectiveDeletionPolicy() DeletionPolicy {
	if s.DeletionPolicy != "" {
		return s.DeletionPolicy
	}
	if s.PruneEnabled() {
		return DeletionPolicyDelete
	}
	return DeletionPolicyOrphan
}
