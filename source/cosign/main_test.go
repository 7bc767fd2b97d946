package cosign

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// The tests sign as cosign does, from its specs (SIGNATURE_SPEC.md,
// BUNDLE_SPEC.md), with keys made here and crypto/ecdsa and crypto/ed25519
// directly: nothing of this package or of Sigstore's library makes what is
// verified.

// testRepo is the repository every test artifact lives in.
const testRepo = "registry.example.com/team/app"

// testKey is a signing key and its public half as cosign.pub holds it.
type testKey struct {
	signer crypto.Signer
	public []byte // PEM "PUBLIC KEY"
}

func newECDSAKey(t testing.TB, curve elliptic.Curve) testKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{signer: priv, public: publicPEM(t, priv.Public())}
}

func newEd25519Key(t testing.TB) testKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{signer: priv, public: publicPEM(t, priv.Public())}
}

func publicPEM(t testing.TB, pub crypto.PublicKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// sign signs message as cosign does with the key: ECDSA over its SHA-256 in
// ASN.1 form, ed25519 over the message itself.
func (k testKey) sign(t testing.TB, message []byte) []byte {
	t.Helper()
	var sig []byte
	var err error
	switch s := k.signer.(type) {
	case *ecdsa.PrivateKey:
		sum := sha256.Sum256(message)
		sig, err = ecdsa.SignASN1(rand.Reader, s, sum[:])
	case ed25519.PrivateKey:
		sig = ed25519.Sign(s, message)
	default:
		err = fmt.Errorf("no signing with %T", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

// simpleSigning is the payload cosign v2 signs for an image of repo at d.
func simpleSigning(repo string, d digest.Digest) []byte {
	return []byte(`{"critical":{"identity":{"docker-reference":"` + repo + `"},"image":{"docker-manifest-digest":"` +
		string(d) + `"},"type":"cosign container image signature"},"optional":null}`)
}

// errBlobUnknown is the fake registry's answer for a blob it does not hold.
var errBlobUnknown = errors.New("blob unknown to the registry")

// registry is a fake Fetcher: one repository's tagged manifests, manifests
// by digest, blobs and referrers. It counts blob reads.
type registry struct {
	tags      map[string][]byte
	manifests map[digest.Digest][]byte
	blobs     map[digest.Digest][]byte
	referrers []ocispec.Descriptor
	blobReads int
	failWith  error // every read fails with it when set
}

var _ Fetcher = (*registry)(nil)

func newRegistry() *registry {
	return &registry{tags: map[string][]byte{}, manifests: map[digest.Digest][]byte{}, blobs: map[digest.Digest][]byte{}}
}

func (r *registry) Manifest(_ context.Context, reference string) ([]byte, bool, error) {
	if r.failWith != nil {
		return nil, false, r.failWith
	}
	if raw, ok := r.tags[reference]; ok {
		return raw, true, nil
	}
	raw, ok := r.manifests[digest.Digest(reference)]
	return raw, ok, nil
}

func (r *registry) Blob(_ context.Context, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	r.blobReads++
	if r.failWith != nil {
		return nil, r.failWith
	}
	raw, ok := r.blobs[desc.Digest]
	if !ok {
		return nil, fmt.Errorf("%w: %s", errBlobUnknown, desc.Digest)
	}
	if int64(len(raw)) > limit {
		return nil, errors.New("over the limit")
	}
	return raw, nil
}

func (r *registry) Referrers(_ context.Context, _ ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	if r.failWith != nil {
		return nil, r.failWith
	}
	var out []ocispec.Descriptor
	for _, d := range r.referrers {
		if artifactType == "" || d.ArtifactType == artifactType {
			out = append(out, d)
		}
	}
	return out, nil
}

// push stores a blob and returns its descriptor.
func (r *registry) push(mediaType string, raw []byte) ocispec.Descriptor {
	d := digest.FromBytes(raw)
	r.blobs[d] = raw
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(raw))}
}

// artifact pushes an artifact's manifest and returns its descriptor.
func (r *registry) artifact(name string) ocispec.Descriptor {
	raw := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","annotations":{"name":"` + name + `"}}`)
	d := digest.FromBytes(raw)
	r.manifests[d] = raw
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: d, Size: int64(len(raw))}
}

// sigLayer is one layer of a signature manifest.
type sigLayer struct {
	payload   []byte
	signature []byte // nil: no annotation
}

// signed is a layer signing payload with k.
func signed(t testing.TB, k testKey, payload []byte) sigLayer {
	return sigLayer{payload: payload, signature: k.sign(t, payload)}
}

// signatures pushes the manifest cosign v2 tags SignatureTag(subject), one
// layer per given layer.
func (r *registry) signatures(t testing.TB, subject ocispec.Descriptor, layers ...sigLayer) {
	t.Helper()
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest}
	m.SchemaVersion = 2
	m.Config = r.push(ocispec.MediaTypeImageConfig, []byte(`{"rootfs":{"type":"layers"}}`))
	for _, l := range layers {
		desc := r.push(SimpleSigningMediaType, l.payload)
		if l.signature != nil {
			desc.Annotations = map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(l.signature)}
		}
		m.Layers = append(m.Layers, desc)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	r.tags[SignatureTag(subject)] = raw
}

// mustKeys parses the public keys of named test keys.
func mustKeys(t testing.TB, named map[string]testKey) *Keys {
	t.Helper()
	data := map[string][]byte{}
	for name, k := range named {
		data[name] = k.public
	}
	keys, err := ParseKeys(data)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// wantRefusal fails unless err is an *Error of reason whose message holds
// none of forbidden.
func wantRefusal(t *testing.T, signer Signer, err error, reason Reason) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Verify = %v, %v; want an *Error %s", signer, err, reason)
	}
	if e.Reason != reason {
		t.Fatalf("refused with %s (%v), want %s", e.Reason, err, reason)
	}
	if signer != (Signer{}) {
		t.Errorf("refused, yet names signer %v", signer)
	}
	return e
}
