package plan

import (
	"fmt"
	"strconv"
	"strings"

	"tether.dev/tether/api/v1alpha1"
)

// The order of a revision: which objects are hooks, in which phase they run, in
// which wave each object goes, and when a hook's object is deleted. Read from an
// object's annotations alone (Tether's own, Argo CD's, and Helm's hooks mapped), so
// that the agent and a chart renderer reach the same answer through one function.

// Phase is when a hook runs in the apply of a revision.
type Phase string

// Phases, in the order they run. SyncFail runs only when another phase failed.
const (
	PhasePreSync  Phase = "PreSync"
	PhaseSync     Phase = "Sync"
	PhasePostSync Phase = "PostSync"
	PhaseSyncFail Phase = "SyncFail"
)

// Rank is the place of a phase in a revision's run.
func (p Phase) Rank() int {
	switch p {
	case PhasePreSync:
		return 0
	case PhaseSync:
		return 1
	case PhasePostSync:
		return 2
	}
	return 3
}

// DeletePolicy says when Tether deletes the object of a hook it ran.
type DeletePolicy string

// Delete policies, as Argo CD names them.
const (
	// BeforeHookCreation: the object of an earlier run is deleted before the hook
	// is created again (the default, as in Argo CD).
	BeforeHookCreation DeletePolicy = "BeforeHookCreation"
	// HookSucceeded: deleted once the revision's run succeeded.
	HookSucceeded DeletePolicy = "HookSucceeded"
	// HookFailed: deleted once the revision's run failed.
	HookFailed DeletePolicy = "HookFailed"
)

// Ordering is what an object's annotations say about its place in a revision.
type Ordering struct {
	// Wave orders the apply: ascending, each wave Healthy before the next; 0 when
	// unset.
	Wave int
	// Phases lists the phases the object is a hook of; empty for an ordinary
	// object, which is applied in the Sync phase and kept in the inventory.
	Phases []Phase
	// Policies lists the hook's delete policies (BeforeHookCreation when none is
	// set); empty for an ordinary object.
	Policies []DeletePolicy
	// Skip is true when the object is not applied at all: Argo CD's Skip hook, or
	// a Helm hook with no counterpart here (tests, rollback and delete hooks).
	Skip bool
}

// IsHook reports whether the object runs as a hook rather than being applied and
// kept in the inventory.
func (o Ordering) IsHook() bool { return len(o.Phases) > 0 }

// Has reports whether the hook has delete policy p.
func (o Ordering) Has(p DeletePolicy) bool {
	for _, q := range o.Policies {
		if q == p {
			return true
		}
	}
	return false
}

// The annotations OrderingOf reads: Tether's first, then Argo CD's, then Helm's
// (declared in api/v1alpha1, which source reads too).
const (
	WaveAnnotation             = v1alpha1.WaveAnnotation
	HookAnnotation             = v1alpha1.HookAnnotation
	HookDeletePolicyAnnotation = v1alpha1.HookDeletePolicyAnnotation

	ArgoWaveAnnotation             = v1alpha1.ArgoWaveAnnotation
	ArgoHookAnnotation             = v1alpha1.ArgoHookAnnotation
	ArgoHookDeletePolicyAnnotation = v1alpha1.ArgoHookDeletePolicyAnnotation

	HelmHookAnnotation             = v1alpha1.HelmHookAnnotation
	HelmHookWeightAnnotation       = v1alpha1.HelmHookWeightAnnotation
	HelmHookDeletePolicyAnnotation = v1alpha1.HelmHookDeletePolicyAnnotation
)

// maxWave bounds a wave's magnitude; a larger number is a typo, not an order.
const maxWave = 1 << 20

// AnnotationError is an ordering annotation whose value cannot be used.
type AnnotationError struct {
	Annotation, Value, Why string
}

func (e *AnnotationError) Error() string {
	return fmt.Sprintf("annotation %s: %q %s", e.Annotation, e.Value, e.Why)
}

