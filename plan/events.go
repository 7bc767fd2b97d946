package plan

import (
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"tether.dev/tether/api/v1alpha1"
)

// EventScope says which Events concern a Sync: its own and those of the
// namespaced objects of its inventory. The caller lists the Events of each of
// Namespaces (with its own rights) and keeps those Has accepts.
type EventScope struct {
	involved   map[involvedObject]bool
	namespaces []string
}

type involvedObject struct{ kind, namespace, name string }

// EventsOf returns the scope of the Events of s.
func EventsOf(s *v1alpha1.Sync) EventScope {
	e := EventScope{involved: map[involvedObject]bool{{"Sync", s.Namespace, s.Name}: true}}
	namespaces := map[string]bool{s.Namespace: true}
	for _, r := range Inventory(s.Status) {
		if r.Namespace != "" {
			e.involved[involvedObject{r.Kind, r.Namespace, r.Name}] = true
			namespaces[r.Namespace] = true
		}
	}
	e.namespaces = slices.Sorted(maps.Keys(namespaces))
	return e
}

// Namespaces are the namespaces whose Events to list, in order.
func (e EventScope) Namespaces() []string { return e.namespaces }

// Has reports whether ev is about the Sync or one of its objects.
func (e EventScope) Has(ev *corev1.Event) bool {
	o := ev.InvolvedObject
	return e.involved[involvedObject{o.Kind, o.Namespace, o.Name}]
}

// EventTime is when an Event last happened, from whichever field its reporter set.
func EventTime(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
