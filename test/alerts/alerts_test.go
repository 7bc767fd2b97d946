package alerts

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/promserver"
)

const (
	// rulesPath is the shipped rule file, the one source of the alerts.
	rulesPath = "../../deploy/monitoring/rules/tether.rules.yaml"
	// alertFor replaces every rule's `for` (5 to 15 minutes as shipped) in the test
	// overlay, so that alerts fire in seconds: three of promserver's one-second
	// evaluations, so that each alert is pending for some evaluations before it
	// fires, as it is in production. Nothing in the test depends on it being longer:
	// the checks that nothing fires count a pending alert as a failure.
	alertFor = 3 * time.Second
	// noLeaderFor replaces TetherNoLeader's 5m. A replica killed by SIGKILL keeps the
	// lease until it expires (the replicas' leaseDuration), so the standby takes over
	// after about 10s (16s with controller-runtime's 15s default): the shipped 5m is
	// some 30 times that, the test's 60s six. It costs no time: the test never
	// waits for TetherNoLeader.
	noLeaderFor = 60 * time.Second
	// leaseDuration, renewDeadline and retryPeriod are the replicas' leader election
	// timings: shorter than the shipped 15s/10s/2s so that a takeover after a kill
	// costs the test 6s less. The renew deadline is the one that must stay wide: a
	// leader that cannot renew within it (a loaded control plane) steps down and
	// exits, and fails the test. The lease needs only to be longer than it, and the
	// second between them is room enough: the replicas share one clock.
	leaseDuration = 9 * time.Second
	renewDeadline = 8 * time.Second
	retryPeriod   = time.Second
	// handoverReconciles is how many reconciles of each Sync the new leader makes
	// after a takeover while the test watches for alerts: the first one after a
	// takeover is where a new leader could see a Sync differently (a cold cache), and
	// the second is an interval later, when a state the first left behind would show.
	handoverReconciles = 2
)

