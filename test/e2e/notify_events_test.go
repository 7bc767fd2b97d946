package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	gosync "sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/notify"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// hookReceiver is a generic webhook on loopback that keeps every event it is sent.
type hookReceiver struct {
	srv    *httptest.Server
	mu     gosync.Mutex
	events []notify.GenericEvent
}

func startHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var msg notify.GenericMessage
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.events = append(h.events, msg.Events...)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// find returns the first event of kind whose message holds says.
func (h *hookReceiver) find(kind, says string) (notify.GenericEvent, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.events {
		if e.Kind == kind && strings.Contains(e.Message, says) {
			return e, true
		}
	}
	return notify.GenericEvent{}, false
}

// TestNotifiersHearDriftCorrectedAndAPersonsAction: what leaves no level in
// a Sync's status reaches a chat or webhook Notifier from the Events recorded
// on the Sync: the agent correcting drift (selfHeal on), and a person
// suspending the Sync with the CLI, named as the API server knows them.
func TestNotifiersHearDriftCorrectedAndAPersonsAction(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "told")
	first := repo.Commit(t, map[string]string{"apps/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: told}\ndata: {v: \"1\"}\n"}, "a ConfigMap")
	hook := startHookReceiver(t)
	startAgent(t)
	harness.Must(t, c.Create(t.Context(), &v1alpha1.Notifier{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"},
		Spec: v1alpha1.NotifierSpec{Type: v1alpha1.NotifierGeneric, Address: hook.srv.URL + "/hook"}}))
	harness.Eventually(t, waitTimeout, "the agent saw the Notifier", func(ctx context.Context) (bool, error) {
		nf := &v1alpha1.Notifier{}
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hook"}, nf)
		return err == nil && nf.Status.ObservedGeneration == nf.Generation, err
	})
	s := gitSync(ns, "told", repo.URL(), "apps", time.Hour) // only the drift watch corrects
	createSync(t, c, s)
	waitRevision(t, c, s, first)

	// Drift: another manager changes the ConfigMap; the agent sets it back and
	// records DriftCorrected, which the Notifier hears.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "told"}}
	harness.Must(t, c.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, []byte(`{"data":{"v":"2"}}`)), client.FieldOwner("someone-else")))
	harness.Eventually(t, waitTimeout, "the Notifier hears the drift corrected", func(context.Context) (bool, error) {
		e, ok := hook.find(notify.EventDriftCorrected, "Corrected drift")
		if ok && (e.Sync != "told" || !strings.HasSuffix(e.Revision, first)) {
			t.Fatalf("DriftCorrected for %s at %q; want Sync told at %s", e.Sync, e.Revision, first)
		}
		return ok, nil
	})

	// A person suspends the Sync with the CLI: the Notifier hears who.
	if r := tether(t, "suspend", "told", "-n", ns); r.code != 0 {
		t.Fatalf("tether suspend: %s", r)
	}
	harness.Eventually(t, waitTimeout, "the Notifier hears who suspended the Sync", func(context.Context) (bool, error) {
		e, ok := hook.find(notify.EventRequested, "asked to suspend the Sync, through tether CLI")
		if ok && strings.HasPrefix(e.Message, "an unknown user") {
			t.Fatalf("the Requested event names no one: %q", e.Message)
		}
		return ok, nil
	})
}
