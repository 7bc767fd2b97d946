package git

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestAnAnswerThatStallsIsGivenUpOnAfterTheIdleTimeout(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "the start of a pack, and then nothing")
		w.(http.Flusher).Flush()
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	base, err := NewHTTPTransport(nil)
	if err != nil {
		t.Fatal(err)
	}
	const idle = 300 * time.Millisecond
	client := &http.Client{Transport: &boundedAnswers{next: base, idle: idle}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/repo.git/git-upload-pack", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	start := time.Now()
	_, err = io.ReadAll(resp.Body)
	if err == nil {
		t.Fatal("reading a stalled answer ended without an error")
	}
	// Generous: without the idle timeout the read waits for the server forever.
	if elapsed := time.Since(start); elapsed > 10*idle {
		t.Errorf("the stalled read ended after %s, want about the idle timeout of %s", elapsed, idle)
	}
}
