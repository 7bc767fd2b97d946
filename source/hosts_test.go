package source_test

import (
	"fmt"
	"net"
	gosync "sync"
	"testing"
	"time"

	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// silentHost accepts connections and never says a word, like a git host whose
// backend hangs. It closes them when the test ends.
func silentHost(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu gosync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}

func TestASilentHostHoldsFewCallersAndFailsTheRestAtOnce(t *testing.T) {
	const timeout = 3 * time.Second
	silent := silentHost(t)
	healthy := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "healthy")
	healthy.Commit(t, map[string]string{"cm.yaml": configMap("web", "hello")}, "add web")
	src := newSource(t, source.Options{Timeout: timeout, MaxFetchesPerHost: 2, HostFailureMemory: time.Minute})

	errs := make(chan error, 10)
	start := time.Now()
	for i := range 10 {
		go func() {
			_, err := src.Fetch(t.Context(), source.Request{URL: fmt.Sprintf("http://%s/repo-%d.git", silent, i), Ref: main})
			errs <- err
		}()
	}

	t.Run("a healthy host answers while the silent one holds its callers", func(t *testing.T) {
		fetch(t, src, source.Request{URL: healthy.URL(), Ref: main})
		if elapsed := time.Since(start); elapsed >= timeout {
			t.Errorf("the healthy fetch returned after %s, behind the silent host's timeout of %s", elapsed, timeout)
		}
	})

	t.Run("two callers wait out the timeout, the other eight are told the host is busy", func(t *testing.T) {
		got := map[string]int{}
		for range 10 {
			got[fetchReason(t, <-errs)]++
		}
		want := map[string]int{source.ReasonHostBusy: 8, source.ReasonHostUnreachable: 2}
		if got[source.ReasonHostBusy] != want[source.ReasonHostBusy] || got[source.ReasonHostUnreachable] != want[source.ReasonHostUnreachable] {
			t.Errorf("reasons = %v, want %v", got, want)
		}
	})

	t.Run("after it timed out, the host is not asked again for a while", func(t *testing.T) {
		began := time.Now()
		_, err := src.Fetch(t.Context(), source.Request{URL: "http://" + silent + "/another.git", Ref: main})
		if reason := fetchReason(t, err); reason != source.ReasonHostUnreachable {
			t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonHostUnreachable, err)
		}
		// Generous: asking would take the whole timeout.
		if elapsed := time.Since(began); elapsed > timeout/2 {
			t.Errorf("failing took %s; want at once, from memory", elapsed)
		}
	})
}
