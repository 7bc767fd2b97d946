package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"tether.dev/tether/test/harness"
)

// A receiver that never answers holds up its own queue only: another receiver's
// message, queued after, is delivered while the first still hangs.
func TestAHungReceiverDelaysNoOther(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(func() { close(release); hung.Close() })
	live, got := receiver(t, nil)

	o := DefaultSenderOptions()
	o.Timeout = time.Hour // the hung receiver holds its worker for the whole test
	hungTarget, liveTarget := newStaticTarget(t, hung.URL, o), newStaticTarget(t, live.URL, o)
	qo := DefaultQueueOptions()
	hungQ, liveQ := NewQueue(hungTarget, qo), NewQueue(liveTarget, qo)
	go hungQ.Run(t.Context())
	go liveQ.Run(t.Context())

	hungQ.AddEvents(failedEvent())
	liveQ.AddEvents(failedEvent())
	one(t, got)
	select {
	case o := <-hungTarget.outcomes:
		t.Fatalf("the hung receiver's delivery ended: %+v", o)
	default:
	}
}

// A burst of 1,000 Syncs failing at once reaches a chat as a bounded number of
// messages: at most 1 + (the burst's length / MessageInterval) + 1, each listing
// at most MaxListed events and counting the rest.
func TestABurstIsCoalescedIntoBoundedMessages(t *testing.T) {
	var messages, events atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m GenericMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			t.Errorf("decoding: %v", err)
		}
		if len(m.Events) > DefaultQueueOptions().MaxListed {
			t.Errorf("a message lists %d events", len(m.Events))
		}
		messages.Add(1)
		events.Add(int64(len(m.Events) + m.Omitted))
	}))
	t.Cleanup(srv.Close)
	qo := DefaultQueueOptions()
	qo.MessageInterval = time.Second
	q := NewQueue(newStaticTarget(t, srv.URL, DefaultSenderOptions()), qo)
	go q.Run(t.Context())

	const syncs = 1000
	start := time.Now()
	for i := range syncs {
		e := failedEvent()
		e.Sync = fmt.Sprintf("app-%d", i)
		q.AddEvents(e)
	}
	burst := time.Since(start)
	harness.Eventually(t, time.Minute, "the messages to tell of every Sync's event", func(context.Context) (bool, error) {
		return events.Load() >= syncs, nil
	})
	if events.Load() != syncs {
		t.Fatalf("the messages told of %d events, want %d", events.Load(), syncs)
	}
	bound := 2 + int64(burst/qo.MessageInterval)
	t.Logf("%d Syncs failing at once → %d messages (bound %d, the burst took %v)", syncs, messages.Load(), bound, burst)
	if messages.Load() > bound {
		t.Errorf("%d messages, want at most %d", messages.Load(), bound)
	}
}

// Levels are one per key: a newer level of a key replaces the one still waiting,
// and every key is delivered.
func TestLevelsKeepTheNewestOfEachKey(t *testing.T) {
	q := NewQueue(nil, DefaultQueueOptions())
	for i, state := range []string{"pending", "success"} {
		q.AddLevel(Job{Key: "web@" + shaA, Value: state, Describe: fmt.Sprint(i)})
	}
	q.AddLevel(Job{Key: "api@" + shaA, Value: "failure"})
	var got []string
	for {
		j, ok, _ := q.next()
		if !ok {
			break
		}
		got = append(got, j.Key+"="+j.Value)
	}
	want := []string{"web@" + shaA + "=success", "api@" + shaA + "=failure"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delivered %v, want %v", got, want)
	}
}

// Commit statuses are not coalesced away: 1,000 Syncs failing at once each get
// theirs.
func TestEveryCommitStatusOfABurstIsSent(t *testing.T) {
	var statuses atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { statuses.Add(1) }))
	t.Cleanup(srv.Close)
	target := newStaticTarget(t, srv.URL, DefaultSenderOptions())
	target.r = Receiver{Type: "github", Address: srv.URL + "/org/app"}
	q := NewQueue(target, DefaultQueueOptions())
	go q.Run(t.Context())
	const syncs = 1000
	for i := range syncs {
		name := fmt.Sprintf("app-%d", i)
		c := Commit{SHA: shaA, State: CommitFailure, Description: "ValidationFailed"}
		q.AddLevel(Job{Key: name + "@" + shaA, Value: string(c.State), Build: func(r Receiver) (Request, error) { return CommitStatusRequest(r, "team-a", name, c) }})
	}
	harness.Eventually(t, time.Minute, "every commit status sent", func(context.Context) (bool, error) {
		return statuses.Load() >= syncs, nil
	})
	if statuses.Load() != syncs {
		t.Errorf("%d statuses sent, want %d", statuses.Load(), syncs)
	}
}
