package cosign

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/json"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// statement is the in-toto statement cosign v3 signs for an image at d.
func statement(d digest.Digest) []byte {
	return []byte(`{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"` + d.Encoded() +
		`"}}],"predicateType":"https://sigstore.dev/cosign/sign/v1","predicate":{}}`)
}

// dsseBundle is a bundle of a DSSE envelope of payload signed by k, as
// protojson writes it (bytes in standard base64), with a tlog entry Verify
// must not need.
func dsseBundle(t testing.TB, k testKey, payloadType string, payload []byte) []byte {
	t.Helper()
	sig := k.sign(t, preAuthEncoding(payloadType, payload))
	return mustJSON(t, map[string]any{
		"mediaType": BundleMediaType,
		"verificationMaterial": map[string]any{
			"publicKey":   map[string]any{"hint": "c2lnbmVy"},
			"tlogEntries": []any{map[string]any{"logIndex": "1", "kindVersion": map[string]any{"kind": "dsse", "version": "0.0.1"}}},
		},
		"dsseEnvelope": map[string]any{"payload": payload, "payloadType": payloadType, "signatures": []any{map[string]any{"sig": sig}}},
	})
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// attach pushes bundle as cosign v3 does: a manifest of artifact type
// BundleMediaType whose subject is subject, listed among its referrers.
func (r *registry) attach(t testing.TB, subject ocispec.Descriptor, bundle []byte) ocispec.Descriptor {
	t.Helper()
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: BundleMediaType, Subject: &subject}
	m.SchemaVersion = 2
	m.Config = r.push(ocispec.MediaTypeEmptyJSON, []byte("{}"))
	m.Layers = []ocispec.Descriptor{r.push(BundleMediaType, bundle)}
	m.Annotations = map[string]string{"dev.sigstore.bundle.content": "dsse-envelope"}
	raw := mustJSON(t, m)
	desc := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: BundleMediaType, Digest: digest.FromBytes(raw), Size: int64(len(raw))}
	r.manifests[desc.Digest] = raw
	r.referrers = append(r.referrers, desc)
	return desc
}

