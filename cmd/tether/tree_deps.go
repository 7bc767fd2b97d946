package main

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// syncLookup reads a Sync by namespace and name; nil and no error when there is none.
type syncLookup func(types.NamespacedName) (*v1alpha1.Sync, error)

// printDeps writes the Syncs s depends on (spec.dependsOn), and theirs, as a tree,
// each with whether it is Ready at its current revision as the agent judges it
// (plan.DependencyReady), so that a Sync waiting with DependencyNotReady shows what
// it waits for. A Sync that does not exist, and a Sync met again on its own path
// (a cycle), end their branch.
func (p *treePrinter) printDeps(s *v1alpha1.Sync, lookup syncLookup) {
	self := types.NamespacedName{Namespace: s.Namespace, Name: s.Name}
	p.line("", p.depLine(self, s))
	p.depChildren(s, "", map[types.NamespacedName]bool{self: true}, lookup)
}

func (p *treePrinter) depChildren(s *v1alpha1.Sync, indent string, path map[types.NamespacedName]bool, lookup syncLookup) {
	deps := plan.DependenciesOf(s)
	if len(deps) == 0 && indent == "" {
		p.line("", "└── (no dependencies)")
	}
	for i, d := range deps {
		prefix, childIndent := branch(indent, i == len(deps)-1)
		if path[d] {
			p.line(prefix, fmt.Sprintf("Sync/%s  (cycle: spec.dependsOn leads back here)", d))
			continue
		}
		dep, err := lookup(d)
		if err != nil {
			p.err = err
			return
		}
		if dep == nil {
			p.line(prefix, fmt.Sprintf("Sync/%s  (does not exist)", d))
			continue
		}
		p.line(prefix, p.depLine(d, dep))
		path[d] = true
		p.depChildren(dep, childIndent, path, lookup)
		delete(path, d)
	}
}

// depLine is one Sync of the graph: its name, revision, and whether it is Ready
// as its dependents read it (and if not, why).
func (p *treePrinter) depLine(n types.NamespacedName, s *v1alpha1.Sync) string {
	state, colour := "Ready", green
	if ready, why := plan.DependencyReady(s); !ready {
		state, colour = "NotReady ("+why+")", yellow
	}
	if p.color {
		state = colour + state + reset
	}
	return fmt.Sprintf("Sync/%s  %s  %s", n, orDash(shortRevision(s.Status.LastAppliedRevision)), state)
}
