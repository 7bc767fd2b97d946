package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	gosync "sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// statusHost is a loopback GitHub (Enterprise) commit-status API, as the agent
// derives it from a Notifier's address http://HOST/org/app: it records, in the
// order received, every POST /api/v3/repos/org/app/statuses/{sha} that carries
// the Notifier's token, and answers 201 as GitHub does.
type statusHost struct {
	srv *httptest.Server

	mu   gosync.Mutex
	sent []postedStatus
	bad  []string // requests that were not a well-formed status: method, path, why
}

type postedStatus struct {
	SHA, State, Context, Description string
}

const statusToken = "e2e-status-token"

func startStatusHost(t *testing.T) *statusHost {
	h := &statusHost{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const prefix = "/api/v3/repos/org/app/statuses/"
		sha, ok := strings.CutPrefix(r.URL.Path, prefix)
		var body struct {
			State, Context, Description string
			TargetURL                   string `json:"target_url"`
		}
		why := ""
		switch {
		case r.Method != http.MethodPost || !ok || len(sha) != 40:
			why = "not a commit status"
		case r.Header.Get("Authorization") != "Bearer "+statusToken:
			why = "no token"
		case json.NewDecoder(r.Body).Decode(&body) != nil:
			why = "not JSON"
		case !slices.Contains([]string{"pending", "success", "failure", "error"}, body.State):
			why = "state " + body.State
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if why != "" {
			h.bad = append(h.bad, r.Method+" "+r.URL.Path+": "+why)
			http.Error(w, why, http.StatusUnprocessableEntity)
			return
		}
		h.sent = append(h.sent, postedStatus{SHA: sha, State: body.State, Context: body.Context, Description: body.Description})
		w.WriteHeader(http.StatusCreated)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// address is the repository's web URL, the Notifier's address.
func (h *statusHost) address() string { return h.srv.URL + "/org/app" }

// states returns the states sent for sha, in order.
func (h *statusHost) states(sha string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.sent {
		if s.SHA == sha {
			out = append(out, s.State)
		}
	}
	return out
}

func (h *statusHost) all() []postedStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.sent)
}

func (h *statusHost) refused() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.bad)
}

func lastOf(states []string) string {
	if len(states) == 0 {
		return ""
	}
	return states[len(states)-1]
}

func countOf(states []string, state string) int {
	n := 0
	for _, s := range states {
		if s == state {
			n++
		}
	}
	return n
}

// createStatusNotifier creates a github Notifier of namespace ns sending to
// address, with its token in a Secret.
func createStatusNotifier(t *testing.T, c client.Client, ns, name, address string) {
	t.Helper()
	harness.Must(t, c.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{"token": []byte(statusToken)}}))
	harness.Must(t, c.Create(t.Context(), &v1alpha1.Notifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.NotifierSpec{Type: v1alpha1.NotifierGitHub, Address: address, SecretRef: &v1alpha1.LocalObjectReference{Name: name}}}))
}

// gateAnnotation releases the health of the gate ConfigMap: the Sync's health
// check calls a ConfigMap Healthy only once it carries it, and nothing in git
// sets it, so the test holds a revision between its apply and Healthy for as long
// as it needs, and releases it by annotating the object (a field the agent does
// not manage, so no drift).
const gateAnnotation = "e2e.tether.dev/released"

var gateCheck = v1alpha1.HealthCheck{
	APIVersion: "v1", Kind: "ConfigMap",
	Current: fmt.Sprintf("has(metadata.annotations) && '%s' in metadata.annotations", gateAnnotation),
}

