package source

import gosync "sync"

// bodyBudget is the webhook receiver's in-flight budget: how many bodies, and how
// many bytes of them, are being read at once. It never waits: a request that does
// not fit is refused, so that a flood of senders holds neither memory nor
// goroutines waiting for their turn.
type bodyBudget struct {
	maxBytes, maxBodies int64

	mu            gosync.Mutex
	bytes, bodies int64
}

// take reserves one body of size bytes, and reports whether it fitted. Every take
// that returns true is followed by one give of the same size.
func (b *bodyBudget) take(size int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodies+1 > b.maxBodies || b.bytes+size > b.maxBytes {
		return false
	}
	b.bodies++
	b.bytes += size
	return true
}

// give returns what a take of size reserved.
func (b *bodyBudget) give(size int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bodies--
	b.bytes -= size
}
