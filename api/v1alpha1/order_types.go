package v1alpha1

// The annotations that order a revision's objects (docs/ordering.md): Tether's,
// and Argo CD's and Helm's, understood as the same thing (plan.OrderingOf reads
// them; Tether's win over Argo CD's, which win over Helm's).
const (
	// WaveAnnotation: the object's wave ("-1"; default 0). Waves are applied in
	// ascending order, each Healthy before the next.
	WaveAnnotation = "tether.dev/wave"
	// HookAnnotation: the phases the object is a hook of (PreSync, Sync,
	// PostSync, SyncFail; Skip leaves it out). A hook runs once per revision
	// applied, is not in the inventory, and may have only metadata.generateName.
	HookAnnotation = "tether.dev/hook"
	// HookDeletePolicyAnnotation: when a hook's object is deleted
	// (BeforeHookCreation, the default; HookSucceeded; HookFailed).
	HookDeletePolicyAnnotation = "tether.dev/hook-delete-policy"

	ArgoWaveAnnotation             = "argocd.argoproj.io/sync-wave"
	ArgoHookAnnotation             = "argocd.argoproj.io/hook"
	ArgoHookDeletePolicyAnnotation = "argocd.argoproj.io/hook-delete-policy"

	HelmHookAnnotation             = "helm.sh/hook"
	HelmHookWeightAnnotation       = "helm.sh/hook-weight"
	HelmHookDeletePolicyAnnotation = "helm.sh/hook-delete-policy"
)

// IsHookAnnotated reports whether annotations make an object a hook candidate
// (any hook annotation set), which may then have only metadata.generateName.
func IsHookAnnotated(annotations map[string]string) bool {
	return annotations[HookAnnotation] != "" || annotations[ArgoHookAnnotation] != "" || annotations[HelmHookAnnotation] != ""
}

// DependencyReference names a Sync that another waits for.
type DependencyReference struct {
	// name of the Sync.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// namespace of the Sync; default: the namespace of the Sync that depends on it.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// RunState is where the ordered apply of a revision stands.
// +kubebuilder:validation:Enum=Running;Failed;Succeeded
type RunState string

// Run states.
const (
	// RunRunning: a phase or wave is waiting for its objects to be Healthy (Jobs
	// Complete).
	RunRunning RunState = "Running"
	// RunFailed: a hook or an object of a wave failed; the revision stopped there
	// and its SyncFail hooks ran. The next commit or a requested reconcile tries
	// again.
	RunFailed RunState = "Failed"
	// RunSucceeded: every phase and wave completed.
	RunSucceeded RunState = "Succeeded"
)

// RunStatus is the ordered apply of one revision.
type RunStatus struct {
	// revision the run applies.
	// +required
	Revision string `json:"revision"`
	// phase in progress, or where the run failed: PreSync, Sync, PostSync or
	// SyncFail.
	// +optional
	Phase string `json:"phase,omitempty"`
	// wave in progress within the phase.
	// +optional
	Wave int32 `json:"wave"`
	// state of the run.
	// +optional
	State RunState `json:"state,omitempty"`
	// reason of the failure (HookFailed, WaveFailed), when the run failed.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message says what the run waits for, or which object failed and why.
	// +optional
	Message string `json:"message,omitempty"`
}

// HookStatus is one hook object Tether created for a Sync.
type HookStatus struct {
	ObjectRef `json:",inline"`
	// run that created it: "<revision>/<phase>".
	// +optional
	Run string `json:"run,omitempty"`
	// deletePolicies of the hook.
	// +optional
	// +listType=atomic
	DeletePolicies []string `json:"deletePolicies,omitempty"`
}
