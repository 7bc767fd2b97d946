package v1alpha1

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
