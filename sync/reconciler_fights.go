package sync

import (
	"fmt"
	"sort"
	gosync "sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
)

// FightOptions bound how long Tether keeps correcting a field that another field
// manager keeps changing back: two controllers owning one field churn for ever
// (pods, rollouts), so Tether gives the field up, says so, and suggests the rule.
type FightOptions struct {
	// Threshold is how many times within Window Tether corrects one field of one
	// object that the same other manager changed; after the last of them it stops
	// correcting the field.
	Threshold int
	// Window is how far back corrections count.
	Window time.Duration
}

// DefaultFightOptions returns the fight bounds Tether runs with.
func DefaultFightOptions() FightOptions {
	return FightOptions{Threshold: 3, Window: 10 * time.Minute}
}

type fightKey struct {
	object           v1alpha1.ObjectRef
	pointer, manager string
}

// fightTracker remembers, per Sync, the corrections of fields other managers
// changed, and the fields given up. It lives in memory: a restart, or any change to
// the Sync's spec (adding the suggested rule, say), starts it afresh.
type fightTracker struct {
	mu     gosync.Mutex
	bySync map[types.NamespacedName]*syncFights
}

type syncFights struct {
	generation int64
	rounds     map[fightKey][]time.Time
	given      map[fightKey]string // the message that says so
}

// of returns the fights of obj, reset when its spec changed.
func (t *fightTracker) of(obj *v1alpha1.Sync) *syncFights {
	key := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	if t.bySync == nil {
		t.bySync = map[types.NamespacedName]*syncFights{}
	}
	f, ok := t.bySync[key]
	if !ok || f.generation != obj.Generation {
		f = &syncFights{generation: obj.Generation, rounds: map[fightKey][]time.Time{}, given: map[fightKey]string{}}
		t.bySync[key] = f
	}
	return f
}

// givenUp returns the fields given up, sorted, for status.fieldsGivenUp and
// plan.ForApply.
func (t *fightTracker) givenUp(obj *v1alpha1.Sync) []v1alpha1.GivenUpField {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []v1alpha1.GivenUpField
	for k := range t.of(obj).given {
		out = append(out, plan.GivenUpField(k.object, k.pointer, k.manager))
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Kind+"/"+a.Namespace+"/"+a.Name+a.JSONPointer+a.Manager < b.Kind+"/"+b.Namespace+"/"+b.Name+b.JSONPointer+b.Manager
	})
	return out
}

// observe counts the corrections of a drift-correcting apply and returns the
// fights that this one ended, as (manager, message) pairs.
func (t *fightTracker) observe(obj *v1alpha1.Sync, cs *apply.ChangeSet, now time.Time, opts FightOptions) []fightKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.of(obj)
	var ended []fightKey
	for _, c := range cs.Changes {
		if c.Action != apply.ActionConfigured {
			continue
		}
		for _, rf := range c.Reverted {
			k := fightKey{object: c.Object, pointer: rf.Pointer, manager: rf.Manager}
			if _, done := f.given[k]; done {
				continue
			}
			rounds := append(recent(f.rounds[k], now.Add(-opts.Window)), now)
			f.rounds[k] = rounds
			if len(rounds) < opts.Threshold {
				continue
			}
			delete(f.rounds, k)
			f.given[k] = fightMessage(k, rf.Path, len(rounds), opts.Window)
			ended = append(ended, k)
		}
	}
	return ended
}

// conflicts returns the messages of every field given up, sorted.
func (t *fightTracker) conflicts(obj *v1alpha1.Sync) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, msg := range t.of(obj).given {
		out = append(out, msg)
	}
	sort.Strings(out)
	return out
}

func (t *fightTracker) message(obj *v1alpha1.Sync, k fightKey) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.of(obj).given[k]
}

func (t *fightTracker) forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.bySync, key)
}

func recent(times []time.Time, since time.Time) []time.Time {
	var out []time.Time
	for _, at := range times {
		if at.After(since) {
			out = append(out, at)
		}
	}
	return out
}

// fightMessage names object, field and manager, and the ignore rule that settles it.
func fightMessage(k fightKey, path string, n int, window time.Duration) string {
	rule := fmt.Sprintf("{group: %q, kind: %s, name: %s", k.object.Group, k.object.Kind, k.object.Name)
	if k.object.Namespace != "" {
		rule += ", namespace: " + k.object.Namespace
	}
	rule += ", jsonPointers: [" + k.pointer + "]}"
	return fmt.Sprintf("%s %s: %s changed it back after each of %d corrections within %s; Tether stopped correcting it "+
		"until the Sync changes or Tether restarts. To leave it to %s, add to spec.ignoreDifferences: %s",
		k.object, path, k.manager, n, window, k.manager, rule)
}