// OrderingOf reads an object's place in a revision from its annotations. Tether's
// annotations win over Argo CD's, which win over Helm's: a chart rendered for Argo
// CD carries both, and Argo CD ignores Helm's then. An annotation that cannot be
// read is an *AnnotationError naming it.
func OrderingOf(annotations map[string]string) (Ordering, error) {
	if first(annotations, HookAnnotation, ArgoHookAnnotation) == "" && annotations[HelmHookAnnotation] != "" {
		return helmOrdering(annotations)
	}
	var o Ordering
	var err error
	// As Argo CD, Helm's weight is the wave of any object that names no wave of its
	// own, hook or not (a chart's Service with a weight goes in that wave).
	if key, v := firstSet(annotations, WaveAnnotation, ArgoWaveAnnotation, HelmHookWeightAnnotation); key != "" {
		if o.Wave, err = parseWave(key, v); err != nil {
			return Ordering{}, err
		}
	}
	key, v := firstSet(annotations, HookAnnotation, ArgoHookAnnotation)
	if key == "" {
		return o, nil
	}
	for _, p := range splitList(v) {
		switch Phase(p) {
		case PhasePreSync, PhaseSync, PhasePostSync, PhaseSyncFail:
			o.Phases = appendNew(o.Phases, Phase(p))
		case "Skip":
			o.Skip = true
		default:
			return Ordering{}, &AnnotationError{Annotation: key, Value: p, Why: "is not a hook phase (PreSync, Sync, PostSync, SyncFail, Skip)"}
		}
	}
	if o.Skip {
		return Ordering{Skip: true}, nil
	}
	if o.Policies, err = policiesOf(annotations, HookDeletePolicyAnnotation, ArgoHookDeletePolicyAnnotation); err != nil {
		return Ordering{}, err
	}
	return o, nil
}

// helmOrdering maps Helm's hook annotations the way Argo CD does: pre-install and
// pre-upgrade run PreSync, post-install and post-upgrade PostSync, the weight is
// the wave, and hooks with no counterpart (test, rollback, delete) are skipped.
// crd-install (Helm 2) is an ordinary object.
func helmOrdering(annotations map[string]string) (Ordering, error) {
	var o Ordering
	skipped := false
	for _, h := range splitList(annotations[HelmHookAnnotation]) {
		switch h {
		case "pre-install", "pre-upgrade":
			o.Phases = appendNew(o.Phases, PhasePreSync)
		case "post-install", "post-upgrade":
			o.Phases = appendNew(o.Phases, PhasePostSync)
		case "crd-install":
		default:
			skipped = true
		}
	}
	if !o.IsHook() && skipped {
		return Ordering{Skip: true}, nil
	}
	var err error
	if v, ok := annotations[HelmHookWeightAnnotation]; ok {
		if o.Wave, err = parseWave(HelmHookWeightAnnotation, v); err != nil {
			return Ordering{}, err
		}
	}
	if !o.IsHook() {
		return o, nil
	}
	if o.Policies, err = policiesOf(annotations, HelmHookDeletePolicyAnnotation); err != nil {
		return Ordering{}, err
	}
	return o, nil
}

// policiesOf reads the first of keys that is set as a list of delete policies, in
// Argo CD's or Helm's spelling; BeforeHookCreation when none is set.
func policiesOf(annotations map[string]string, keys ...string) ([]DeletePolicy, error) {
	key, v := firstSet(annotations, keys...)
	var out []DeletePolicy
	for _, p := range splitList(v) {
		switch p {
		case string(BeforeHookCreation), "before-hook-creation":
			out = appendNew(out, BeforeHookCreation)
		case string(HookSucceeded), "hook-succeeded":
			out = appendNew(out, HookSucceeded)
		case string(HookFailed), "hook-failed":
			out = appendNew(out, HookFailed)
		default:
			return nil, &AnnotationError{Annotation: key, Value: p, Why: "is not a delete policy (BeforeHookCreation, HookSucceeded, HookFailed)"}
		}
	}
	if len(out) == 0 {
		out = []DeletePolicy{BeforeHookCreation}
	}
	return out, nil
}

func parseWave(key, v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, &AnnotationError{Annotation: key, Value: v, Why: "is not an integer"}
	}
	if n > maxWave || n < -maxWave {
		return 0, &AnnotationError{Annotation: key, Value: v, Why: fmt.Sprintf("is out of range (±%d)", maxWave)}
	}
	return n, nil
}

// first returns the value of the first of keys that is set and not empty.
func first(annotations map[string]string, keys ...string) string {
	_, v := firstSet(annotations, keys...)
	return v
}

func firstSet(annotations map[string]string, keys ...string) (key, value string) {
	for _, k := range keys {
		if v := strings.TrimSpace(annotations[k]); v != "" {
			return k, v
		}
	}
	return "", ""
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func appendNew[T comparable](list []T, v T) []T {
	for _, w := range list {
		if w == v {
			return list
		}
	}
	return append(list, v)
}

// orderingError names the object whose annotations could not be read.
func orderingError(ref v1alpha1.ObjectRef, err error) error {
	return &HeldError{Reason: v1alpha1.ReasonInvalidOrdering, Msg: fmt.Sprintf("%s: %v", ref, err)}
}
