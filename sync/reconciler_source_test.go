package sync_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

func TestHundredSyncsOnOneRepositoryShareOnePollPerInterval(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 100 Syncs for several intervals")
	}
	const syncs = 100
	const interval = 2 * time.Second
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "shared")
	files := map[string]string{}
	for i := 0; i < syncs; i++ {
		files[fmt.Sprintf("apps/s-%03d/cm.yaml", i)] = configMapYAML(fmt.Sprintf("s-%03d", i), "hello")
	}
	first := repo.Commit(t, files, "100 apps")
	created := make([]*v1alpha1.Sync, syncs)
	for i := range created {
		created[i] = a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
			s.Name = fmt.Sprintf("s-%03d", i)
			s.Spec.Source.Path = fmt.Sprintf("apps/s-%03d", i)
			s.Spec.Source.Interval = &metav1.Duration{Duration: interval}
		})
	}

	t.Run("the first sync of all 100 fetches the repository once", func(t *testing.T) {
		waitAllApplied(t, a, created, first)
		if got := repo.Requests(); got.Fetches != 1 {
			t.Errorf("requests = %+v, want exactly one fetch", got)
		}
	})

	t.Run("while nothing changes, one ref listing per interval and no fetch", func(t *testing.T) {
		const intervals = 3
		before, reconciles := repo.Requests(), reconcileCount(t, a)
		time.Sleep(intervals * interval)
		got, polls := repo.Requests(), reconcileCount(t, a)-reconciles
		listings := got.RefListings - before.RefListings
		// A resolution is shared for 90% of the interval (the earliest a jittered
		// requeue comes back), so three intervals hold at most four listings.
		if listings < intervals-1 || listings > intervals+1 {
			t.Errorf("%d ref listings in %d intervals, want about one per interval", listings, intervals)
		}
		if got.Fetches != before.Fetches {
			t.Errorf("%d fetches with nothing new in git, want none", got.Fetches-before.Fetches)
		}
		if polls < syncs*(intervals-1) {
			t.Errorf("%d reconciles in %d intervals, want every Sync to have polled at each interval", polls, intervals)
		}
		t.Logf("%d Syncs, %d intervals of %s: %d reconciles, %d ref listings, %d fetches", syncs, intervals, interval, polls, listings, got.Fetches-before.Fetches)
	})

	t.Run("a new commit is fetched once and reaches every Sync", func(t *testing.T) {
		before := repo.Requests()
		second := repo.Commit(t, map[string]string{"apps/s-042/cm.yaml": configMapYAML("s-042", "bonjour")}, "one change")
		waitAllApplied(t, a, created, second)
		if got := repo.Requests(); got.Fetches != before.Fetches+1 {
			t.Errorf("%d fetches for one new commit, want 1", got.Fetches-before.Fetches)
		}
	})
}

