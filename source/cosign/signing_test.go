package cosign_test

import (
	"context"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/source/cosign"
	"tether.dev/tether/test/signing"
)

// TestSigningHelper checks that what test/signing gives the integration tests
// to push is a signature Verify accepts, read back as a registry serves it.
func TestSigningHelper(t *testing.T) {
	key := signing.NewCosignKey(t)
	keys, err := cosign.ParseKeys(map[string][]byte{"cosign.pub": key.Public})
	if err != nil {
		t.Fatal(err)
	}
	manifest := []byte(`{"schemaVersion":2}`)
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(manifest), Size: int64(len(manifest))}
	sig := key.SignatureManifest(t, "localhost:5000/app", subject)
	r := pushed{tag: sig.Tag, manifest: sig.Manifest, blobs: map[digest.Digest][]byte{
		sig.ConfigDescriptor.Digest: sig.Config, sig.PayloadDescriptor.Digest: sig.Payload,
	}}
	signer, err := cosign.Verify(context.Background(), r, keys, "localhost:5000/app", subject)
	if err != nil || signer.Key != "cosign.pub" {
		t.Fatalf("Verify = %v, %v; want cosign.pub", signer, err)
	}
}

// pushed is a registry holding one pushed signature.
type pushed struct {
	tag      string
	manifest []byte
	blobs    map[digest.Digest][]byte
}

func (p pushed) Manifest(_ context.Context, reference string) ([]byte, bool, error) {
	return p.manifest, reference == p.tag, nil
}

func (p pushed) Blob(_ context.Context, desc ocispec.Descriptor, _ int64) ([]byte, error) {
	return p.blobs[desc.Digest], nil
}

func (p pushed) Referrers(context.Context, ocispec.Descriptor, string) ([]ocispec.Descriptor, error) {
	return nil, nil
}
