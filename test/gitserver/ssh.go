package gitserver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path"
	"strings"
	gosync "sync"
	"testing"

	"golang.org/x/crypto/ssh"
)

// SSHOptions configures the SSH side of a Server.
type SSHOptions struct {
	// AuthorizedKeys are the client keys the server accepts; a client with any other
	// key is refused, and counted as Refused. Required: a git host over SSH always
	// authenticates.
	AuthorizedKeys []ssh.PublicKey
}

// SSHServer serves the repositories of a Server over SSH on 127.0.0.1, the way a
// forge's sshd does: it accepts "git-upload-pack '<path>'" and runs the real
// git-upload-pack on the bare repository. Only fetching is served; pushes go through
// the Repo helpers. Requests count into the Server's counters: every upload-pack
// session is a ref listing, and one in which the client wants objects also a fetch.
type SSHServer struct {
	srv      *Server
	listener net.Listener
	config   *ssh.ServerConfig
	hostKey  ssh.Signer
	gitPath  string
	t        testing.TB
	wg       gosync.WaitGroup
}

// StartSSH serves s's repositories over SSH, with a fresh ed25519 host key, until
// the test ends.
func (s *Server) StartSSH(t testing.TB, opts SSHOptions) *SSHServer {
	t.Helper()
	gitPath, err := exec.LookPath("git")
	if err != nil {
		t.Fatalf("git server: git CLI not found on PATH: %v", err)
	}
	_, hostKey := NewSSHKey(t)
	authorized := map[string]bool{}
	for _, k := range opts.AuthorizedKeys {
		authorized[string(k.Marshal())] = true
	}
	ss := &SSHServer{srv: s, hostKey: hostKey, gitPath: gitPath, t: t}
	ss.config = &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
			if authorized[string(key.Marshal())] {
				return nil, nil
			}
			s.record("", func(c *Requests) { c.Refused++ })
			return nil, errors.New("key not authorized")
		},
	}
	ss.config.AddHostKey(hostKey)
	ss.listener, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("git server: listening for SSH: %v", err)
	}
	ss.wg.Add(1)
	go ss.accept()
	t.Cleanup(func() {
		_ = ss.listener.Close()
		ss.wg.Wait()
	})
	return ss
}

// NewSSHKey returns a fresh ed25519 key: its private half PEM-encoded in OpenSSH
// form (what a Secret's identity holds) and as a signer.
func NewSSHKey(t testing.TB) ([]byte, ssh.Signer) {
	t.Helper()
	_, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatalf("generating an SSH key: %v", err)
	}
	block, err := ssh.MarshalPrivateKey(private, "")
	if err != nil {
		t.Fatalf("encoding an SSH key: %v", err)
	}
	signer, err := ssh.NewSignerFromKey(private)
	if err != nil {
		t.Fatalf("encoding an SSH key: %v", err)
	}
	return pem.EncodeToMemory(block), signer
}

// URL returns the ssh:// clone URL of repository name.
func (ss *SSHServer) URL(name string) string {
	return "ssh://git@" + ss.listener.Addr().String() + "/" + name + ".git"
}

// HostKey returns the server's public host key.
func (ss *SSHServer) HostKey() ssh.PublicKey { return ss.hostKey.PublicKey() }

// KnownHosts returns a known_hosts line that trusts this server's host key.
func (ss *SSHServer) KnownHosts() []byte {
	return KnownHostsLine(ss.listener.Addr().String(), ss.HostKey())
}

// KnownHostsLine returns a known_hosts line trusting key for the host at addr
// ("127.0.0.1:2222").
func KnownHostsLine(addr string, key ssh.PublicKey) []byte {
	host, port, _ := net.SplitHostPort(addr)
	return []byte(fmt.Sprintf("[%s]:%s %s", host, port, ssh.MarshalAuthorizedKey(key)))
}

func (ss *SSHServer) accept() {
	defer ss.wg.Done()
	for {
		conn, err := ss.listener.Accept()
		if err != nil {
			return
		}
		ss.wg.Add(1)
		go func() {
			defer ss.wg.Done()
			ss.serveConn(conn)
		}()
	}
}

func (ss *SSHServer) serveConn(conn net.Conn) {
	defer conn.Close()
	sconn, chans, reqs, err := ssh.NewServerConn(conn, ss.config)
	if err != nil {
		return
	}
	defer sconn.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only sessions")
			continue
		}
		ch, requests, err := nc.Accept()
		if err != nil {
			return
		}
		ss.wg.Add(1)
		go func() {
			defer ss.wg.Done()
			ss.serveSession(ch, requests)
		}()
	}
}