// TestAlertsFireAndResolveInARealPrometheus is the alerting story with every part
// real: two replicas with leader election, the shipped rules in Prometheus, and a
// Sync per alert, each driven into its condition and out of it again.
func TestAlertsFireAndResolveInARealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Prometheus and two agents against a control plane with workloads")
	}
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	replicas := []*replica{newReplica(t, "tether-a"), newReplica(t, "tether-b")}
	rules := promserver.RulesWithFor(t, rulesPath, alertFor, map[string]time.Duration{"TetherNoLeader": noLeaderFor})
	prom := promserver.Start(t, promserver.Options{
		Targets:   []string{replicas[0].metricsAddr, replicas[1].metricsAddr},
		RuleFiles: []string{rules},
	})
	for _, r := range replicas {
		r.start(t, ns)
	}
	w := &world{c: c, ns: ns, git: git, prom: prom}
	// Work for the dashboard, in a namespace of its own, outside the alert checks;
	// it goes on (the fetch keeps failing) while the alerts are tested.
	w.dashboardWork(t)

	t.Run("Sync alerts", func(t *testing.T) {
		t.Run("TetherSyncOutOfSync fires on drift with selfHeal off and resolves after a fixing commit", func(t *testing.T) {
			t.Parallel()
			app := w.newApp(t, "drift", map[string]string{"cm.yaml": configMap("drift", "from-git")}, false)
			cm := &corev1.ConfigMap{}
			harness.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "drift"}, cm); err != nil {
					return err
				}
				cm.Data["v"] = "by-hand"
				return c.Update(t.Context(), cm, client.FieldOwner("someone"))
			}))
			w.waitAlert(t, "TetherSyncOutOfSync", app.sync.Name, "firing")
			// Git takes the change made by hand: the cluster equals git again.
			app.repo.Commit(t, map[string]string{"app/cm.yaml": configMap("drift", "by-hand")}, "keep the change made by hand")
			w.waitNoAlert(t, "TetherSyncOutOfSync", app.sync.Name)
		})
		t.Run("TetherSyncFailed fires on a bad commit, with its reason, and resolves after a fix", func(t *testing.T) {
			t.Parallel()
			app := w.newApp(t, "broken", map[string]string{"cm.yaml": configMap("broken", "1")}, true)
			app.repo.Commit(t, map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: broken\ndata: [\n"}, "a broken manifest")
			w.waitAlert(t, "TetherSyncFailed", app.sync.Name, "firing")
			harness.Eventually(t, waitTimeout, "tether_sync_failure names the reason", func(ctx context.Context) (bool, error) {
				v, err := prom.Value(ctx, fmt.Sprintf(`max by (reason) (tether_sync_failure{namespace=%q,name="broken"})`, ns))
				return v == 1, err
			})
			vec, err := prom.Query(t.Context(), fmt.Sprintf(`max by (reason) (tether_sync_failure{namespace=%q,name="broken"})`, ns))
			harness.Must(t, err)
			if got := string(vec[0].Metric["reason"]); got != v1alpha1.ReasonRenderFailed {
				t.Errorf("tether_sync_failure reason = %q, want %s", got, v1alpha1.ReasonRenderFailed)
			}
			// Event-based tooling hears of it too: one Warning Event naming the file.
			harness.Eventually(t, waitTimeout, "a Warning RenderFailed Event names the file", func(ctx context.Context) (bool, error) {
				events := &corev1.EventList{}
				if err := c.List(ctx, events, client.InNamespace(ns)); err != nil {
					return false, err
				}
				var found []string
				for _, e := range events.Items {
					if e.InvolvedObject.Kind == "Sync" && e.InvolvedObject.Name == "broken" && e.Type == corev1.EventTypeWarning && e.Reason == v1alpha1.ReasonRenderFailed {
						found = append(found, e.Message)
					}
				}
				if len(found) > 1 {
					t.Errorf("%d Warning RenderFailed Events, want one (deduplicated): %q", len(found), found)
				}
				return len(found) == 1 && strings.Contains(found[0], "app/cm.yaml"), nil
			})
			app.repo.Commit(t, map[string]string{"app/cm.yaml": configMap("broken", "2")}, "fix the manifest")
			w.waitNoAlert(t, "TetherSyncFailed", app.sync.Name)
		})
		t.Run("TetherSyncDegraded fires on a rollout that never becomes ready and resolves when it does", func(t *testing.T) {
			t.Parallel()
			// No node carries the label, so the pod is never scheduled, and the
			// Deployment exceeds its progress deadline.
			app := w.newApp(t, "degraded", map[string]string{"deploy.yaml": deployment("degraded", "tether.dev/no-such-node: \"true\"")}, true)
			w.waitAlert(t, "TetherSyncDegraded", app.sync.Name, "firing")
			app.repo.Commit(t, map[string]string{"app/deploy.yaml": deployment("degraded", "")}, "schedule anywhere")
			w.waitNoAlert(t, "TetherSyncDegraded", app.sync.Name)
		})
		t.Run("a healthy Sync raises nothing", func(t *testing.T) {
			t.Parallel()
			w.newApp(t, "steady", map[string]string{"cm.yaml": configMap("steady", "1")}, true)
			w.waitQuiet(t, "steady")
		})
	})
	if t.Failed() {
		return
	}

	t.Run("every dashboard panel's query returns data", func(t *testing.T) {
		checkDashboard(t, prom)
	})

	var leader, standby *replica
	t.Run("killing the leader fires nothing and the series go on", func(t *testing.T) {
		for _, name := range []string{"drift", "broken", "degraded", "steady"} {
			w.waitQuiet(t, name)
		}
		leader, standby = w.leader(t, replicas)
		killed := time.Now()
		leader.kill(t)
		// Nothing may fire, and no alert of a Sync may even become pending, from the
		// kill until the new leader has reconciled every Sync handoverReconciles
		// times and Prometheus has evaluated its rules over what it exported then.
		// A Sync alert counts from its first evaluation, as pending, so that is the
		// window in which the handover could raise one; after it the test would be
		// watching Syncs that nothing changes.
		quiet := &handoverWatch{w: w, seen: map[string]bool{}}
		harness.Eventually(t, waitTimeout, "the standby takes the lease", func(ctx context.Context) (bool, error) {
			quiet.check(ctx, t)
			v, err := prom.Value(ctx, fmt.Sprintf(`tether_leader{instance=%q}`, standby.metricsAddr))
			return v == 1, err
		})
		t.Logf("the standby took over %v after the kill", time.Since(killed).Round(time.Second))
		harness.Eventually(t, waitTimeout, fmt.Sprintf("the new leader reconciles every Sync %d times", handoverReconciles), func(ctx context.Context) (bool, error) {
			quiet.check(ctx, t)
			vec, err := prom.Query(ctx, fmt.Sprintf(`tether_reconcile_duration_seconds_count{instance=%q,namespace=%q} >= %d`, standby.metricsAddr, ns, handoverReconciles))
			return len(vec) == 4, err
		})
		t.Logf("the new leader had reconciled every Sync %d times %v after the kill", handoverReconciles, time.Since(killed).Round(time.Second))
		// A state exported by the last of those reconciles is scraped within one
		// interval and evaluated within the next.
		for end := time.Now().Add(2 * promserver.DefaultInterval); time.Now().Before(end); time.Sleep(harness.Poll) {
			quiet.check(t.Context(), t)
		}
		t.Logf("read the alerts %d times over the %v from the kill", quiet.checks, time.Since(killed).Round(time.Second))
		// Every Sync's series has a sample at every evaluation since before the kill.
		w.continuous(t, killed.Add(-5*time.Second), time.Now())
	})
	if t.Failed() {
		return
	}

	t.Run("killing both replicas fires TetherAgentDown", func(t *testing.T) {
		standby.kill(t)
		harness.Eventually(t, waitTimeout, "TetherAgentDown fires", func(ctx context.Context) (bool, error) {
			state, err := alertState(ctx, prom, "TetherAgentDown", nil)
			return state == promv1.AlertStateFiring, err
		})
	})
}

