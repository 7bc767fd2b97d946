package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// WaitForSync reads the Sync s through c every Poll until cond holds of it, and
// returns the Sync that satisfied it; past timeout it fails tb naming what it
// waited for and the last status it read (Describe). Every rig that waits on a
// Sync, in process or over an agent's binary, waits with it.
func WaitForSync(tb testing.TB, c client.Reader, s *v1alpha1.Sync, timeout time.Duration, what string, cond func(*v1alpha1.Sync) bool) *v1alpha1.Sync {
	tb.Helper()
	got := &v1alpha1.Sync{}
	Eventually(tb, timeout, what, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		if !cond(got) {
			return false, fmt.Errorf("status: %s", Describe(got))
		}
		return true, nil
	})
	return got
}

// Describe is a Sync's status in one line, for a failure's message: its
// revision, sync and health, each condition, and each object with something
// to say.
func Describe(s *v1alpha1.Sync) string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision %q sync %s health %s", s.Status.LastAppliedRevision, s.Status.Sync, s.Status.Health)
	for _, c := range s.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s: %.300s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, r := range s.Status.Resources {
		fmt.Fprintf(&b, "; %s/%s %s %s: %.200s", r.Kind, r.Name, r.Sync, r.Health, r.Message)
	}
	return b.String()
}
