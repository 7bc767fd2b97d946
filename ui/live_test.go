package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// TestTheLiveStreamDeliversAStatusChange: a page's stream carries the new status
// of a Sync as the shared watch sees it change.
func TestTheLiveStreamDeliversAStatusChange(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	s := newSync(t, c, ns, "web", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	b := startUI(t, controlplane.Shared(t).Config(), "default", true)

	lines := openStream(t, b)

	s.Status.Sync = v1alpha1.SyncStatusOutOfSync
	harness.Must(t, c.Status().Update(t.Context(), s))

	awaitEvent(t, lines, "sync", "the change", func(data []byte) bool {
		var r row
		harness.Must(t, json.Unmarshal(data, &r))
		return r.Key == ns+"/web" && r.Sync == string(v1alpha1.SyncStatusOutOfSync)
	})
}

// awaitEvent reads the stream until a message of the event named carries data
// that delivered accepts, and fails t if the stream ends first.
func awaitEvent(t *testing.T, lines *bufio.Scanner, name, what string, delivered func(data []byte) bool) {
	t.Helper()
	event := ""
	for lines.Scan() {
		line := lines.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if ok && event == name && delivered([]byte(data)) {
			return
		}
	}
	t.Fatalf("the stream ended without %s: %v", what, lines.Err())
}

// openStream opens a page's live stream and reads its first line; the stream
// is bounded by waitLong.
func openStream(t *testing.T, b *browser) *bufio.Scanner {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLong)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/live", nil)
	harness.Must(t, err)
	stream := &http.Client{Jar: b.http.Jar} // no timeout: the stream stays open
	resp, err := stream.Do(req)
	harness.Must(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("/live: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewScanner(resp.Body)
	if !lines.Scan() || lines.Text() != ": live" {
		t.Fatalf("the stream did not open: %q %v", lines.Text(), lines.Err())
	}
	return lines
}

// TestTheLiveStreamDeliversTheCounts: after a change, the stream carries the
// fleet's counts of every Sync watched, as the page counts them, and the fleet
// page marks each count for the script to rewrite.
func TestTheLiveStreamDeliversTheCounts(t *testing.T) {
	c := admin(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	s := newSync(t, c, ns, "web", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	newSync(t, c, ns, "api", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	b := startUI(t, controlplane.Shared(t).Config(), ns, false)
	if page := b.get("/"); !strings.Contains(page, `<span class="n" data-count="OutOfSync">0</span>`) {
		t.Errorf("the fleet page does not mark its counts:\n%s", page)
	}
	lines := openStream(t, b)

	s.Status.Sync = v1alpha1.SyncStatusOutOfSync
	harness.Must(t, c.Status().Update(t.Context(), s))

	awaitEvent(t, lines, "counts", "the counts", func(data []byte) bool {
		var counts []count
		harness.Must(t, json.Unmarshal(data, &counts))
		got := map[string]int{}
		for _, n := range counts {
			got[n.Label] = n.N
		}
		return got["Syncs"] == 2 && got["OutOfSync"] == 1
	})
}
