package cosign

import (
	"context"
	"crypto/elliptic"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

func TestVerifySimpleSigning(t *testing.T) {
	ctx := context.Background()
	ci := newECDSAKey(t, elliptic.P256())
	release := newEd25519Key(t)
	stranger := newECDSAKey(t, elliptic.P256())
	keys := mustKeys(t, map[string]testKey{"ci.pub": ci, "release.pub": release})

	t.Run("accepts a signature by a trusted key and names the key", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.signatures(t, subject, signed(t, ci, simpleSigning(testRepo, subject.Digest)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		if err != nil {
			t.Fatal(err)
		}
		want := Signer{Key: "ci.pub", Fingerprint: keys.keys[0].signer.Fingerprint}
		if diff := cmp.Diff(want, signer); diff != "" {
			t.Errorf("signer (-want +got):\n%s", diff)
		}
	})
	t.Run("accepts an ed25519 signature among others, the first that verifies", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		payload := simpleSigning(testRepo, subject.Digest)
		r.signatures(t, subject, signed(t, stranger, payload), signed(t, release, payload))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		if err != nil || signer.Key != "release.pub" {
			t.Fatalf("Verify = %v, %v; want release.pub", signer, err)
		}
	})
	t.Run("accepts a payload with annotations and a claimed identity with a tag", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		payload := []byte(`{"critical":{"identity":{"docker-reference":"REGISTRY.example.com/team/app:v1"},"image":{"docker-manifest-digest":"` +
			string(subject.Digest) + `"},"type":"cosign container image signature"},"optional":{"commit":"abc"}}`)
		r.signatures(t, subject, signed(t, ci, payload))
		if _, err := Verify(ctx, r, keys, testRepo, subject); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("refuses an artifact nothing signs as NotSigned", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		e := wantRefusal(t, signer, err, NotSigned)
		if !strings.Contains(err.Error(), string(subject.Digest)) || len(e.Causes) != 0 {
			t.Errorf("message %q does not name the artifact, or has causes", err)
		}
	})
	t.Run("refuses a signature by another key as UntrustedSignature", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.signatures(t, subject, signed(t, stranger, simpleSigning(testRepo, subject.Digest)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, UntrustedSignature)
		if !strings.Contains(err.Error(), "signature layer 0 of "+SignatureTag(subject)) {
			t.Errorf("message %q does not name the layer", err)
		}
	})
	t.Run("refuses a tampered payload as UntrustedSignature", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		layer := signed(t, ci, simpleSigning(testRepo, subject.Digest))
		layer.payload = append(layer.payload, ' ')
		r.signatures(t, subject, layer)
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, UntrustedSignature)
	})
	t.Run("refuses a trusted signature whose payload names another digest", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		other := r.artifact("other")
		r.signatures(t, subject, signed(t, ci, simpleSigning(testRepo, other.Digest)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
		if !strings.Contains(err.Error(), "signed by cosign key ci.pub") || !strings.Contains(err.Error(), "names another digest") {
			t.Errorf("message %q", err)
		}
		if strings.Contains(err.Error(), string(other.Digest)) {
			t.Errorf("message %q quotes the payload's digest", err)
		}
	})
	t.Run("accepts a trusted signature copied to a mirror, whatever repository its payload names, as cosign does", func(t *testing.T) {
		for _, claimed := range []string{"registry.example.com/team/other", "mirror.example.com/team/app", ""} {
			r := newRegistry()
			subject := r.artifact("app")
			r.signatures(t, subject, signed(t, ci, simpleSigning(claimed, subject.Digest)))
			if signer, err := Verify(ctx, r, keys, testRepo, subject); err != nil || signer.Key != "ci.pub" {
				t.Errorf("payload naming %q: %v, %v; want signed by ci.pub (the digest names the content)", claimed, signer, err)
			}
		}
	})
	t.Run("refuses a payload of another type", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		payload := []byte(strings.Replace(string(simpleSigning(testRepo, subject.Digest)), "cosign container image signature", "atomic container signature", 1))
		r.signatures(t, subject, signed(t, ci, payload))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
	})
	t.Run("refuses a signature layer over the bound without reading it", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		payload := simpleSigning(testRepo, subject.Digest)
		payload = append(payload, strings.Repeat(" ", MaxPayload)...)
		r.signatures(t, subject, signed(t, ci, payload))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
		if r.blobReads != 0 {
			t.Errorf("read %d blobs, want none", r.blobReads)
		}
	})
	t.Run("refuses a layer without a signature, or not in base64", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.signatures(t, subject, sigLayer{payload: simpleSigning(testRepo, subject.Digest)})
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
		if r.blobReads != 0 {
			t.Errorf("read %d blobs for a layer with no signature, want none", r.blobReads)
		}
	})
	t.Run("refuses a blob that does not match its digest", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		payload := simpleSigning(testRepo, subject.Digest)
		r.signatures(t, subject, signed(t, ci, payload))
		r.blobs[digest.FromBytes(payload)] = []byte(strings.ToUpper(string(payload)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
	})
	t.Run("refuses a signature manifest that is not JSON", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.tags[SignatureTag(subject)] = []byte("\x1b]0;pwned\x07")
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
		if strings.Contains(err.Error(), "pwned") {
			t.Errorf("message %q quotes the manifest", err)
		}
	})
	t.Run("reads at most MaxSignatures layers", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		var layers []sigLayer
		for range MaxSignatures {
			layers = append(layers, signed(t, stranger, simpleSigning(testRepo, subject.Digest)))
		}
		layers = append(layers, signed(t, ci, simpleSigning(testRepo, subject.Digest)))
		r.signatures(t, subject, layers...)
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, UntrustedSignature)
		if r.blobReads != MaxSignatures || !strings.Contains(err.Error(), "not read") {
			t.Errorf("read %d blobs, want %d; message %q", r.blobReads, MaxSignatures, err)
		}
	})
	t.Run("returns the Fetcher's errors, not a refusal", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.failWith = errors.New("registry unavailable")
		_, err := Verify(ctx, r, keys, testRepo, subject)
		if err == nil || ReasonOf(err) != "" || !errors.Is(err, r.failWith) {
			t.Fatalf("Verify = %v, want the Fetcher's error unclassed", err)
		}
	})
}