// TestCommitStatusesSurviveAKillBetweenApplyAndHealthy: a commit the API server
// refuses, then a fix that is applied but held Progressing; the agent is
// SIGKILLed after the fix's apply (its lastAppliedRevision written and its
// pending status received) and before it is Healthy, then restarted, then the
// health is released. The statuses of both shas end as failure and success.
//
// "Once", counted over the whole test at the receiver: the failing commit's
// failure is sent once; the fix's success is sent once; its pending once per
// agent process (the restarted agent re-asserts the level it finds, pending, as
// docs/notifications.md says), so twice. A third commit, whose success arrives
// after every status of the fix left the agent's one queue, closes the count.
func TestCommitStatusesSurviveAKillBetweenApplyAndHealthy(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	host := startStatusHost(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("statuses received: %v", host.all())
		}
	})
	createStatusNotifier(t, c, ns, "statuses", host.address())

	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "statuses")
	// data values are strings: the API server refuses a number.
	bad := repo.Commit(t, map[string]string{"apps/bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad}\ndata: {v: 1}\n"}, "a ConfigMap the API server refuses")
	a := startAgent(t)
	s := gitSync(ns, "web", repo.URL(), "apps", 2*time.Second)
	s.Spec.HealthChecks = []v1alpha1.HealthCheck{gateCheck}
	createSync(t, c, s)

	harness.Eventually(t, waitTimeout, "failure on the refused commit", func(context.Context) (bool, error) {
		return lastOf(host.states(bad)) == "failure", nil
	})

	fix := repo.Commit(t, map[string]string{
		"apps/bad.yaml":  "",
		"apps/gate.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gate}\ndata: {v: \"1\"}\n",
	}, "the fix, held Progressing")
	// The apply happened (the agent wrote the fix as applied, not Healthy), and the
	// notify side saw it (the receiver has the fix's pending): kill now.
	waitForSync(t, c, s, "the fix applied and Progressing", func(s *v1alpha1.Sync) bool {
		return strings.HasSuffix(s.Status.LastAppliedRevision, fix) && s.Status.Health == v1alpha1.HealthProgressing
	})
	harness.Eventually(t, waitTimeout, "pending on the fix", func(context.Context) (bool, error) {
		return lastOf(host.states(fix)) == "pending", nil
	})
	a.stop(t, syscall.SIGKILL)
	if got := host.states(fix); slices.Contains(got, "success") {
		t.Fatalf("the fix was sent %v before the kill: the kill was not between apply and Healthy", got)
	}

	startAgent(t)
	// The restarted agent re-asserts the level it finds: pending, the health still held.
	harness.Eventually(t, waitTimeout, "pending re-asserted on the fix", func(context.Context) (bool, error) {
		return countOf(host.states(fix), "pending") >= 2, nil
	})
	gate := &corev1.ConfigMap{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "gate"}, gate))
	patch := client.MergeFrom(gate.DeepCopy())
	gate.Annotations = map[string]string{gateAnnotation: "yes"}
	harness.Must(t, c.Patch(t.Context(), gate, patch, client.FieldOwner("e2e-release")))
	waitRevision(t, c, s, fix)
	harness.Eventually(t, waitTimeout, "success on the fix", func(context.Context) (bool, error) {
		return lastOf(host.states(fix)) == "success", nil
	})

	// A third commit: its success comes after anything still queued for the fix.
	third := repo.Commit(t, map[string]string{"apps/more.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: more, annotations: {%s: \"yes\"}}\ndata: {v: \"1\"}\n", gateAnnotation)}, "one more, released in git")
	waitRevision(t, c, s, third)
	harness.Eventually(t, waitTimeout, "success on the third commit", func(context.Context) (bool, error) {
		return lastOf(host.states(third)) == "success", nil
	})

	got := host.states(bad)
	if lastOf(got) != "failure" || countOf(got, "failure") != 1 {
		t.Errorf("the refused commit was sent %v, want one failure, last", got)
	}
	got = host.states(fix)
	if lastOf(got) != "success" || countOf(got, "success") != 1 || countOf(got, "pending") != 2 || len(got) != 3 {
		t.Errorf("the fix was sent %v, want [pending pending success]: pending once per agent, success once", got)
	}
	for _, p := range host.all() {
		if p.Context != "tether/"+ns+"/web" {
			t.Errorf("a status of %s has context %q, want tether/%s/web", p.SHA, p.Context, ns)
		}
	}
	if r := host.refused(); len(r) > 0 {
		t.Errorf("the receiver refused %d requests: %v", len(r), r)
	}
	t.Logf("statuses received: %v", host.all())

	// The Sync goes while this agent runs (createSync's cleanup would run after it stopped).
	harness.Must(t, c.Delete(t.Context(), s))
	waitGone(t, c, s)
}

// hungReceiver accepts connections, reads what it is sent and never answers,
// until the test ends. It counts the connections the agent gave up (closed).
type hungReceiver struct {
	l      net.Listener
	mu     gosync.Mutex
	conns  []net.Conn
	closed int
}

func startHungReceiver(t *testing.T) *hungReceiver {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	harness.Must(t, err)
	h := &hungReceiver{l: l}
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			h.mu.Lock()
			h.conns = append(h.conns, conn)
			h.mu.Unlock()
			go func() {
				_, _ = io.Copy(io.Discard, conn) // until the agent gives up and closes
				h.mu.Lock()
				h.closed++
				h.mu.Unlock()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, c := range h.conns {
			_ = c.Close()
		}
	})
	return h
}

func (h *hungReceiver) url() string { return "http://" + h.l.Addr().String() }

func (h *hungReceiver) accepted() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.conns)
}

// givenUp is how many connections the agent closed: attempts it gave up.
func (h *hungReceiver) givenUp() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// driftRounds is how many drift corrections each half of the drift test times.
const driftRounds = 5

