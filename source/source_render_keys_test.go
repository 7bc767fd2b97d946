package source

import (
	"testing"

	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/sopstools"
)

// TestForgetKeysDropsTheirDecryptedRenders: the plaintext a Sync's keys opened
// leaves the in-memory cache with the Sync (or with its old keys, on a
// rotation); renders with other keys, or none, stay.
func TestForgetKeysDropsTheirDecryptedRenders(t *testing.T) {
	tools := sopstools.Find(t)
	identity, recipient := tools.AgeKey(t)
	keys, err := ParseKeys(map[string][]byte{"k.agekey": []byte(identity)})
	if err != nil {
		t.Fatal(err)
	}
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: in-memory-only}\n"
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "deploy")
	repo.Commit(t, map[string]string{"app/secret.yaml": tools.EncryptAge(t, "secret.yaml", secret, []string{recipient})}, "one")
	s := newCacheTestSource(t, Options{})
	rev := mustFetch(t, s, repo.URL())
	for _, dec := range []*Decryption{{Keys: keys}, {Keys: keys, RequireEncryption: true}, nil} {
		if _, err := s.RenderDecrypted(t.Context(), rev, "app", Helm{}, dec); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.renders.Size(); n != 3 {
		t.Fatalf("%d renders cached, want 3 (two policies with the keys, one without)", n)
	}
	s.ForgetKeys(keys.Digest())
	if n, _ := s.renders.Size(); n != 1 {
		t.Errorf("%d renders cached after ForgetKeys, want only the one without keys", n)
	}
	if _, ok := s.renders.Get(renderKey(rev, "app", nil)); !ok {
		t.Error("the render without keys was dropped too")
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"": ".", ".": ".", "apps/web/": "apps/web", "apps/../web": "web"} {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"/etc", "..", "../other", "apps/../../x"} {
		if _, err := CleanPath(bad); !IsRenderError(err) {
			t.Errorf("CleanPath(%q) error = %v, want a render error", bad, err)
		}
	}
}