// serveSession runs the one command a git client asks for.
func (ss *SSHServer) serveSession(ch ssh.Channel, requests <-chan *ssh.Request) {
	defer ch.Close()
	for req := range requests {
		if req.Type != "exec" {
			_ = req.Reply(req.Type == "env", nil) // git sends GIT_PROTOCOL; ignored: v0
			continue
		}
		name, ok := uploadPackRepo(req.Payload)
		if !ok {
			_ = req.Reply(false, nil)
			fmt.Fprintf(ch.Stderr(), "only git-upload-pack of a repository is served\n")
			ss.exit(ch, 128)
			return
		}
		_ = req.Reply(true, nil)
		ss.uploadPack(ch, name)
		return
	}
}

// uploadPack runs git-upload-pack on repository name with the session's streams,
// sends its exit status, and counts the session.
func (ss *SSHServer) uploadPack(ch ssh.Channel, name string) {
	path := "/" + name + ".git"
	ss.srv.record(path, func(c *Requests) { c.RefListings++ })
	in := &wantSniffer{r: ch, onWant: func() { ss.srv.record(path, func(c *Requests) { c.Fetches++ }) },
		count: func(n int) { ss.srv.addTraffic(path, int64(n), 0) }}
	out := &countingSSHWriter{w: ch, count: func(n int) { ss.srv.addTraffic(path, 0, int64(n)) }}
	cmd := exec.Command(ss.gitPath, "upload-pack", ss.srv.bareDir(name))
	cmd.Env = withoutInheritedGit(append(cmd.Environ(), gitEnv(ss.srv.home)...))
	cmd.Stdout, cmd.Stderr = out, ch.Stderr()
	// Not cmd.Stdin: Wait would wait for the client to close its side, and a git
	// client waits for the exit status first.
	stdin, err := cmd.StdinPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "starting git-upload-pack: %v\n", err)
		ss.exit(ch, 128)
		return
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(stdin, in)
		_ = stdin.Close()
	}()
	code := uint32(0)
	if err := cmd.Wait(); err != nil {
		code = 128
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = uint32(exit.ExitCode())
		}
	}
	ss.exit(ch, code)
	_ = ch.Close() // ends the copy of the client's side
	<-copied
}

func (ss *SSHServer) exit(ch ssh.Channel, code uint32) {
	var status [4]byte
	binary.BigEndian.PutUint32(status[:], code)
	_, _ = ch.SendRequest("exit-status", false, status[:])
}

// uploadPackRepo reads the repository name from an exec payload such as
// "git-upload-pack '/org/app.git'", refusing anything else and any path that
// climbs out of the server's root.
func uploadPackRepo(payload []byte) (string, bool) {
	if len(payload) < 4 {
		return "", false
	}
	n := binary.BigEndian.Uint32(payload)
	if int(n) != len(payload)-4 {
		return "", false
	}
	command := string(payload[4:])
	arg, ok := strings.CutPrefix(command, "git-upload-pack ")
	if !ok {
		arg, ok = strings.CutPrefix(command, "git upload-pack ")
	}
	if !ok {
		return "", false
	}
	p := strings.Trim(strings.TrimSpace(arg), "'\"")
	clean := path.Clean("/" + p)
	if clean != "/"+strings.TrimPrefix(p, "/") || strings.Contains(clean, "..") || !strings.HasSuffix(clean, ".git") {
		return "", false
	}
	return strings.TrimSuffix(strings.TrimPrefix(clean, "/"), ".git"), true
}

// wantSniffer passes a client's requests through and calls onWant once if the
// client asks for objects (a pkt-line "want <sha>"), telling a fetch from a ref
// listing that ends with a flush.
type wantSniffer struct {
	r      io.Reader
	head   []byte
	done   bool
	onWant func()
	count  func(int)
}

func (s *wantSniffer) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.count(n)
	if !s.done {
		s.head = append(s.head, p[:n]...)
		if len(s.head) >= 9 || err != nil {
			s.done = true
			if len(s.head) >= 9 && bytes.Equal(s.head[4:9], []byte("want ")) {
				s.onWant()
			}
		}
	}
	return n, err
}

// countingSSHWriter counts what the server sends as it goes, so that a client
// sees the bytes counted by the time it has read them.
type countingSSHWriter struct {
	w     io.Writer
	count func(int)
}

func (c *countingSSHWriter) Write(p []byte) (int, error) {
	c.count(len(p))
	return c.w.Write(p)
}
