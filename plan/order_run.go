package plan

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
)

// HookRunAnnotation on a hook's object says which run created it:
// "<revision>/<phase>". A hook object of the current run is waited on; one of an
// earlier run is deleted before the hook is created again.
const HookRunAnnotation = "tether.dev/hook-run"

// HookLabel on a hook's object names the Sync that ran it, as the tether.dev/sync
// label names the Sync of a managed object. Hooks carry this label instead, so
// that a rebuilt inventory never takes a hook for a managed object.
const HookLabel = "tether.dev/hook-of"

// Run is the order in which a revision is applied: the objects kept in the
// inventory, the hooks, and the steps (phase and wave) they run in.
type Run struct {
	// Revision is the revision the run applies.
	Revision string
	// Resources are the revision's ordinary objects: applied, kept in the
	// inventory, drift-corrected and pruned.
	Resources []*unstructured.Unstructured
	// Hooks are the hook objects of every phase, named for this run (see
	// HookName), SyncFail's included: the dry-run gate validates them all.
	Hooks []*unstructured.Unstructured
	// Steps are the phases PreSync, Sync and PostSync, wave by wave, in the order
	// they run.
	Steps []Step
	// SyncFail is what runs when a step fails.
	SyncFail []Step
	// Skipped are the objects not applied at all (Skip hooks, Helm's test hooks).
	Skipped []v1alpha1.ObjectRef
}

// Step is one phase and wave of a run: its ordinary objects (Sync phase only) and
// its hooks, each sorted by kind and name.
type Step struct {
	Phase     Phase
	Wave      int
	Resources []*unstructured.Unstructured
	Hooks     []Hook
}

// Hook is one hook of a step.
type Hook struct {
	Object   *unstructured.Unstructured
	Policies []DeletePolicy
}

// Ref is the hook object's identity, as named for its run.
func (h Hook) Ref() v1alpha1.ObjectRef { return contract.RefOf(h.Object) }

// Has reports whether the hook has delete policy p.
func (h Hook) Has(p DeletePolicy) bool { return slices.Contains(h.Policies, p) }

// Ordered reports whether the run needs more than one apply: it has hooks, or
// objects outside wave 0. A run that is not ordered is applied as one set.
func (r *Run) Ordered() bool {
	return len(r.Hooks) > 0 || len(r.Steps) > 1
}

// Order reads the order of a revision's objects from their annotations: which are
// hooks (copied and named for this run, HookName), which are skipped, and the
// steps in the order Argo CD documents: phase, then wave, then kind, then name.
// An object whose annotations cannot be read is a *HeldError naming it.
func Order(objs []*unstructured.Unstructured, revision string) (*Run, error) {
	run := &Run{Revision: revision}
	steps := map[stepKey]*Step{}
	for _, o := range objs {
		ord, err := OrderingOf(o.GetAnnotations())
		if err != nil {
			return nil, orderingError(contract.RefOf(o), err)
		}
		switch {
		case ord.Skip:
			run.Skipped = append(run.Skipped, contract.RefOf(o))
		case !ord.IsHook():
			run.Resources = append(run.Resources, o)
			stepOf(steps, PhaseSync, ord.Wave).Resources = append(stepOf(steps, PhaseSync, ord.Wave).Resources, o)
		default:
			for _, p := range ord.Phases {
				h := Hook{Object: namedHook(o, revision, p), Policies: ord.Policies}
				run.Hooks = append(run.Hooks, h.Object)
				s := stepOf(steps, p, ord.Wave)
				s.Hooks = append(s.Hooks, h)
			}
		}
	}
	for _, s := range steps {
		slices.SortStableFunc(s.Resources, byKindAndName)
		slices.SortStableFunc(s.Hooks, func(a, b Hook) int { return byKindAndName(a.Object, b.Object) })
		if s.Phase == PhaseSyncFail {
			run.SyncFail = append(run.SyncFail, *s)
		} else {
			run.Steps = append(run.Steps, *s)
		}
	}
	slices.SortFunc(run.Steps, byPhaseAndWave)
	slices.SortFunc(run.SyncFail, byPhaseAndWave)
	return run, nil
}

