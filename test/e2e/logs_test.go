package e2e

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// TestABrokenSyncIsLoggedOnceWithoutAStackTrace: a Sync that fails the same way at
// every interval says so once at error level, when the failure starts, and again
// only when it changes; the repeats are debug lines, and no line carries a stack
// trace (they are for bugs, not for bad input in git).
func TestABrokenSyncIsLoggedOnceWithoutAStackTrace(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "broken")
	repo.Commit(t, map[string]string{"app/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n"}, "broken YAML")
	a := startAgent(t)
	s := gitSync(ns, "broken", repo.URL(), "app", time.Second)
	createSync(t, c, s)

	harness.Eventually(t, waitTimeout, "the Sync is Stalled", func(ctx context.Context) (bool, error) {
		got := &v1alpha1.Sync{}
		err := c.Get(ctx, client.ObjectKeyFromObject(s), got)
		return err == nil && apimeta.IsStatusConditionTrue(got.Status.Conditions, v1alpha1.StalledCondition), err
	})
	// Three more reconciles of the same failure, at the interval.
	stalledAt := reconcilesOf(t, a, ns, "broken")
	harness.Eventually(t, waitTimeout, "three more reconciles", func(context.Context) (bool, error) {
		return reconcilesOf(t, a, ns, "broken") >= stalledAt+3, nil
	})

	failed, again, traces := 0, 0, 0
	for line := range strings.SplitSeq(a.log.String(), "\n") {
		if !strings.Contains(line, ns) {
			continue
		}
		switch {
		case strings.Contains(line, `"msg":"reconcile failed"`):
			failed++
		case strings.Contains(line, `"msg":"reconcile failed again"`):
			again++
		}
		if strings.Contains(line, `"stacktrace"`) {
			traces++
		}
	}
	if failed != 1 || again < 3 || traces != 0 {
		t.Errorf("the agent logged the failure %d times at error level, %d times at debug level, with %d stack traces; want 1, at least 3 and none\n%s",
			failed, again, traces, a.log.String())
	}
}

// reconcilesOf reads how many reconciles of Sync ns/name the agent has finished.
func reconcilesOf(t testing.TB, a *agent, ns, name string) int {
	t.Helper()
	series := regexp.MustCompile(fmt.Sprintf(`(?m)^tether_reconcile_duration_seconds_count\{name="%s",namespace="%s"\} (\d+)$`, name, ns))
	m := series.FindStringSubmatch(a.metrics(t))
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(m[1])
	harness.Must(t, err)
	return n
}
