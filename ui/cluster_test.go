package ui

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
)

// serviceAccountToken creates a ServiceAccount and returns a token of it
// (TokenRequest) and its user name.
func serviceAccountToken(t *testing.T, ns, name string) (token, user string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(controlplane.Shared(t).Config())
	harness.Must(t, err)
	_, err = cs.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	harness.Must(t, err)
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	harness.Must(t, err)
	return tr.Status.Token, "system:serviceaccount:" + ns + ":" + name
}

// startClusterUI serves a UI in cluster mode (no credentials of its own) until
// the test ends; it returns its base URL and its log.
func startClusterUI(t *testing.T, tlsFiles ...string) (string, *harness.Buffer) {
	t.Helper()
	log := &harness.Buffer{}
	opts := Options{Config: controlplane.Shared(t).Config(), Scheme: testScheme(t), InCluster: true, Namespace: "default", AllNamespaces: true,
		Log: funcr.New(func(prefix, args string) { fmt.Fprintln(log, prefix, args) }, funcr.Options{Verbosity: 10})}
	if len(tlsFiles) == 2 {
		opts.TLSCertFile, opts.TLSKeyFile = tlsFiles[0], tlsFiles[1]
	}
	return strings.TrimSuffix(serve(t, opts), "/login"), log
}

// signIn fills the sign-in form with token (and namespace) and returns the
// answer to the POST and, when it set one, the session cookie.
func signIn(t *testing.T, base, token, namespace string) (code int, body string, session *http.Cookie) {
	t.Helper()
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := plain.Get(base + "/login")
	harness.Must(t, err)
	resp.Body.Close()
	var formCookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == signInCookie {
			formCookie = c
		}
	}
	if formCookie == nil {
		t.Fatalf("the sign-in form sets no %s cookie", signInCookie)
	}
	form := url.Values{csrfField: {formCookie.Value}, "token": {token}, "namespace": {namespace}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/login", strings.NewReader(form.Encode()))
	harness.Must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(&http.Cookie{Name: signInCookie, Value: formCookie.Value})
	resp, err = plain.Do(req)
	harness.Must(t, err)
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			session = c
		}
	}
	return resp.StatusCode, buf.String(), session
}

