package controlplane

import (
	"context"
	"fmt"
	gosync "sync"
	"testing"
)

// StartMany starts n control planes with opts, all at once, for a test that
// needs clusters besides the shared one (the remote clusters of a hub), and
// stops them when t ends. It fails t if any does not start within
// startTimeout. On two cores, four start in about twice the time of one.
func StartMany(t testing.TB, n int, opts Options) []*ControlPlane {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	started := make([]*ControlPlane, n)
	failed := make([]error, n)
	var wg gosync.WaitGroup
	for i := range started {
		wg.Go(func() { started[i], failed[i] = Start(ctx, opts) })
	}
	wg.Wait()
	for _, cp := range started {
		if cp != nil {
			t.Cleanup(func() {
				if err := cp.Stop(); err != nil {
					t.Errorf("control plane %s: %v", cp.Host(), err)
				}
			})
		}
	}
	for i, err := range failed {
		if err != nil {
			t.Fatal(fmt.Errorf("control plane %d of %d: %w", i+1, n, err))
		}
	}
	return started
}
