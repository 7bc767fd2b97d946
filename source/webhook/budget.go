package webhook

import gosync "sync"

// bodyBudget is the webhook receiver's in-flight budget: how many bodies, and how
// many bytes of them, are being read at once. A body takes its bytes as they
// arrive, never what it announces, so that senders who announce large bodies and
// send nothing hold next to nothing, and a signed push still fits. It never
// waits: a body that does not fit is refused, so that a flood of senders holds
// neither memory nor goroutines waiting for their turn.
type bodyBudget struct {
	maxBytes, maxBodies int64

	mu            gosync.Mutex
	bytes, bodies int64
}

// enter reserves one body, and reports whether it fitted. Every enter that
// returns true is followed by one leave.
func (b *bodyBudget) enter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bodies+1 > b.maxBodies {
		return false
	}
	b.bodies++
	return true
}

// charge reserves n more bytes for a body that entered, and reports whether
// they fitted.
func (b *bodyBudget) charge(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes+n > b.maxBytes {
		return false
	}
	b.bytes += n
	return true
}

// leave returns a body and the bytes it was charged.
func (b *bodyBudget) leave(charged int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bodies--
	b.bytes -= charged
}
