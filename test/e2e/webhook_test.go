package e2e

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

func TestAWebhookPushReachesTheClusterAtOnce(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	first := repo.Commit(t, map[string]string{"apps/web/config.yaml": fmt.Sprintf(appConfig, "hello")}, "add web")
	a := startAgent(t)
	sync := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL: repo.URL(), Ref: v1alpha1.GitRef{Branch: "main"}, Path: "apps/web",
				// An hour: only the webhook can bring the next commit in this test.
				Interval: &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	createSync(t, c, sync)
	waitForSync(t, c, sync, "Ready at the first commit", func(s *v1alpha1.Sync) bool {
		return s.Status.LastAppliedRevision == "main@sha1:"+first && isReady(s)
	})
	second := repo.Commit(t, map[string]string{"apps/web/config.yaml": fmt.Sprintf(appConfig, "bonjour")}, "greet in French")
	// What GitHub sends for a push to main, trimmed to what Tether reads.
	body := []byte(fmt.Sprintf(`{"ref": "refs/heads/main", "repository": {"clone_url": %q}}`, repo.URL()))

	t.Run("an unsigned push is refused and does nothing", func(t *testing.T) {
		before := repo.Requests()
		if code := postHook(t, a, body, nil); code != http.StatusUnauthorized {
			t.Errorf("status = %d, want 401", code)
		}
		time.Sleep(time.Second)
		if got := repo.Requests(); got != before {
			t.Errorf("git requests went from %+v to %+v, want none", before, got)
		}
	})

	t.Run("a signed push is applied at once", func(t *testing.T) {
		start := time.Now()
		if code := postHook(t, a, body, webhookSecret); code != http.StatusAccepted {
			t.Fatalf("status = %d, want 202", code)
		}
		waitForSync(t, c, sync, "Ready at the pushed commit", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+second && isReady(s)
		})
		// Measured, not asserted: see BenchmarkWebhookToReconcile in sync/.
		t.Logf("push → applied in %s (polled every 200ms)", time.Since(start).Round(time.Millisecond))
	})
}

// postHook sends body to the agent's GitHub receiver as a push, signed with secret
// (unsigned if nil), and returns the status code.
func postHook(t *testing.T, a *agent, body, secret []byte) int {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+a.webhookAddr+"/hooks/github", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-GitHub-Event", "push")
	if secret != nil {
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(source.Sign(body, secret)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
