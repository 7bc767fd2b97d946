package gitserver

import (
	"io"
	"net"
	"net/url"
	gosync "sync"
	"testing"
)

// FrontMode is how a Front treats new connections.
type FrontMode int

const (
	// Forward passes connections on to the host behind the Front.
	Forward FrontMode = iota
	// Refuse closes the Front's port: connections are refused, as a host that is down
	// refuses them.
	Refuse
	// Hang accepts connections and never answers, as a host whose backend hangs.
	Hang
)

// Front is a TCP proxy on a fixed loopback port in front of a Server, which a test
// switches between forwarding, refusing and hanging, so that a client sees one git
// host go down, hang and come back on the same URL. Connections open when the mode
// changes are cut.
type Front struct {
	t       testing.TB
	backend string
	addr    string

	mu    gosync.Mutex
	mode  FrontMode
	l     net.Listener
	conns map[net.Conn]bool
}

// StartFront starts a Front that forwards to s until the test ends.
func StartFront(t testing.TB, s *Server) *Front {
	t.Helper()
	u, err := url.Parse(s.http.URL)
	if err != nil {
		t.Fatalf("front: %v", err)
	}
	f := &Front{t: t, backend: u.Host, conns: map[net.Conn]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("front: %v", err)
	}
	f.addr = l.Addr().String()
	f.serve(l)
	t.Cleanup(func() { f.Set(Refuse) })
	return f
}

// URL is the clone URL of repository name through the Front.
func (f *Front) URL(name string) string { return "http://" + f.addr + "/" + name + ".git" }

// Set switches the Front to mode, cutting the connections open.
func (f *Front) Set(mode FrontMode) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.conns {
		_ = c.Close()
		delete(f.conns, c)
	}
	f.mode = mode
	switch {
	case mode == Refuse && f.l != nil:
		_ = f.l.Close()
		f.l = nil
	case mode != Refuse && f.l == nil:
		l, err := net.Listen("tcp", f.addr)
		if err != nil {
			f.t.Fatalf("front: listening again on %s: %v", f.addr, err)
		}
		f.mu.Unlock()
		f.serve(l)
		f.mu.Lock()
	}
}

func (f *Front) serve(l net.Listener) {
	f.mu.Lock()
	f.l = l
	f.mu.Unlock()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			mode := f.mode
			f.conns[c] = true
			f.mu.Unlock()
			if mode == Forward {
				go f.forward(c)
			}
		}
	}()
}

// forward copies c to and from a new connection to the backend.
func (f *Front) forward(c net.Conn) {
	b, err := net.Dial("tcp", f.backend)
	if err != nil {
		_ = c.Close()
		return
	}
	f.mu.Lock()
	f.conns[b] = true
	f.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.Close()
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	<-done
	f.mu.Lock()
	delete(f.conns, c)
	delete(f.conns, b)
	f.mu.Unlock()
}
