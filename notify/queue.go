package notify

import (
	"context"
	gosync "sync"
	"time"
)

// QueueOptions bound a receiver's queue and say how bursts are coalesced.
type QueueOptions struct {
	// MaxEvents is how many events wait at most; beyond it an event is only
	// counted, and the next message says how many were left out.
	MaxEvents int
	// MaxListed is how many events one message lists; the rest of a burst are
	// counted in it.
	MaxListed int
	// MessageInterval is the least time between two messages to one receiver:
	// what arrives meanwhile goes into the next one. With it, a burst reaches a
	// chat as at most 1 + (length of the burst / MessageInterval) messages.
	MessageInterval time.Duration
}

// DefaultQueueOptions: at most 1,000 waiting events, 20 listed per message, one
// message every 5 seconds.
func DefaultQueueOptions() QueueOptions {
	return QueueOptions{MaxEvents: 1000, MaxListed: 20, MessageInterval: 5 * time.Second}
}

// Job is one delivery a worker makes: it builds its request when it is sent,
// with the receiver as it is then.
type Job struct {
	// Key identifies a level (a commit status of one Sync and commit, an alert
	// of one Sync): a newer job of the same key replaces one still waiting.
	Key string
	// Value is the level's value ("success", "firing"), reported with its outcome.
	Value string
	// Describe is what the Notifier's status says was delivered.
	Describe string
	// Build makes the request.
	Build func(Receiver) (Request, error)
}

// Outcome is the result of one delivery, for the Notifier's status and the metrics.
type Outcome struct {
	// Key and Value of a level's job; empty for a message.
	Key, Value string
	Describe   string
	Err        error
	Time       time.Time
	// Idle is true when the queue was empty after this delivery.
	Idle bool
}

// Target is where a worker delivers: it resolves the Notifier (its address and
// Secret, read afresh for each delivery) and reports outcomes.
type Target interface {
	// Resolve returns the receiver and a sender for it.
	Resolve(ctx context.Context) (Receiver, *Sender, error)
	// Report is told each delivery's outcome; it must not block for long.
	Report(ctx context.Context, o Outcome)
}

// Queue is one receiver's bounded queue and its worker: chat events coalesced
// into messages, and levels (commit statuses, alerts) each the newest of its key.
type Queue struct {
	opts   QueueOptions
	target Target

	mu       gosync.Mutex
	events   []Event
	omitted  int
	levels   map[string]Job
	order    []string
	wake     chan struct{}
	lastSent time.Time
}

// NewQueue returns a queue for target; Run starts its worker.
func NewQueue(target Target, opts QueueOptions) *Queue {
	return &Queue{opts: opts, target: target, levels: map[string]Job{}, wake: make(chan struct{}, 1)}
}

// AddEvents queues events for the next message. It never blocks.
func (q *Queue) AddEvents(events ...Event) {
	if len(events) == 0 {
		return
	}
	q.mu.Lock()
	for _, e := range events {
		if len(q.events) < q.opts.MaxEvents {
			q.events = append(q.events, e)
		} else {
			q.omitted++
		}
	}
	q.mu.Unlock()
	q.signal()
}

// AddLevel queues a level, replacing one of the same key still waiting. It never blocks.
func (q *Queue) AddLevel(j Job) {
	q.mu.Lock()
	if _, ok := q.levels[j.Key]; !ok {
		q.order = append(q.order, j.Key)
	}
	q.levels[j.Key] = j
	q.mu.Unlock()
	q.signal()
}

func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends.
func (q *Queue) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for {
			job, ok, wait := q.next()
			if !ok {
				break
			}
			if wait > 0 {
				if sleepCtx(ctx, wait) != nil {
					return
				}
				continue
			}
			q.deliver(ctx, job)
		}
	}
}

// next takes the next delivery: a waiting level first (each is one request), then
// the waiting events as one message, once MessageInterval has passed since the last.
func (q *Queue) next() (Job, bool, time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.order) > 0 {
		k := q.order[0]
		q.order = q.order[1:]
		j := q.levels[k]
		delete(q.levels, k)
		return j, true, 0
	}
	if len(q.events) == 0 && q.omitted == 0 {
		return Job{}, false, 0
	}
	if wait := q.opts.MessageInterval - time.Since(q.lastSent); !q.lastSent.IsZero() && wait > 0 {
		return Job{}, true, wait
	}
	n := min(len(q.events), q.opts.MaxListed)
	// The rest of a long burst is counted in this message, not sent in many more.
	msg := Message{Events: q.events[:n:n], Omitted: len(q.events) - n + q.omitted}
	q.events, q.omitted = nil, 0
	q.lastSent = time.Now()
	return Job{Describe: msg.Title(), Build: func(r Receiver) (Request, error) { return ChatRequest(r, msg) }}, true, 0
}

func (q *Queue) deliver(ctx context.Context, j Job) {
	r, sender, err := q.target.Resolve(ctx)
	if err == nil {
		var req Request
		if req, err = j.Build(r); err == nil {
			_, err = sender.Send(ctx, req)
		}
	}
	if ctx.Err() != nil {
		return
	}
	q.mu.Lock()
	idle := len(q.order) == 0 && len(q.events) == 0 && q.omitted == 0
	q.mu.Unlock()
	q.target.Report(ctx, Outcome{Key: j.Key, Value: j.Value, Describe: j.Describe, Err: err, Time: time.Now(), Idle: idle})
}
