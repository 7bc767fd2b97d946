package harness

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePortIsBelowTheEphemeralRange: a port the kernel may hand to any
// outgoing connection is never returned, and the port returned can be bound.
func TestFreePortIsBelowTheEphemeralRange(t *testing.T) {
	low := ephemeralLow()
	if low-lowestPort < 1000 {
		t.Skipf("the ephemeral range starts at %d: FreePort leaves the choice to the kernel", low)
	}
	for range 20 {
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port < lowestPort || port >= low {
			t.Fatalf("FreePort() = %d, want a port in [%d, %d), below the ephemeral range", port, lowestPort, low)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatalf("port %d from FreePort cannot be bound: %v", port, err)
		}
		Must(t, l.Close())
	}
}
