package gitserver

import (
	"net"
	gosync "sync"
	"testing"
)

// StartSilent starts a git host that accepts connections and never says a word,
// as one whose backend hangs does, and returns its address ("127.0.0.1:port").
// Any http://ADDR/NAME.git URL on it hangs until the client gives up. Connections
// are closed when the test ends.
func StartSilent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("silent host: %v", err)
	}
	var mu gosync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
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
		_ = l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}