func TestCredentialsComeFromTheSecretAndStayInIt(t *testing.T) {
	const password, wrong = "s3cret-pass", "wr0ng-pass"
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{Username: "tether", Password: password}).CreateRepo(t, "private")
	first := repo.Commit(t, apps(1), "one app")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "git-credentials", Namespace: ns},
		Data:       map[string][]byte{"username": []byte("tether"), "password": []byte(password)},
	}
	harness.Must(t, a.Client.Create(t.Context(), secret))
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: secret.Name} })

	t.Run("a Sync applies a private repository with the Secret's credentials", func(t *testing.T) {
		a.WaitApplied(t, s, first)
	})

	t.Run("bad credentials: SourceReady=False AuthenticationFailed, the last good revision stays applied", func(t *testing.T) {
		setPassword(t, a, secret, wrong)
		second := repo.Commit(t, map[string]string{"apps/app-0000.yaml": app("app-0000", "bonjour")}, "a change")
		requestReconcile(t, a, s)
		got := a.WaitFor(t, s, "SourceReady=False AuthenticationFailed", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == source.ReasonAuthenticationFailed
		})
		if !strings.HasSuffix(got.Status.LastAppliedRevision, first) {
			t.Errorf("lastAppliedRevision = %s, want it to stay at %s", got.Status.LastAppliedRevision, first)
		}
		if greeting := configMapData(t, a, ns, "app-0000"); greeting != "hello" {
			t.Errorf("greeting in the cluster = %q, want the applied %q kept", greeting, "hello")
		}

		logs := reconcileLogs(t, a, s)
		for where, text := range map[string]string{"status": harness.Describe(got), "events": strings.Join(a.events(), "\n"), "logs": logs} {
			if strings.Contains(text, wrong) || strings.Contains(text, password) {
				t.Errorf("the %s show a password: %s", where, text)
			}
		}
		if !strings.Contains(logs, "authentication required") {
			t.Errorf("logs = %q, want the failure logged", logs)
		}

		t.Run("fixing the Secret recovers by itself", func(t *testing.T) {
			setPassword(t, a, secret, password)
			a.WaitFor(t, s, "Ready at "+second, func(s *v1alpha1.Sync) bool {
				return strings.HasSuffix(s.Status.LastAppliedRevision, second) && rig.IsReady(s)
			})
		})
	})

	t.Run("a Sync without the credentials does not ride on the other's resolution", func(t *testing.T) {
		stranger := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) { s.Name = "stranger" })
		a.WaitFor(t, stranger, "SourceReady=False AuthenticationFailed", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == source.ReasonAuthenticationFailed
		})
	})

	t.Run("a missing Secret is SecretNotFound", func(t *testing.T) {
		missing := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
			s.Name = "missing"
			s.Spec.Source.SecretRef = &v1alpha1.LocalObjectReference{Name: "nope"}
		})
		a.WaitFor(t, missing, "SourceReady=False SecretNotFound", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.SourceReadyCondition)
			return c != nil && c.Reason == v1alpha1.ReasonSecretNotFound && strings.Contains(c.Message, ns+"/nope")
		})
	})
}

// waitAllApplied waits until every Sync is Ready at commit.
func waitAllApplied(t *testing.T, a *agent, syncs []*v1alpha1.Sync, commit string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, fmt.Sprintf("%d Syncs are Ready at %s", len(syncs), commit), func(ctx context.Context) (bool, error) {
		list := &v1alpha1.SyncList{}
		if err := a.Client.List(ctx, list, client.InNamespace(syncs[0].Namespace)); err != nil {
			return false, err
		}
		ready := 0
		for i := range list.Items {
			if strings.HasSuffix(list.Items[i].Status.LastAppliedRevision, commit) && rig.IsReady(&list.Items[i]) {
				ready++
			}
		}
		if ready < len(syncs) {
			return false, fmt.Errorf("%d of %d ready", ready, len(syncs))
		}
		return true, nil
	})
}

// reconcileCount is how many reconciles the agent has observed.
func reconcileCount(t *testing.T, a *agent) uint64 {
	t.Helper()
	families, err := a.Registry.Gather()
	harness.Must(t, err)
	var n uint64
	for _, f := range families {
		if f.GetName() == "tether_reconcile_duration_seconds" {
			for _, m := range f.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

func setPassword(t *testing.T, a *agent, secret *corev1.Secret, password string) {
	t.Helper()
	patch := client.MergeFrom(secret.DeepCopy())
	secret.Data["password"] = []byte(password)
	harness.Must(t, a.Client.Patch(t.Context(), secret, patch))
}

// requestReconcile asks for a reconcile that looks at git at once, the way a user
// (or a replica that received a push) does.
func requestReconcile(t *testing.T, a *agent, s *v1alpha1.Sync) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, tethersync.ReconcileRequestedAnnotation, time.Now().Format(time.RFC3339Nano)))
	harness.Must(t, a.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", patch)))
}

// reconcileLogs runs one reconcile of s with a logger that records what it writes.
func reconcileLogs(t *testing.T, a *agent, s *v1alpha1.Sync) string {
	t.Helper()
	var b strings.Builder
	log := funcr.New(func(prefix, args string) { b.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 10})
	_, _ = a.Reconciler.Reconcile(ctrl.LoggerInto(t.Context(), log), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(s)})
	return b.String()
}

func configMapData(t *testing.T, a *agent, ns, name string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cm))
	return cm.Data["greeting"]
}

func configMapYAML(name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {greeting: %q}\n", name, greeting)
}
