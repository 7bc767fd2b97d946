package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// syncSetTree reads SyncSet name of the target's namespace and the Syncs its
// label names (tether.dev/syncset), and prints them.
func (p *treePrinter) syncSetTree(ctx context.Context, t *syncTarget) {
	ss := &v1alpha1.SyncSet{}
	err := t.c.Get(ctx, client.ObjectKey{Namespace: t.namespace, Name: t.name}, ss)
	switch {
	case apierrors.IsNotFound(err):
		p.err = fmt.Errorf("no SyncSet %s/%s", t.namespace, t.name)
		return
	case err != nil:
		p.err = fmt.Errorf("reading SyncSet %s/%s: %w", t.namespace, t.name, err)
		return
	}
	l := &v1alpha1.SyncList{}
	if err := t.c.List(ctx, l, client.InNamespace(t.namespace), client.MatchingLabels{v1alpha1.SyncSetLabel: t.name}); err != nil {
		p.err = fmt.Errorf("listing the Syncs of SyncSet %s/%s: %w", t.namespace, t.name, err)
		return
	}
	p.printSyncSet(ss, l.Items)
}

// printSyncSet writes a SyncSet and its Syncs, in name order: each with its
// revision, sync and health, and what holds it (a rolling sync's pin, a
// rollback, suspension); the head says how many are Ready and where a rolling
// sync stands.
func (p *treePrinter) printSyncSet(ss *v1alpha1.SyncSet, syncs []v1alpha1.Sync) {
	head := fmt.Sprintf("SyncSet/%s/%s  %d Syncs, %d Ready", ss.Namespace, ss.Name, ss.Status.Syncs, ss.Status.ReadySyncs)
	if c := apimeta.FindStatusCondition(ss.Status.Conditions, v1alpha1.ReadyCondition); c != nil && c.Status == "False" {
		head += "  " + p.status(string(v1alpha1.HealthDegraded)) + ": " + oneLine(c.Message)
	}
	p.line("", head)
	if r := ss.Status.Rollout; r != nil {
		text := fmt.Sprintf("rollout of %s: step %d of %d", orDash(shortRevision("sha1:"+r.Revision)), min(r.Step, r.Steps), r.Steps)
		if c := apimeta.FindStatusCondition(ss.Status.Conditions, v1alpha1.RolloutCondition); c != nil {
			text += "  " + c.Reason
		}
		p.line("", text)
	}
	sort.Slice(syncs, func(i, j int) bool { return syncs[i].Name < syncs[j].Name })
	if len(syncs) == 0 {
		p.line("", "└── (no Syncs)")
	}
	for i := range syncs {
		prefix, _ := branch("", i == len(syncs)-1)
		p.line(prefix, p.memberLine(&syncs[i]))
	}
}

// memberLine is one Sync of a SyncSet.
func (p *treePrinter) memberLine(s *v1alpha1.Sync) string {
	text := fmt.Sprintf("Sync/%s  %s  %s  %s", s.Name, orDash(shortRevision(s.Status.LastAppliedRevision)),
		p.status(string(s.Status.Sync)), p.status(string(s.Status.Health)))
	var holds []string
	if pin := s.Annotations[v1alpha1.PinRevisionAnnotation]; pin != "" {
		holds = append(holds, "pinned to "+shortRevision("sha1:"+pin))
	}
	if back := s.Annotations[v1alpha1.RolledBackAnnotation]; back != "" {
		holds = append(holds, "rolled back from "+shortRevision("sha1:"+back))
	}
	if s.Spec.Suspend {
		holds = append(holds, p.status(string(v1alpha1.HealthSuspended)))
	}
	if len(holds) > 0 {
		text += "  (" + strings.Join(holds, ", ") + ")"
	}
	return text
}
