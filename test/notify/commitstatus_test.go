package notifications

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	gosync "sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/notify"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	os.Exit(controlplane.RunMain(m, controlplane.Options{}))
}

// waitTimeout guards every wait against hangs; it is not a performance assertion.
const waitTimeout = 90 * time.Second

const (
	shaFail = "1111111111111111111111111111111111111111"
	shaFix  = "2222222222222222222222222222222222222222"
)

// gitHost is a loopback GitHub (Enterprise) commit-status API: it records every
// status it is sent, per commit.
type gitHost struct {
	*httptest.Server
	mu   gosync.Mutex
	sent map[string][]string // sha → states, in order
}

func newGitHost(t *testing.T) *gitHost {
	h := &gitHost{sent: map[string][]string{}}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix = "/api/v3/repos/org/app/statuses/"
		if r.Method != http.MethodPost || len(r.URL.Path) <= len(prefix) || r.URL.Path[:len(prefix)] != prefix || r.Header.Get("Authorization") != "Bearer gh-token" {
			http.Error(w, "no", http.StatusNotFound)
			return
		}
		var body struct{ State, Context string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		sha := r.URL.Path[len(prefix):]
		h.sent[sha] = append(h.sent[sha], body.State)
		h.mu.Unlock()
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *gitHost) states(sha string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.sent[sha]...)
}

func (h *gitHost) last(sha string) string {
	s := h.states(sha)
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func count(states []string, state string) int {
	n := 0
	for _, s := range states {
		if s == state {
			n++
		}
	}
	return n
}

// startAgent starts a manager with the notify Controller alone, as `tether
// controller` adds it, until the returned stop is called.
func startAgent(t *testing.T, namespace string) (stop func()) {
	t.Helper()
	cfg := controlplane.Shared(t).Config()
	scheme := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(scheme))
	harness.Must(t, v1alpha1.AddToScheme(scheme))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	harness.Must(t, err)
	c, err := notify.New(notify.Cluster{Cache: mgr.GetCache(), Secrets: mgr.GetAPIReader(), Status: mgr.GetClient()}, notify.DefaultOptions())
	harness.Must(t, err)
	harness.Must(t, mgr.Add(c))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the manager: %v", err)
		}
	}
	t.Cleanup(stop)
	return stop
}

func newClient(t *testing.T) client.Client {
	scheme := runtime.NewScheme()
	harness.Must(t, clientgoscheme.AddToScheme(scheme))
	harness.Must(t, v1alpha1.AddToScheme(scheme))
	c, err := client.New(controlplane.Shared(t).Config(), client.Options{Scheme: scheme})
	harness.Must(t, err)
	return c
}

// report writes a Sync's status as the reconciler would after a reconcile.
func report(t *testing.T, c client.Client, s *v1alpha1.Sync, fetched, applied string, health v1alpha1.HealthStatusCode, ready metav1.ConditionStatus, reason, msg string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "the Sync's status written", func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
			return false, err
		}
		s.Status.ObservedGeneration = s.Generation
		s.Status.SourceRevision, s.Status.LastAppliedRevision, s.Status.Health = "main@sha1:"+fetched, "", health
		if applied != "" {
			s.Status.LastAppliedRevision = "main@sha1:" + applied
		}
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: ready, Reason: reason, Message: msg, ObservedGeneration: s.Generation})
		return true, c.Status().Update(ctx, s)
	})
}