func TestVerifyBundles(t *testing.T) {
	ctx := context.Background()
	ci := newECDSAKey(t, elliptic.P256())
	release := newEd25519Key(t)
	p384 := newECDSAKey(t, elliptic.P384())
	stranger := newECDSAKey(t, elliptic.P256())
	keys := mustKeys(t, map[string]testKey{"ci.pub": ci, "release.pub": release, "p384.pub": p384})

	t.Run("accepts a DSSE statement naming the artifact, signed by a trusted key", func(t *testing.T) {
		for name, k := range map[string]testKey{"ci.pub": ci, "release.pub": release} {
			r := newRegistry()
			subject := r.artifact("app")
			r.attach(t, subject, dsseBundle(t, k, InTotoPayloadType, statement(subject.Digest)))
			signer, err := Verify(ctx, r, keys, testRepo, subject)
			if err != nil || signer.Key != name {
				t.Errorf("Verify = %v, %v; want %s", signer, err, name)
			}
		}
	})
	t.Run("accepts a P-384 key's DSSE signature hashed with SHA-384, as cosign v3 signs", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		payload := statement(subject.Digest)
		pae := preAuthEncoding(InTotoPayloadType, payload)
		sum := sha512.Sum384(pae)
		sig, err := ecdsa.SignASN1(rand.Reader, p384.signer.(*ecdsa.PrivateKey), sum[:])
		if err != nil {
			t.Fatal(err)
		}
		bundle := mustJSON(t, map[string]any{"mediaType": BundleMediaType, "dsseEnvelope": map[string]any{
			"payload": payload, "payloadType": InTotoPayloadType, "signatures": []any{map[string]any{"sig": sig}}}})
		r.attach(t, subject, bundle)
		if signer, err := Verify(ctx, r, keys, testRepo, subject); err != nil || signer.Key != "p384.pub" {
			t.Errorf("Verify = %v, %v; want p384.pub", signer, err)
		}
	})
	t.Run("accepts a message signature over the manifest", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.attach(t, subject, messageBundleOf(t, ci, r.manifests[subject.Digest]))
		if signer, err := Verify(ctx, r, keys, testRepo, subject); err != nil || signer.Key != "ci.pub" {
			t.Errorf("Verify = %v, %v; want ci.pub", signer, err)
		}
	})
	t.Run("looks at bundles when the v2 signatures do not verify", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.signatures(t, subject, signed(t, stranger, simpleSigning(testRepo, subject.Digest)))
		r.attach(t, subject, dsseBundle(t, ci, InTotoPayloadType, statement(subject.Digest)))
		if signer, err := Verify(ctx, r, keys, testRepo, subject); err != nil || signer.Key != "ci.pub" {
			t.Errorf("Verify = %v, %v; want ci.pub", signer, err)
		}
	})
	t.Run("finds a bundle listed under the empty type, as cosign's fallback index lists it, and passes over other referrers", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		// An SBOM attached by the same fallback, listed under the same type.
		sbom := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: "application/spdx+json", Subject: &subject}
		sbom.SchemaVersion = 2
		sbom.Config = r.push(ocispec.MediaTypeEmptyJSON, []byte("{}"))
		raw := mustJSON(t, sbom)
		r.manifests[digest.FromBytes(raw)] = raw
		r.referrers = append(r.referrers, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ocispec.MediaTypeEmptyJSON, Digest: digest.FromBytes(raw), Size: int64(len(raw))})
		if _, err := Verify(ctx, r, keys, testRepo, subject); ReasonOf(err) != NotSigned {
			t.Fatalf("only an SBOM among the referrers: %v; want NotSigned (an SBOM is no invalid signature)", err)
		}
		desc := r.attach(t, subject, dsseBundle(t, ci, InTotoPayloadType, statement(subject.Digest)))
		r.referrers[len(r.referrers)-1].ArtifactType = ocispec.MediaTypeEmptyJSON
		if signer, err := Verify(ctx, r, keys, testRepo, subject); err != nil || signer.Key != "ci.pub" {
			t.Fatalf("a bundle %s listed under %s: %v, %v; want signed by ci.pub", desc.Digest, ocispec.MediaTypeEmptyJSON, signer, err)
		}
	})
	t.Run("refuses a bundle by another key as UntrustedSignature", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		bundle := r.attach(t, subject, dsseBundle(t, stranger, InTotoPayloadType, statement(subject.Digest)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, UntrustedSignature)
		if !strings.Contains(err.Error(), "bundle "+string(bundle.Digest)) {
			t.Errorf("message %q does not name the bundle", err)
		}
	})
	t.Run("refuses a trusted statement naming another digest", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		other := r.artifact("other")
		r.attach(t, subject, dsseBundle(t, ci, InTotoPayloadType, statement(other.Digest)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
	})
	t.Run("refuses a message signature over another manifest", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		other := r.artifact("other")
		r.attach(t, subject, messageBundleOf(t, ci, r.manifests[other.Digest]))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
	})
	t.Run("refuses a tampered statement", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		var b map[string]any
		if err := json.Unmarshal(dsseBundle(t, ci, InTotoPayloadType, statement(subject.Digest)), &b); err != nil {
			t.Fatal(err)
		}
		b["dsseEnvelope"].(map[string]any)["payload"] = append(statement(subject.Digest), ' ')
		r.attach(t, subject, mustJSON(t, b))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, UntrustedSignature)
	})
	t.Run("refuses a bundle whose manifest names another subject", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		other := r.artifact("other")
		desc := r.attach(t, other, dsseBundle(t, ci, InTotoPayloadType, statement(subject.Digest)))
		r.referrers = []ocispec.Descriptor{desc} // a registry that lists it under subject anyway
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
	})
	t.Run("refuses a DSSE envelope of another payload type", func(t *testing.T) {
		r := newRegistry()
		subject := r.artifact("app")
		r.attach(t, subject, dsseBundle(t, ci, "text/plain", statement(subject.Digest)))
		signer, err := Verify(ctx, r, keys, testRepo, subject)
		_ = wantRefusal(t, signer, err, InvalidSignature)
	})
}

// messageBundleOf is a bundle of a message signature by k over manifest.
func messageBundleOf(t testing.TB, k testKey, manifest []byte) []byte {
	t.Helper()
	sum := sha256.Sum256(manifest)
	return mustJSON(t, map[string]any{
		"mediaType": BundleMediaType,
		"messageSignature": map[string]any{
			"messageDigest": map[string]any{"algorithm": "SHA2_256", "digest": sum[:]},
			"signature":     k.sign(t, manifest),
		},
	})
}

func TestPreAuthEncoding(t *testing.T) {
	// The example of the DSSE specification (protocol.md).
	got := string(preAuthEncoding("http://example.com/HelloWorld", []byte("hello world")))
	if want := "DSSEv1 29 http://example.com/HelloWorld 11 hello world"; got != want {
		t.Errorf("PAE = %q, want %q", got, want)
	}
}