// world is what the alert story acts on.
type world struct {
	c    client.Client
	ns   string
	git  *gitserver.Server
	prom *promserver.Server
}

// app is a Sync and the repository it follows (path "app").
type app struct {
	sync *v1alpha1.Sync
	repo *gitserver.Repo
}

// newApp commits files under app/ to a repository of its own, creates a Sync of it
// named name, and waits until the Sync has applied the commit.
func (w *world) newApp(t *testing.T, name string, files map[string]string, selfHeal bool) *app {
	t.Helper()
	repo := w.git.CreateRepo(t, name)
	tree := map[string]string{}
	for f, content := range files {
		tree["app/"+f] = content
	}
	commit := repo.Commit(t, tree, "add "+name)
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "app",
				Interval: &metav1.Duration{Duration: 2 * time.Second},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: w.ns},
			SelfHeal:    &selfHeal,
		},
	}
	harness.Must(t, w.c.Create(t.Context(), s))
	harness.Eventually(t, waitTimeout, name+" has applied its first commit", func(ctx context.Context) (bool, error) {
		got := &v1alpha1.Sync{}
		if err := w.c.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return false, err
		}
		return got.Status.LastAppliedRevision == "main@sha1:"+commit, nil
	})
	return &app{sync: s, repo: repo}
}

// dashboardWork makes the agent do what the dashboard's panels show that the alert
// story does not: a Sync whose fetch keeps failing, and a field that another
// manager keeps changing until Tether gives it up (drift corrections, then a field
// fight). They live in a namespace of their own, outside the alert checks, for as
// long as t runs.
func (w *world) dashboardWork(t *testing.T) {
	other := *w
	other.ns = controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	fought := other.newApp(t, "fought", map[string]string{"cm.yaml": configMap("fought", "from-git")}, true)
	missing := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Name: "missing", Namespace: other.ns}, Spec: *fought.sync.Spec.DeepCopy()}
	missing.Spec.Source.Ref = v1alpha1.GitRef{Branch: "no-such-branch"}
	harness.Must(t, w.c.Create(t.Context(), missing))

	key := client.ObjectKey{Namespace: other.ns, Name: "fought"}
	for round := range 3 {
		cm := &corev1.ConfigMap{}
		harness.Must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := w.c.Get(t.Context(), key, cm); err != nil {
				return err
			}
			cm.Data["v"] = fmt.Sprintf("fighter-%d", round)
			return w.c.Update(t.Context(), cm, client.FieldOwner("fighter"))
		}))
		harness.Eventually(t, waitTimeout, fmt.Sprintf("Tether corrects the fighter's change %d", round), func(ctx context.Context) (bool, error) {
			err := w.c.Get(ctx, key, cm)
			return cm.Data["v"] == "from-git", err
		})
	}
	harness.Eventually(t, waitTimeout, "Prometheus has the field fight and the failing fetch", func(ctx context.Context) (bool, error) {
		fights, err := w.prom.Value(ctx, fmt.Sprintf(`sum(tether_field_fights_total{namespace=%q,name="fought",manager="fighter"})`, other.ns))
		if err != nil {
			return false, err
		}
		failing, err := w.prom.Value(ctx, fmt.Sprintf(`max(tether_sync_failure{namespace=%q,name="missing"})`, other.ns))
		return fights >= 1 && failing == 1, err
	})
}

// alertState returns the state of the alert named alertname whose labels include
// labels, or "" if there is none.
func alertState(ctx context.Context, prom *promserver.Server, alertname string, labels map[string]string) (promv1.AlertState, error) {
	alerts, err := prom.Alerts(ctx)
	if err != nil {
		return "", err
	}
	for _, a := range alerts {
		if a.Labels["alertname"] != model.LabelValue(alertname) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && a.Labels[model.LabelName(k)] == model.LabelValue(v)
		}
		if match {
			return a.State, nil
		}
	}
	return "", nil
}

// waitAlert waits until alertname is in state for the Sync named name.
func (w *world) waitAlert(t *testing.T, alertname, name string, state promv1.AlertState) {
	t.Helper()
	harness.Eventually(t, waitTimeout, fmt.Sprintf("%s is %s for %s", alertname, state, name), func(ctx context.Context) (bool, error) {
		got, err := alertState(ctx, w.prom, alertname, map[string]string{"namespace": w.ns, "name": name})
		return got == state, err
	})
}

