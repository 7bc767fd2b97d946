package main

import (
	"context"
	"errors"
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
// w as it happens. An error reading the Sync exits 2.
func watchSync(ctx context.Context, t *syncTarget, timeout time.Duration, w io.Writer, judge func(*v1alpha1.Sync) judgement) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(watchPeriod)
	defer tick.Stop()
	last := ""
	for {
		s, err := t.get(ctx)
		if err != nil && ctx.Err() == nil {
			return &exitError{code: exitBroken, err: err}
		}
		if err == nil {
			j := judge(s)
			if j.say != last && j.verdict == pending {
				fmt.Fprintf(w, "◎ %s\n", j.say)
				last = j.say
			}
			switch j.verdict {
			case succeeded:
				fmt.Fprintf(w, "✔ %s\n", j.say)
				return nil
			case failed:
				return &exitError{code: exitFailed, err: fmt.Errorf("%s: %s", t, j.say)}
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &exitError{code: exitTimedOut, err: fmt.Errorf("%s: timed out after %s; last: %s", t, timeout, last)}
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stalledOrReady judges a Sync whose status is of its current spec by its
// conditions alone: Stalled fails, Ready succeeds, anything else is pending with
// the Ready condition's message.
func stalledOrReady(s *v1alpha1.Sync) judgement {
	switch {
	case isTrue(s, v1alpha1.StalledCondition):
		c := condition(s, v1alpha1.StalledCondition)
		return judgement{failed, "Stalled (" + c.Reason + "): " + c.Message}
	case isTrue(s, v1alpha1.ReadyCondition):
		return judgement{succeeded, readyMessage(s)}
	}
	if c := condition(s, v1alpha1.ReadyCondition); c != nil && c.ObservedGeneration == s.Generation {
		return judgement{pending, "not ready (" + c.Reason + "): " + c.Message}
	}
	return judgement{pending, "waiting for the agent to report on generation " + fmt.Sprint(s.Generation)}
}
