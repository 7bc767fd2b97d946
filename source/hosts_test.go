package source_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestASilentHostHoldsFewCallersAndFailsTheRestAtOnce(t *testing.T) {
	const timeout = 3 * time.Second
	silent := gitserver.StartSilent(t)
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

func TestARefListingThatGetsNoAnswerEndsAtTheListTimeout(t *testing.T) {
	silent := gitserver.StartSilent(t)
	src := newSource(t, source.Options{ListTimeout: time.Second}) // the fetch timeout stays 5 minutes
	start := time.Now()
	_, err := src.Fetch(t.Context(), source.Request{URL: "http://" + silent + "/repo.git", Ref: main})
	if reason := fetchReason(t, err); reason != source.ReasonHostUnreachable {
		t.Errorf("reason = %s, want %s (error %v)", reason, source.ReasonHostUnreachable, err)
	}
	// Generous: without the list timeout it would be the fetch timeout, 5 minutes.
	if elapsed := time.Since(start); elapsed > 30*time.Second {
		t.Errorf("the listing took %s to give up; want about the list timeout of 1s", elapsed)
	}
}

func TestOneNamespacesFetchesCannotMakeAnothersWait(t *testing.T) {
	const timeout = 5 * time.Second
	silent := gitserver.StartSilent(t)
	src := newSource(t, source.Options{Timeout: timeout, ListTimeout: timeout, MaxFetchesPerHost: 2, HostFailureMemory: time.Minute})
	request := func(tenant string, i int) source.Request {
		return source.Request{URL: fmt.Sprintf("http://%s/%s-%d.git", silent, tenant, i), Ref: main, Tenant: tenant}
	}
	// Three fetches of the greedy namespace: two hold the host, the third is
	// told at once that it is busy.
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			_, err := src.Fetch(t.Context(), request("greedy", i))
			errs <- err
		}()
	}
	if err := <-errs; fetchReason(t, err) != source.ReasonHostBusy {
		t.Fatalf("the first answer to the greedy namespace: %v; want %s", err, source.ReasonHostBusy)
	}

	t.Run("another namespace is admitted, not told the host is busy", func(t *testing.T) {
		others := []string{"patient", "third"}
		answers := make(chan error, len(others))
		for _, tenant := range others {
			go func() {
				_, err := src.Fetch(t.Context(), request(tenant, 0))
				answers <- err
			}()
		}
		for range others {
			err := <-answers
			if reason := fetchReason(t, err); reason != source.ReasonHostUnreachable || strings.Contains(err.Error(), "not asked again") {
				t.Errorf("reason %s (%v); want a conversation of its own with the host, which times out", reason, err)
			}
		}
	})
	// The greedy namespace's two conversations with the silent host end in errors
	// of their own; the test waits for them so that none outlives it.
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a fetch from the silent host succeeded")
		}
	}
}