// browserWith is a browser of base holding the session cookie (set by hand:
// the cookie is Secure, and the test serves plain http).
func browserWith(t *testing.T, base string, session *http.Cookie) *browser {
	t.Helper()
	jar, err := cookiejar.New(nil)
	harness.Must(t, err)
	u, err := url.Parse(base)
	harness.Must(t, err)
	jar.SetCookies(u, []*http.Cookie{{Name: session.Name, Value: session.Value, Path: "/"}})
	return &browser{t: t, base: base, http: &http.Client{Jar: jar, Timeout: waitLong,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func TestInAClusterEachUserSeesWhatTheirTokenMayRead(t *testing.T) {
	c := admin(t)
	cp := controlplane.Shared(t)
	nsA, nsB := controlplane.NewNamespace(t, cp.Config()), controlplane.NewNamespace(t, cp.Config())
	newSync(t, c, nsA, "one", nil, readyStatus("main@sha1:aaaaaaaaaaaa", "first"))
	newSync(t, c, nsB, "two", nil, readyStatus("main@sha1:bbbbbbbbbbbb", "second"))
	aliceToken, alice := serviceAccountToken(t, nsA, "alice")
	bobToken, bob := serviceAccountToken(t, nsB, "bob")
	grantSyncReading(t, c, alice, "")
	grantSyncReading(t, c, bob, nsB)
	base, log := startClusterUI(t)

	t.Run("without a session the sign-in form is shown", func(t *testing.T) {
		b := &browser{t: t, base: base, http: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
		if code, _ := b.do(t.Context(), http.MethodGet, "/", nil); code != http.StatusSeeOther {
			t.Errorf("GET / without a session: %d, want 303 to /login", code)
		}
		if page := b.get("/login"); !strings.Contains(page, `name="token" type="password"`) {
			t.Errorf("the sign-in form lacks its token field:\n%s", page)
		}
	})
	t.Run("a bad token is refused", func(t *testing.T) {
		code, body, session := signIn(t, base, "not-a-token", "")
		if code != http.StatusUnauthorized || session != nil || !strings.Contains(body, "did not accept this token") {
			t.Errorf("a bad token: %d, session %v, want 401 and none:\n%s", code, session, body)
		}
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/", nil)
		harness.Must(t, err)
		req.Header.Set("Authorization", "Bearer not-a-token")
		resp, err := http.DefaultClient.Do(req)
		harness.Must(t, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a bad token in an Authorization header: %d, want 401", resp.StatusCode)
		}
	})
	t.Run("the session cookie is Secure, HttpOnly and SameSite=Strict", func(t *testing.T) {
		code, body, session := signIn(t, base, aliceToken, "")
		if code != http.StatusSeeOther || session == nil {
			t.Fatalf("alice signs in: %d, session %v\n%s", code, session, body)
		}
		if !session.Secure || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || session.Path != "/" {
			t.Errorf("the session cookie: %+v, want Secure, HttpOnly, SameSite=Strict, Path=/", session)
		}
		if session.Value == aliceToken || strings.Contains(session.Value, aliceToken[:20]) {
			t.Error("the session cookie holds the token")
		}
	})
	t.Run("two users see what each may list", func(t *testing.T) {
		_, _, aliceSession := signIn(t, base, aliceToken, "")
		_, _, bobSession := signIn(t, base, bobToken, nsB)
		if aliceSession == nil || bobSession == nil {
			t.Fatal("alice or bob could not sign in")
		}
		alicePage := browserWith(t, base, aliceSession).get("/")
		bobBrowser := browserWith(t, base, bobSession)
		bobPage := bobBrowser.get("/")
		for _, want := range []string{`href="/syncs/` + nsA + `/one"`, `href="/syncs/` + nsB + `/two"`} {
			if !strings.Contains(alicePage, want) {
				t.Errorf("alice, who may list every namespace, does not see %s:\n%s", want, alicePage)
			}
		}
		if !strings.Contains(bobPage, `href="/syncs/`+nsB+`/two"`) || strings.Contains(bobPage, `/syncs/`+nsA+`/one`) {
			t.Errorf("bob, who may list %s only, sees other than its Sync:\n%s", nsB, bobPage)
		}
		if code, _ := bobBrowser.do(t.Context(), http.MethodGet, "/syncs/"+nsA+"/one", nil); code != http.StatusForbidden {
			t.Errorf("bob opens alice's Sync: %d, want 403", code)
		}
		if page := bobBrowser.get("/syncs/" + nsB + "/two"); strings.Contains(page, bobToken[:20]) {
			t.Error("the page holds bob's token")
		}
		if !strings.Contains(bobPage, "Signed in as <strong>"+bob+"</strong>") {
			t.Errorf("the fleet page does not say bob is signed in:\n%s", bobPage)
		}
		code, _ := bobBrowser.do(t.Context(), http.MethodPost, "/logout", url.Values{csrfField: {bobBrowser.csrf(bobPage)}})
		if code != http.StatusSeeOther {
			t.Errorf("bob signs out: %d, want 303", code)
		}
		if code, _ := bobBrowser.do(t.Context(), http.MethodGet, "/", nil); code != http.StatusSeeOther {
			t.Errorf("after signing out bob's cookie still opens the fleet: %d, want 303 to /login", code)
		}
	})
	t.Run("a proxy's Authorization header signs its user in", func(t *testing.T) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/", nil)
		harness.Must(t, err)
		req.Header.Set("Authorization", "Bearer "+aliceToken)
		resp, err := http.DefaultClient.Do(req)
		harness.Must(t, err)
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(buf.String(), `/syncs/`+nsA+`/one`) {
			t.Errorf("alice's token in a header: %d, want 200 and her Syncs:\n%s", resp.StatusCode, buf.String())
		}
	})
	t.Run("a token the API server stops accepting ends its session", func(t *testing.T) {
		carolToken, carol := serviceAccountToken(t, nsB, "carol")
		grantSyncReading(t, c, carol, nsB)
		_, _, session := signIn(t, base, carolToken, nsB)
		if session == nil {
			t.Fatal("carol could not sign in")
		}
		b := browserWith(t, base, session)
		b.get("/")
		cs, err := kubernetes.NewForConfig(cp.Config())
		harness.Must(t, err)
		harness.Must(t, cs.CoreV1().ServiceAccounts(nsB).Delete(t.Context(), "carol", metav1.DeleteOptions{}))
		// The API server may accept the token a few seconds more (its cache).
		harness.Eventually(t, waitLong, "the Sync page of a deleted account's token sends to the sign-in", func(ctx context.Context) (bool, error) {
			code, _ := b.do(ctx, http.MethodGet, "/syncs/"+nsB+"/two", nil)
			return code == http.StatusSeeOther, nil
		})
		if code, _ := b.do(t.Context(), http.MethodGet, "/", nil); code != http.StatusSeeOther {
			t.Errorf("the fleet after the token was refused: %d, want 303 to /login (the session ended)", code)
		}
	})
	for _, token := range []string{aliceToken, bobToken} {
		if strings.Contains(log.String(), token[:20]) {
			t.Errorf("the server's log holds a token:\n%s", log.String())
		}
	}
}

// Sessions end when idle or old, and no more than the maximum are open; a
// proxy's token finds its session again.
func TestSessionsAreBoundedAndExpire(t *testing.T) {
	start := time.Date(2026, 11, 27, 18, 0, 0, 0, time.UTC)
	ss := newSessions(2)
	idle, err := ss.add(&viewer{live: newBroker()}, "", start)
	harness.Must(t, err)
	busy, err := ss.add(&viewer{live: newBroker()}, "hash", start)
	harness.Must(t, err)
	if _, err := ss.add(&viewer{live: newBroker()}, "", start); !errors.Is(err, errTooManySessions) {
		t.Errorf("a third session of two allowed: %v, want errTooManySessions", err)
	}
	if ss.ofBearer("hash", start.Add(sessionIdle)) != ss.byID[busy] {
		t.Error("the proxy's token does not find its session")
	}
	ss.sweep(start.Add(sessionIdle + time.Second))
	if ss.get(idle, start) != nil || ss.get(busy, start.Add(sessionIdle+time.Second)) == nil {
		t.Error("after the idle time: want the idle session ended, the busy one kept")
	}
	ss.sweep(start.Add(sessionMaxAge + time.Second))
	if ss.get(busy, start) != nil || ss.ofBearer("hash", start) != nil {
		t.Error("after the maximum age the session is kept")
	}
}

// With a certificate the server serves https, and a browser keeps its Secure
// cookies over it.
func TestInAClusterTheServerServesTLS(t *testing.T) {
	admin(t)
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	harness.Must(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tether-ui"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	harness.Must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	harness.Must(t, err)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	harness.Must(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	harness.Must(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	base, _ := startClusterUI(t, certFile, keyFile)
	if !strings.HasPrefix(base, "https://127.0.0.1:") {
		t.Fatalf("the server's URL is %s, want https", base)
	}
	cert, err := x509.ParseCertificate(der)
	harness.Must(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	c := &http.Client{Timeout: waitLong, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/login", nil)
	harness.Must(t, err)
	resp, err := c.Do(req)
	harness.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || !resp.Cookies()[0].Secure {
		t.Errorf("GET /login over https: %d with cookies %v, want 200 and the sign-in form's Secure cookie", resp.StatusCode, resp.Cookies())
	}
}

// The sign-in form keeps a browser's token: the live stream of the form's own
// page is redirected to the form, and a form opened in a second tab must not
// make the first one's token stale.
func TestTheSignInFormKeepsTheBrowsersToken(t *testing.T) {
	base, _ := startClusterUI(t)
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(cookies ...*http.Cookie) (token string, set []*http.Cookie) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/login", nil)
		harness.Must(t, err)
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := plain.Do(req)
		harness.Must(t, err)
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		m := csrfInput.FindStringSubmatch(buf.String())
		if m == nil {
			t.Fatalf("the sign-in form has no token:\n%s", buf.String())
		}
		return m[1], resp.Cookies()
	}
	first, set := get()
	if len(set) != 1 || set[0].Name != signInCookie || set[0].Value != first {
		t.Fatalf("a browser without a token gets cookies %v, want %s=%s", set, signInCookie, first)
	}
	if again, set := get(&http.Cookie{Name: signInCookie, Value: first}); again != first || len(set) != 0 {
		t.Errorf("the form opened again shows token %q and sets %v, want %q and no cookie", again, set, first)
	}
	if other, set := get(&http.Cookie{Name: signInCookie, Value: "chosen-by-someone"}); other == "chosen-by-someone" || len(set) != 1 || set[0].Value != other {
		t.Errorf("a cookie not of our shape: the form shows %q and sets %v, want a new token in a new cookie", other, set)
	}
}