// ManagedObjects returns the objects of a revision that a Sync keeps applied (its
// inventory): hooks and skipped objects left out. `tether diff` compares these with
// the cluster, as the agent corrects drift of these alone.
func ManagedObjects(objs []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	run, err := Order(objs, "")
	if err != nil {
		return nil, err
	}
	return run.Resources, nil
}

type stepKey struct {
	phase Phase
	wave  int
}

func stepOf(steps map[stepKey]*Step, p Phase, wave int) *Step {
	k := stepKey{p, wave}
	if steps[k] == nil {
		steps[k] = &Step{Phase: p, Wave: wave}
	}
	return steps[k]
}

func byPhaseAndWave(a, b Step) int {
	return cmp.Or(cmp.Compare(a.Phase.Rank(), b.Phase.Rank()), cmp.Compare(a.Wave, b.Wave))
}

func byKindAndName(a, b *unstructured.Unstructured) int {
	return cmp.Or(cmp.Compare(KindRank(a.GetKind()), KindRank(b.GetKind())), cmp.Compare(a.GetKind(), b.GetKind()),
		cmp.Compare(a.GetNamespace(), b.GetNamespace()), cmp.Compare(a.GetName(), b.GetName()))
}

// kindOrder is the order in which kinds of one wave are applied, the one Helm
// installs in and Argo CD sorts by: what others refer to before what refers to it.
var kindOrder = []string{
	"Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy", "PodDisruptionBudget",
	"ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass", "PersistentVolume",
	"PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList",
	"ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
	"Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

// KindRank is kind's place in kindOrder; kinds not listed (custom resources) come
// after every listed one.
func KindRank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	return len(kindOrder)
}

// hookSuffixLen is the length of the suffix HookName gives a generateName, as
// long as the API server's own.
const hookSuffixLen = 5

// maxGenerateName is how much of a generateName the API server keeps before its
// suffix; a longer one is cut there, as the API server cuts it.
const maxGenerateName = 58

// HookName is the name of a hook's object in the run of revision at phase: its
// own name, or, for an object that has only metadata.generateName, that prefix
// with a suffix derived from the revision and the phase. The name is the same at
// every reconcile of the run, so that a hook runs once per revision however often
// the Sync is reconciled (or the agent restarted), and server-side apply can
// create and dry-run it.
func HookName(obj *unstructured.Unstructured, revision string, phase Phase) string {
	if obj.GetName() != "" {
		return obj.GetName()
	}
	prefix := obj.GetGenerateName()
	if len(prefix) > maxGenerateName {
		prefix = prefix[:maxGenerateName]
	}
	sum := sha256.Sum256([]byte(revision + "/" + string(phase)))
	return prefix + hex.EncodeToString(sum[:])[:hookSuffixLen]
}

// HookRun is the value of HookRunAnnotation for a run of revision at phase.
func HookRun(revision string, phase Phase) string { return revision + "/" + string(phase) }

// namedHook is a copy of a hook's object named for its run, carrying the run.
func namedHook(o *unstructured.Unstructured, revision string, p Phase) *unstructured.Unstructured {
	h := o.DeepCopy()
	h.SetName(HookName(o, revision, p))
	h.SetGenerateName("")
	annotations := h.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HookRunAnnotation] = HookRun(revision, p)
	h.SetAnnotations(annotations)
	return h
}

// MarkHooks gives the hooks of a run the marks of the Sync that runs them: the
// tether.dev/owned-by annotation (claims are checked as for any object) and
// HookLabel, not the tether.dev/sync label (a hook is not in the inventory).
func MarkHooks(hooks []*unstructured.Unstructured, s *v1alpha1.Sync) {
	m := marksOf(s)
	for _, o := range hooks {
		m.mark(o, HookLabel, v1alpha1.SyncLabel)
	}
}