// A commit that fails, then a fix: the commit statuses of both shas end as
// failure and success, each sent once; an agent restarted then asserts the
// current status once more, and nothing after that for a change that does not
// move it.
func TestCommitStatusesFollowAFailingThenAFixedCommit(t *testing.T) {
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../../deploy/base/crd")
	ns := controlplane.NewNamespace(t, cp.Config())
	c := newClient(t)
	host := newGitHost(t)
	hook, hooked := hookReceiver(t)

	harness.Must(t, c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gh"}, Data: map[string][]byte{"token": []byte("gh-token")}}))
	harness.Must(t, c.Create(t.Context(), &v1alpha1.Notifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "statuses"},
		Spec: v1alpha1.NotifierSpec{Type: v1alpha1.NotifierGitHub, Address: host.URL + "/org/app", SecretRef: &v1alpha1.LocalObjectReference{Name: "gh"}}}))
	harness.Must(t, c.Create(t.Context(), &v1alpha1.Notifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"},
		Spec: v1alpha1.NotifierSpec{Type: v1alpha1.NotifierGeneric, Address: hook.URL}}))
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: v1alpha1.SyncSpec{Source: v1alpha1.SourceSpec{URL: "https://git.example.com/org/app.git", Ref: v1alpha1.GitRef{Branch: "main"}}}}
	harness.Must(t, c.Create(t.Context(), s))

	stop := startAgent(t, ns)
	t.Run("a Notifier whose Secret reads is Ready", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "Notifier statuses Ready", func(ctx context.Context) (bool, error) {
			nf := &v1alpha1.Notifier{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "statuses"}, nf); err != nil {
				return false, err
			}
			return meta.IsStatusConditionTrue(nf.Status.Conditions, v1alpha1.ReadyCondition), nil
		})
	})
	t.Run("a revision refused is a failure", func(t *testing.T) {
		report(t, c, s, shaFail, "", "", metav1.ConditionFalse, v1alpha1.ReasonValidationFailed, "Deployment/web: spec.replicas: invalid")
		harness.Eventually(t, waitTimeout, "failure on the failing commit", func(context.Context) (bool, error) {
			return host.last(shaFail) == "failure", nil
		})
	})
	t.Run("the fix is pending while it rolls out, then success", func(t *testing.T) {
		report(t, c, s, shaFix, shaFix, v1alpha1.HealthProgressing, metav1.ConditionFalse, v1alpha1.ReasonProgressing, "")
		harness.Eventually(t, waitTimeout, "pending on the fix", func(context.Context) (bool, error) {
			return host.last(shaFix) == "pending", nil
		})
		report(t, c, s, shaFix, shaFix, v1alpha1.HealthHealthy, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
		harness.Eventually(t, waitTimeout, "success on the fix", func(context.Context) (bool, error) {
			return host.last(shaFix) == "success", nil
		})
		if got := host.states(shaFail); len(got) != 1 {
			t.Errorf("the failing commit was sent %v, want [failure]", got)
		}
	})
	t.Run("the chat hook heard the story", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "Failed, Applied and Healthy at the hook", func(context.Context) (bool, error) {
			k := hooked()
			return k[notify.EventFailed] && k[notify.EventApplied] && k[notify.EventHealthy], nil
		})
	})
	t.Run("the Notifier shows its last delivery", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "lastDelivery Delivered", func(ctx context.Context) (bool, error) {
			nf := &v1alpha1.Notifier{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "statuses"}, nf); err != nil {
				return false, err
			}
			return nf.Status.LastDelivery != nil && nf.Status.LastDelivery.Result == v1alpha1.DeliveryDelivered, nil
		})
	})
	t.Run("a restarted agent asserts the current status once", func(t *testing.T) {
		stop()
		startAgent(t, ns)
		harness.Eventually(t, waitTimeout, "success re-asserted on the fix", func(context.Context) (bool, error) {
			return count(host.states(shaFix), "success") == 2, nil
		})
		// A change that moves no level (a suspend) sends no status: the hook
		// hearing of the suspend proves the change was handled.
		harness.Eventually(t, waitTimeout, "the Sync suspended", func(ctx context.Context) (bool, error) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
				return false, err
			}
			s.Spec.Suspend = true
			return true, c.Update(ctx, s)
		})
		harness.Eventually(t, waitTimeout, "Suspended at the hook", func(context.Context) (bool, error) {
			return hooked()[notify.EventSuspended], nil
		})
		if got := host.states(shaFix); count(got, "success") != 2 || len(got) != 3 {
			t.Errorf("the fix was sent %v, want [pending success success]", got)
		}
	})
}

// hookReceiver is a loopback generic webhook; hooked returns the event kinds it heard.
func hookReceiver(t *testing.T) (*httptest.Server, func() map[string]bool) {
	var mu gosync.Mutex
	kinds := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m notify.GenericMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, e := range m.Events {
			kinds[e.Kind] = true
		}
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string]bool {
		mu.Lock()
		defer mu.Unlock()
		out := map[string]bool{}
		for k, v := range kinds {
			out[k] = v
		}
		return out
	}
}
