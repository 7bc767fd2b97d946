package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"tether.dev/tether/api/v1alpha1"
)

// verdict is what a command that waits on a Sync makes of its current state.
type verdict int

const (
	pending verdict = iota
	succeeded
	failed
)

// judgement is a verdict with what it rests on, one line for people to read.
type judgement struct {
	verdict verdict
	say     string
}

// watchPeriod is how often a waiting command reads the Sync: one small GET,
// cheap enough for the API server and quick enough for a pipeline.
const watchPeriod = 500 * time.Millisecond

// watchSync reads the Sync until judge succeeds (nil), fails (exit 1, with what
// judge says) or timeout passes (exit 3). Each new step judge says is printed to
// w as it happens. An error reading the Sync exits 2. The timeout bounds the
// waiting, not a read in flight (--request-timeout does that).
func watchSync(ctx context.Context, t *syncTarget, timeout time.Duration, w io.Writer, judge func(*v1alpha1.Sync) judgement) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		s, err := t.get(ctx)
		if err != nil {
			return &exitError{code: exitBroken, err: err}
		}
		j := judge(s)
		switch j.verdict {
		case succeeded:
			fmt.Fprintf(w, "✔ %s\n", j.say)
			return nil
		case failed:
			return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", t, j.say)}
		}
		if j.say != last {
			fmt.Fprintf(w, "◎ %s\n", j.say)
			last = j.say
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &exitError{code: exitTimedOut, err: fmt.Errorf("%s: timed out after %s; last: %s", t, timeout, last)}
		}
		pause := time.NewTimer(min(watchPeriod, left))
		select {
		case <-ctx.Done():
			pause.Stop()
			return ctx.Err()
		case <-pause.C:
		}
	}
}

// stalledOrReady judges a Sync whose status is of its current spec by its
// conditions alone: Stalled fails, Ready succeeds, anything else is pending with
// the Ready condition's message.
// awaitingHealth reports whether s applied its revision and only waits for its
// objects' health (spec.wait holds Ready back until then): applied, as far as
// stalledOrReady's callers are concerned; health is judged apart.
func awaitingHealth(s *v1alpha1.Sync) bool {
	c := condition(s, v1alpha1.ReadyCondition)
	if !s.Spec.Wait || c == nil || c.ObservedGeneration != s.Generation {
		return false
	}
	switch c.Reason {
	case v1alpha1.ReasonProgressing, v1alpha1.ReasonDegraded, v1alpha1.ReasonMissing:
		return true
	}
	return false
}

func stalledOrReady(s *v1alpha1.Sync) judgement {
	switch {
	case isTrue(s, v1alpha1.StalledCondition):
		c := condition(s, v1alpha1.StalledCondition)
		return judgement{failed, "Stalled (" + c.Reason + "): " + c.Message}
	case isTrue(s, v1alpha1.ReadyCondition), awaitingHealth(s):
		return judgement{succeeded, readyMessage(s)}
	}
	if c := condition(s, v1alpha1.ReadyCondition); c != nil && c.ObservedGeneration == s.Generation {
		return judgement{pending, "not ready (" + c.Reason + "): " + c.Message}
	}
	return judgement{pending, "waiting for the agent to report on generation " + fmt.Sprint(s.Generation)}
}
