package plan

import (
	"fmt"
	"slices"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
)

// WaitingError is a step that cannot be taken yet and will be once something else
// happens (a dependency becomes Ready, a wave turns Healthy): not a failure, and
// not retried with backoff. Reason is the reason of the Ready condition meanwhile.
type WaitingError struct {
	Reason string
	Msg    string
}

func (e *WaitingError) Error() string { return e.Msg }

// DependenciesOf returns the Syncs s names in spec.dependsOn, in the namespace of s
// where one names none.
func DependenciesOf(s *v1alpha1.Sync) []types.NamespacedName {
	out := make([]types.NamespacedName, 0, len(s.Spec.DependsOn))
	for _, d := range s.Spec.DependsOn {
		ns := d.Namespace
		if ns == "" {
			ns = s.Namespace
		}
		out = append(out, types.NamespacedName{Namespace: ns, Name: d.Name})
	}
	return out
}

// DependsOn reports whether s names dep in spec.dependsOn.
func DependsOn(s *v1alpha1.Sync, dep types.NamespacedName) bool {
	return slices.Contains(DependenciesOf(s), dep)
}

// DependencyReady reports whether dep is Ready at its current revision: its Ready
// condition True for its current generation, and the revision it fetched last is
// the one it applied. When it is not, why says what it waits for.
func DependencyReady(dep *v1alpha1.Sync) (ok bool, why string) {
	ready := apimeta.FindStatusCondition(dep.Status.Conditions, v1alpha1.ReadyCondition)
	switch {
	case ready == nil || ready.Status != "True":
		return false, "not Ready"
	case ready.ObservedGeneration != dep.Generation || dep.Status.ObservedGeneration != dep.Generation:
		return false, "not Ready at its current generation"
	case dep.Status.SourceRevision != "" && dep.Status.SourceRevision != dep.Status.LastAppliedRevision:
		return false, fmt.Sprintf("applying %s", dep.Status.SourceRevision)
	}
	return true, ""
}

// CheckDependencies tells whether s may proceed, from the Syncs lookup finds (by
// namespace and name; false when there is none): a cycle through s is a
// *HeldError (DependencyCycle) naming it, a dependency that is missing or not
// Ready a *WaitingError (DependencyNotReady) naming each.
func CheckDependencies(s *v1alpha1.Sync, lookup func(types.NamespacedName) (*v1alpha1.Sync, bool)) error {
	deps := DependenciesOf(s)
	if len(deps) == 0 {
		return nil
	}
	self := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	if cycle := findCycle(self, func(n types.NamespacedName) []types.NamespacedName {
		if n == self {
			return deps
		}
		if o, ok := lookup(n); ok {
			return DependenciesOf(o)
		}
		return nil
	}); cycle != nil {
		return &HeldError{Reason: v1alpha1.ReasonDependencyCycle, Msg: "spec.dependsOn makes a cycle: " + joinNames(cycle) +
			"; nothing is applied until a Sync of the cycle changes"}
	}
	var waits []string
	for _, d := range deps {
		dep, ok := lookup(d)
		if !ok {
			waits = append(waits, fmt.Sprintf("Sync %s does not exist", d))
			continue
		}
		if ready, why := DependencyReady(dep); !ready {
			waits = append(waits, fmt.Sprintf("Sync %s is %s", d, why))
		}
	}
	if len(waits) > 0 {
		return &WaitingError{Reason: v1alpha1.ReasonDependencyNotReady, Msg: "waiting for dependencies: " + strings.Join(waits, "; ")}
	}
	return nil
}

// findCycle returns the path from start back to start, if the graph deps describes
// has one through start; nil otherwise. A cycle that does not pass through start
// is its members' to report, not start's: start then waits on it as not Ready.
func findCycle(start types.NamespacedName, deps func(types.NamespacedName) []types.NamespacedName) []types.NamespacedName {
	visited := map[types.NamespacedName]bool{}
	var path []types.NamespacedName
	var walk func(n types.NamespacedName) bool
	walk = func(n types.NamespacedName) bool {
		path = append(path, n)
		for _, d := range deps(n) {
			if d == start {
				path = append(path, d)
				return true
			}
			if !visited[d] {
				visited[d] = true
				if walk(d) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		return false
	}
	if walk(start) {
		return path
	}
	return nil
}

func joinNames(names []types.NamespacedName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = n.String()
	}
	return strings.Join(s, " → ")
}