// TestAHungReceiverDelaysNoReconcileAndNoOtherReceiver times drift corrections
// (a managed ConfigMap's field edited, until the agent has reverted it) of one
// Sync, first with no Notifier, then with two Notifiers whose receiver accepts
// connections and never answers (a commit-status one and a generic webhook)
// beside one that answers. Once both hung Notifiers hold an attempt, a new commit
// is applied, the answering receiver gets its success, and the second half of
// the corrections is timed; the test asserts all of it happened before the agent
// gave up a single hung attempt (10 s each), which neither could if it waited on
// them. The times are logged, not asserted: the ratio of the medians is what
// docs/notifications.md quotes.
func TestAHungReceiverDelaysNoReconcileAndNoOtherReceiver(t *testing.T) {
	c := newClient(t)
	cs, err := kubernetes.NewForConfig(controlplane.Shared(t).Config())
	harness.Must(t, err)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "drift")
	// One ConfigMap per correction: the agent stops correcting a field that one
	// manager changed back after each of 3 corrections (a fight, docs/drift.md).
	files := map[string]string{}
	for i := range 2 * driftRounds {
		files[fmt.Sprintf("apps/drifty-%d.yaml", i)] = fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: drifty-%d}\ndata: {v: \"1\"}\n", i)
	}
	first := repo.Commit(t, files, "ConfigMaps to drift")
	startAgent(t)
	s := gitSync(ns, "drift", repo.URL(), "apps", time.Hour) // only the drift watch corrects
	createSync(t, c, s)
	waitRevision(t, c, s, first)

	without := timeDriftCorrections(t, cs, ns, 0)

	hung := startHungReceiver(t)
	host := startStatusHost(t)
	createStatusNotifier(t, c, ns, "answers", host.address())
	createStatusNotifier(t, c, ns, "hung-statuses", hung.url()+"/org/app")
	harness.Must(t, c.Create(t.Context(), &v1alpha1.Notifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hung-hook"},
		Spec: v1alpha1.NotifierSpec{Type: v1alpha1.NotifierGeneric, Address: hung.url() + "/hook"}}))
	// The agent has the three in its cache once it has written their status.
	for _, name := range []string{"answers", "hung-statuses", "hung-hook"} {
		harness.Eventually(t, waitTimeout, "the agent saw Notifier "+name, func(ctx context.Context) (bool, error) {
			nf := &v1alpha1.Notifier{}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nf)
			return err == nil && nf.Status.ObservedGeneration == nf.Generation, err
		})
	}
	// Each Notifier hears the next change of the Sync: a new commit, whose Applied
	// and Healthy events and statuses go to all three.
	second := repo.Commit(t, map[string]string{"apps/other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\ndata: {v: \"1\"}\n"}, "another ConfigMap")
	requestReconcile(t, c, s)
	waitRevision(t, c, s, second)
	harness.Eventually(t, waitTimeout, "both hung Notifiers are calling their receiver", func(context.Context) (bool, error) {
		return hung.accepted() >= 2, nil
	})
	// Now that both hung Notifiers hold an attempt, a third commit: the answering
	// receiver must have its status while they still do.
	third := repo.Commit(t, map[string]string{"apps/third.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: third}\ndata: {v: \"1\"}\n"}, "a third ConfigMap")
	requestReconcile(t, c, s)
	waitRevision(t, c, s, third)
	harness.Eventually(t, waitTimeout, "the answering receiver has the third commit's success", func(context.Context) (bool, error) {
		return lastOf(host.states(third)) == "success", nil
	})

	with := timeDriftCorrections(t, cs, ns, driftRounds)
	// The agent gives up an attempt after 10 s (notify.DefaultSenderOptions) and
	// closes its connection. Nothing above could have happened before that if a
	// reconcile, or the answering Notifier, waited on a hung one; so no hung
	// attempt may have been given up yet. (Failing here without such a wait would
	// take a 10 s stall of the machine: say so, the log has the times.)
	if n := hung.givenUp(); n > 0 {
		t.Errorf("%d hung attempt(s) were given up before the answering receiver's status and the corrections were seen: they may have waited on them", n)
	}
	mw, mh := median(without), median(with)
	t.Logf("drift corrected in %v (median %v) without a Notifier; %v (median %v) with two hung ones and one answering: ratio %.2f",
		without, mw, with, mh, float64(mh)/float64(mw))
}

// timeDriftCorrections edits the data.v of driftRounds ConfigMaps, drifty-<from>
// on, one after the other, as another field manager, and returns how long the
// agent took each time to write it back, seen by a watch from the edit's
// resourceVersion.
func timeDriftCorrections(t *testing.T, cs kubernetes.Interface, ns string, from int) []time.Duration {
	t.Helper()
	var out []time.Duration
	for i := from; i < from+driftRounds; i++ {
		name := fmt.Sprintf("drifty-%d", i)
		edit := fmt.Sprintf(`{"data":{"v":"edited-%d"}}`, i)
		start := time.Now()
		cm, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), name, "application/merge-patch+json", []byte(edit), metav1.PatchOptions{FieldManager: "kubectl-edit"})
		harness.Must(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(), ResourceVersion: cm.ResourceVersion,
		})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		took, ok := watchReverted(w)
		w.Stop()
		cancel()
		if !ok {
			t.Fatalf("edit %d of ConfigMap %s was not reverted within %v", i, name, waitTimeout)
		}
		out = append(out, took(start))
	}
	return out
}

// watchReverted waits for the ConfigMap's data.v to be "1" again.
func watchReverted(w watch.Interface) (func(time.Time) time.Duration, bool) {
	for ev := range w.ResultChan() {
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Modified && cm.Data["v"] == "1" {
			at := time.Now()
			return func(start time.Time) time.Duration { return at.Sub(start).Round(time.Millisecond) }, true
		}
	}
	return nil, false
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
