package verify

import (
	"errors"
	"testing"
	"unicode"
)

// FuzzCommit feeds Commit's own code (without the guard that turns a panic
// into a refusal) hostile objects: it must not panic, must name a signer when
// it accepts, and must refuse with an *Error whose message prints.
func FuzzCommit(f *testing.F) {
	k := kit(f)
	keys := trusted(f)
	r := newRepo(f)
	for _, seed := range [][]byte{
		r.commit("Unsigned", nil),
		r.commit("Signed by Alice", k.alice),
		r.commit("Signed by ci", k.ci),
		r.commit("Signed by Bob", k.bob),
		[]byte(treeLine + committerLine + "gpgsig " + pgpValue + "\nmessage\n"),
		[]byte(treeLine + committerLine + "gpgsig-sha256 " + pgpValue + "\nmessage\n"),
		[]byte(treeLine + committerLine + "gpgsig -----BEGIN SIGNED MESSAGE-----\n\nmessage\n"),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		signer, err := keys.commit(raw)
		checkVerdict(t, signer, err)
	})
}

// FuzzTag does to Tag what FuzzCommit does to Commit.
func FuzzTag(f *testing.F) {
	k := kit(f)
	keys := trusted(f)
	r := newRepo(f)
	r.commit("Release", nil)
	for _, seed := range [][]byte{
		r.tag("v1", "Unsigned", nil),
		r.tag("v2", "Signed by Alice", k.alice),
		r.tag("v3", "Signed by ci", k.ci),
		{},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		signer, err := keys.tag(raw)
		checkVerdict(t, signer, err)
	})
}

// checkVerdict fails unless an acceptance names a signer and a refusal is an
// *Error with no signer and a message that prints.
func checkVerdict(t *testing.T, signer Signer, err error) {
	t.Helper()
	if err == nil {
		if signer.Method == "" || signer.Key == "" {
			t.Fatalf("accepted with an empty signer %#v", signer)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("refused with %T %v, want an *Error", err, err)
	}
	if signer != (Signer{}) {
		t.Fatalf("refused, yet names signer %#v", signer)
	}
	for _, c := range err.Error() {
		if !unicode.IsPrint(c) {
			t.Fatalf("message %q holds a character that does not print", err)
		}
	}
}