// waitNoAlert waits until alertname is neither pending nor firing for the Sync
// named name: it has resolved.
func (w *world) waitNoAlert(t *testing.T, alertname, name string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, fmt.Sprintf("%s resolves for %s", alertname, name), func(ctx context.Context) (bool, error) {
		got, err := alertState(ctx, w.prom, alertname, map[string]string{"namespace": w.ns, "name": name})
		return got == "", err
	})
}

// waitQuiet waits until no alert is pending or firing for the Sync named name, and
// Prometheus has its Ready series at 1 (so the quiet is not the absence of data).
func (w *world) waitQuiet(t *testing.T, name string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "no alert for "+name, func(ctx context.Context) (bool, error) {
		ready, err := w.prom.Value(ctx, fmt.Sprintf(`max(tether_sync_ready{namespace=%q,name=%q})`, w.ns, name))
		if err != nil || ready != 1 {
			return false, err
		}
		alerts, err := w.prom.Alerts(ctx)
		if err != nil {
			return false, err
		}
		for _, a := range alerts {
			if a.Labels["namespace"] == model.LabelValue(w.ns) && a.Labels["name"] == model.LabelValue(name) {
				return false, fmt.Errorf("%s is %s", a.Labels["alertname"], a.State)
			}
		}
		return true, nil
	})
}

// handoverWatch checks the alerts for what the death of the leader must not raise:
// an alert of a Sync of the test's namespace, pending or firing; TetherAgentDown;
// any other alert of the agent firing (TetherNoLeader is pending until the standby
// takes over, and fires only after noLeaderFor). The dashboard's Syncs, in another
// namespace, fail on purpose.
type handoverWatch struct {
	w *world
	// checks counts the checks that read the alerts: the window watched.
	checks int
	// seen holds the alerts already reported, so that each fails the test once.
	seen map[string]bool
}

// check reads the alerts once and fails t for each that the handover must not
// raise; an error reading them fails t too.
func (h *handoverWatch) check(ctx context.Context, t *testing.T) {
	t.Helper()
	alerts, err := h.w.prom.Alerts(ctx)
	if err != nil {
		if ctx.Err() == nil {
			t.Errorf("reading the alerts after the leader was killed: %v", err)
		}
		return
	}
	h.checks++
	for _, a := range alerts {
		agent := a.Labels["namespace"] == ""
		raised := a.Labels["namespace"] == model.LabelValue(h.w.ns) || agent && (a.State == promv1.AlertStateFiring || a.Labels["alertname"] == "TetherAgentDown")
		if key := string(a.State) + " " + a.Labels.String(); raised && !h.seen[key] {
			h.seen[key] = true
			t.Errorf("%s after the leader was killed: %s", a.State, a.Labels)
		}
	}
}

// leader returns the replica that holds the lease, as Prometheus sees it, and the other.
func (w *world) leader(t *testing.T, replicas []*replica) (leader, standby *replica) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "Prometheus sees one leader", func(ctx context.Context) (bool, error) {
		vec, err := w.prom.Query(ctx, `tether_leader == 1`)
		if err != nil || len(vec) != 1 {
			return false, err
		}
		for i, r := range replicas {
			if string(vec[0].Metric["instance"]) == r.metricsAddr {
				leader, standby = r, replicas[1-i]
			}
		}
		return leader != nil, nil
	})
	return leader, standby
}

// continuous checks that every Sync of the test has its tether_sync_ready series,
// folded across replicas, at every second from start to end: no gap while the
// leader changed.
func (w *world) continuous(t *testing.T, start, end time.Time) {
	t.Helper()
	m, err := w.prom.QueryRange(t.Context(), fmt.Sprintf(`max by (name) (tether_sync_ready{namespace=%q})`, w.ns), start, end, time.Second)
	harness.Must(t, err)
	want := int(end.Sub(start)/time.Second) + 1
	if len(m) != 4 {
		t.Errorf("%d Syncs have tether_sync_ready series across the kill, want 4: %v", len(m), m)
	}
	for _, s := range m {
		if len(s.Values) != want {
			t.Errorf("Sync %s: %d samples from %s to %s at 1s, want %d: a gap in the series", s.Metric["name"], len(s.Values), start.Format(time.TimeOnly), end.Format(time.TimeOnly), want)
		}
	}
}

func configMap(name, v string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {v: %q}\n", name, v)
}

// deployment is a one-replica Deployment with a five-second progress deadline, and
// nodeSelector (YAML, one line) if not empty.
func deployment(name, nodeSelector string) string {
	selector := ""
	if nodeSelector != "" {
		selector = "\n      nodeSelector: {" + nodeSelector + "}"
	}
	return strings.TrimSpace(fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: 1
  progressDeadlineSeconds: 5
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:%[2]s
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
`, name, selector)) + "\n"
}