func TestVerifyArguments(t *testing.T) {
	ctx := context.Background()
	keys := mustKeys(t, map[string]testKey{"cosign.pub": newECDSAKey(t, elliptic.P256())})
	r := newRegistry()
	subject := r.artifact("app")
	tests := []struct {
		name    string
		keys    *Keys
		repo    string
		subject ocispec.Descriptor
	}{
		{name: "no keys", repo: testRepo, subject: subject},
		{name: "no repository", keys: keys, subject: subject},
		{name: "a repository with a digest", keys: keys, repo: testRepo + "@" + string(subject.Digest), subject: subject},
		{name: "a malformed digest", keys: keys, repo: testRepo, subject: ocispec.Descriptor{Digest: "sha256:abc"}},
		{name: "a sha512 digest", keys: keys, repo: testRepo, subject: ocispec.Descriptor{Digest: digest.SHA512.FromString("x")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Verify(ctx, r, tt.keys, tt.repo, tt.subject)
			if err == nil || ReasonOf(err) != "" {
				t.Errorf("Verify = %v, want an argument error", err)
			}
		})
	}
}

func TestSignatureTag(t *testing.T) {
	subject := ocispec.Descriptor{Digest: "sha256:97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36"}
	// The example of cosign's SIGNATURE_SPEC.md.
	if got, want := SignatureTag(subject), "sha256-97fc222cee7991b5b061d4d4afdb5f3428fcb0c9054e1690313786befa1e4e36.sig"; got != want {
		t.Errorf("SignatureTag = %q, want %q", got, want)
	}
}
