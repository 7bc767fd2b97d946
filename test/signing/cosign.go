package signing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// CosignKey is a cosign signing key as `cosign generate-key-pair` makes by
// default (ECDSA P-256), made in process: the real cosign is not part of
// `make test`. It signs OCI artifacts as cosign v2 does (cosign's
// specs/SIGNATURE_SPEC.md), so that a test can push a signature to a real
// registry with its own client.
type CosignKey struct {
	// Public is the public key as cosign.pub holds it (PEM "PUBLIC KEY"),
	// as a Secret of trusted keys holds it.
	Public  []byte
	private *ecdsa.PrivateKey
}

// NewCosignKey makes a key.
func NewCosignKey(tb testing.TB) *CosignKey {
	tb.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		tb.Fatal(err)
	}
	return &CosignKey{Public: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), private: priv}
}

// CosignSignature is what `cosign sign --key` pushes for an artifact, in the
// artifact's repository: push Config and Payload as blobs, then Manifest
// under Tag (with media type ocispec.MediaTypeImageManifest).
type CosignSignature struct {
	// Tag is "sha256-<hex>.sig", the artifact's digest as a tag.
	Tag string
	// Config is the signature image's config blob, described by
	// ConfigDescriptor.
	Config           []byte
	ConfigDescriptor ocispec.Descriptor
	// Payload is the signed simple-signing JSON, the one layer, described by
	// PayloadDescriptor (which carries the signature annotation).
	Payload           []byte
	PayloadDescriptor ocispec.Descriptor
	// Manifest is the OCI image manifest to push under Tag.
	Manifest []byte
}

// SignatureManifest signs subject (the artifact's manifest descriptor) in
// repo ("host/path", as the artifact's reference names it; cosign writes it
// as the payload's docker-reference) as cosign v2 does.
func (k *CosignKey) SignatureManifest(tb testing.TB, repo string, subject ocispec.Descriptor) CosignSignature {
	tb.Helper()
	payload := k.Payload(repo, subject)
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, k.private, sum[:])
	if err != nil {
		tb.Fatal(err)
	}
	s := CosignSignature{
		Tag:     strings.Replace(string(subject.Digest), ":", "-", 1) + ".sig",
		Payload: payload,
		PayloadDescriptor: ocispec.Descriptor{
			MediaType:   "application/vnd.dev.cosign.simplesigning.v1+json",
			Digest:      digest.FromBytes(payload),
			Size:        int64(len(payload)),
			Annotations: map[string]string{"dev.cosignproject.cosign/signature": base64.StdEncoding.EncodeToString(sig)},
		},
	}
	// The config cosign writes: an image config whose one layer is the
	// payload.
	s.Config = mustMarshal(tb, map[string]any{
		"architecture": "", "os": "", "created": "0001-01-01T00:00:00Z", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{string(s.PayloadDescriptor.Digest)}},
	})
	s.ConfigDescriptor = ocispec.Descriptor{MediaType: ocispec.MediaTypeImageConfig, Digest: digest.FromBytes(s.Config), Size: int64(len(s.Config))}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: s.ConfigDescriptor, Layers: []ocispec.Descriptor{s.PayloadDescriptor}}
	m.SchemaVersion = 2
	s.Manifest = mustMarshal(tb, m)
	return s
}

// Payload is the simple-signing payload cosign v2 signs for subject in repo.
func (k *CosignKey) Payload(repo string, subject ocispec.Descriptor) []byte {
	return []byte(`{"critical":{"identity":{"docker-reference":"` + repo + `"},"image":{"docker-manifest-digest":"` +
		string(subject.Digest) + `"},"type":"cosign container image signature"},"optional":null}`)
}

func mustMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}
