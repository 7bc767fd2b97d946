package ui

import (
	"fmt"
	"net/http"
	gosync "sync"
	"time"
)

// subscriberBuffer is how many messages a browser may fall behind before it is
// dropped (its EventSource reconnects, and the page reloads what it missed).
const subscriberBuffer = 64

// heartbeat keeps an idle stream open through proxies, and finds browsers gone.
const heartbeat = 25 * time.Second

// broker fans the shared watch's changes out to every open page.
type broker struct {
	mu   gosync.Mutex
	subs map[chan []byte]struct{}
}

func newBroker() *broker { return &broker{subs: map[chan []byte]struct{}{}} }

func (b *broker) subscribe() chan []byte {
	ch := make(chan []byte, subscriberBuffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch
}

func (b *broker) unsubscribe(ch chan []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[ch]; ok {
		delete(b.subs, ch)
		close(ch)
	}
}

// publish sends msg to every subscriber; one that is too far behind is dropped
// rather than waited for.
func (b *broker) publish(msg []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- msg:
		default:
			delete(b.subs, ch)
			close(ch)
		}
	}
}

// closeAll drops every subscriber: their streams end.
func (b *broker) closeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		delete(b.subs, ch)
		close(ch)
	}
}

// stream is the live stream of a page: a server-sent event for each change of a
// Sync the shared watch sees, until the browser goes.
func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	live := viewerOf(r).live
	ch := live.subscribe()
	defer live.unsubscribe(ch)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": live\n\n")
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		var msg []byte
		select {
		case <-r.Context().Done():
			return
		case m, open := <-ch:
			if !open {
				return
			}
			msg = m
		case <-tick.C:
			msg = []byte(": beat\n\n")
		}
		if _, err := w.Write(msg); err != nil {
			return
		}
		flusher.Flush()
	}
}
