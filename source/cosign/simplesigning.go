package cosign

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// What cosign v2 writes (cosign's specs/SIGNATURE_SPEC.md): a manifest tagged
// SignatureTag(subject), whose layers are simple-signing payloads, each with
// its base64 signature in an annotation.
const (
	// SimpleSigningMediaType is the media type of a signature layer.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation holds a layer's base64 signature over its blob.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// SimpleSigningType is the payload's critical.type.
	SimpleSigningType = "cosign container image signature"
)

// signatureManifest is what Verify reads of the manifest tagged
// SignatureTag: its layers.
type signatureManifest struct {
	Layers []ocispec.Descriptor `json:"layers"`
}

// simpleSigningPayload is the signed "simple signing" JSON of
// containers-signature(5) as cosign writes it. optional (annotations) is not
// read: Verify asks for none.
type simpleSigningPayload struct {
	Critical struct {
		Identity struct {
			DockerReference string `json:"docker-reference"`
		} `json:"identity"`
		Image struct {
			DockerManifestDigest string `json:"docker-manifest-digest"`
		} `json:"image"`
		Type string `json:"type"`
	} `json:"critical"`
}

// simpleSigning verifies the layers of the signature manifest, if there is
// one, in order; ok when one verifies.
func (v *verification) simpleSigning(ctx context.Context) (Signer, bool, error) {
	tag := SignatureTag(v.subject)
	raw, found, err := v.fetcher.Manifest(ctx, tag)
	if err != nil {
		return Signer{}, false, fmt.Errorf("reading signature manifest %s: %w", tag, err)
	}
	if !found {
		return Signer{}, false, nil
	}
	layers, err := parseSignatureManifest(raw)
	if err != nil {
		v.refuse("signature manifest "+tag, InvalidSignature, err)
		return Signer{}, false, nil
	}
	for i, layer := range layers {
		if layer.MediaType != SimpleSigningMediaType {
			continue
		}
		if !v.take() {
			break
		}
		where := fmt.Sprintf("signature layer %d of %s", i, tag)
		signer, ok, err := v.simpleSigningLayer(ctx, where, layer)
		if err != nil || ok {
			return signer, ok, err
		}
	}
	return Signer{}, false, nil
}

// parseSignatureManifest reads the layers of a signature manifest.
func parseSignatureManifest(raw []byte) ([]ocispec.Descriptor, error) {
	var m signatureManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errors.New("is not an OCI image manifest")
	}
	return m.Layers, nil
}

// simpleSigningLayer verifies one layer: its signature first (a cheap
// check of the annotation, then the payload read and verified), then what
// the trusted payload claims.
func (v *verification) simpleSigningLayer(ctx context.Context, where string, layer ocispec.Descriptor) (Signer, bool, error) {
	sig, err := layerSignature(layer)
	if err != nil {
		v.refuse(where, InvalidSignature, err)
		return Signer{}, false, nil
	}
	payload, ok, err := v.blob(ctx, where, layer, MaxPayload)
	if err != nil || !ok {
		return Signer{}, false, err
	}
	signer, ok := v.keys.verify(sig, payload)
	if !ok {
		v.refuse(where, UntrustedSignature, errors.New("not signed by a trusted key, or not over this payload"))
		return Signer{}, false, nil
	}
	if err := checkSimpleSigning(payload, v.subject.Digest, v.repo); err != nil {
		v.refuse(where, InvalidSignature, fmt.Errorf("signed by %s, but its payload %w", signer, err))
		return Signer{}, false, nil
	}
	return signer, true, nil
}

// layerSignature decodes a layer's signature annotation.
func layerSignature(layer ocispec.Descriptor) ([]byte, error) {
	encoded, ok := layer.Annotations[SignatureAnnotation]
	if !ok || encoded == "" {
		return nil, errors.New("carries no signature annotation " + SignatureAnnotation)
	}
	if len(encoded) > base64.StdEncoding.EncodedLen(MaxPayload) {
		return nil, errors.New("its signature annotation is over the bound")
	}
	sig, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil, errors.New("its signature annotation is not base64")
	}
	return sig, nil
}

// checkSimpleSigning checks what a verified payload claims: cosign's type and
// subject's digest. Its docker-reference is not compared with repo, as
// cosign does not (its SIGNATURE_SPEC says the field is ignored): the digest
// names the content whole, and a signature copied with its artifact to a
// mirror (cosign copy) must verify there. Its errors complete "its payload …"
// and quote nothing of the payload.
func checkSimpleSigning(payload []byte, subject digest.Digest, _ repository) error {
	var p simpleSigningPayload
	if err := json.Unmarshal(payload, &p); err != nil {
		return errors.New("is not a simple-signing JSON payload")
	}
	if p.Critical.Type != SimpleSigningType {
		return errors.New("is not of type " + SimpleSigningType)
	}
	if p.Critical.Image.DockerManifestDigest != string(subject) {
		return errors.New("names another digest than " + string(subject))
	}
	return nil
}
