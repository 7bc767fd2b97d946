package cosign

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// What cosign v3 writes (cosign's specs/BUNDLE_SPEC.md): a manifest whose
// subject is the artifact, of artifact type BundleMediaType, whose one layer
// is a Sigstore bundle; cosign v3 signs images with a DSSE envelope of an
// in-toto statement whose subject is the artifact's digest.
const (
	// BundleMediaType is the artifact type of a bundle's manifest and the
	// media type of its layer: Sigstore bundles of version 0.3.
	BundleMediaType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// bundleMediaTypeAlt is how protobuf-specs also spells version 0.3.
	bundleMediaTypeAlt = "application/vnd.dev.sigstore.bundle+json;version=0.3"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
)

// The in-toto statement types read.
var statementTypes = []string{"https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1"}

// bundleManifest is what Verify reads of a referrer's manifest.
type bundleManifest struct {
	ArtifactType string               `json:"artifactType"`
	Subject      *ocispec.Descriptor  `json:"subject"`
	Layers       []ocispec.Descriptor `json:"layers"`
}

// sigstoreBundle is what Verify reads of a bundle (protobuf-specs'
// Bundle in its JSON form): the signed content, one of two kinds. The
// verification material is not read: the trusted keys are the only material,
// and transparency log entries and timestamps are not checked.
type sigstoreBundle struct {
	MediaType        string            `json:"mediaType"`
	MessageSignature *messageSignature `json:"messageSignature"`
	DSSEEnvelope     *dsseEnvelope     `json:"dsseEnvelope"`
}

// messageSignature is a signature over the artifact's bytes, known by their
// digest.
type messageSignature struct {
	MessageDigest struct {
		Algorithm string `json:"algorithm"`
		Digest    []byte `json:"digest"`
	} `json:"messageDigest"`
	Signature []byte `json:"signature"`
}

// dsseEnvelope is a DSSE envelope: signatures over the pre-authentication
// encoding of its payload.
type dsseEnvelope struct {
	Payload     []byte `json:"payload"`
	PayloadType string `json:"payloadType"`
	Signatures  []struct {
		Sig []byte `json:"sig"`
	} `json:"signatures"`
}

// inTotoStatement is what Verify reads of an in-toto statement. Any predicate
// is accepted, as cosign v3's verify does: a trusted key's attestation about
// the artifact is its signature.
type inTotoStatement struct {
	Type    string `json:"_type"`
	Subject []struct {
		Digest map[string]string `json:"digest"`
	} `json:"subject"`
}

// bundles verifies the Sigstore bundles among the subject's referrers, in the
// order listed; ok when one verifies.
func (v *verification) bundles(ctx context.Context) (Signer, bool, error) {
	if v.read > MaxSignatures {
		return Signer{}, false, nil
	}
	// Unfiltered: on a registry without the referrers API, cosign pushes its
	// fallback index (the tag sha256-<hex>) through go-containerregistry,
	// which lists a bundle under its config's media type (the empty
	// descriptor's) rather than its own artifact type; a filter by type
	// would never see it. Such an entry, or one with no type, is read and
	// judged by its manifest's own artifact type, as cosign's verify does.
	referrers, err := v.fetcher.Referrers(ctx, v.subject, "")
	if err != nil {
		return Signer{}, false, fmt.Errorf("listing the referrers of %s: %w", v.subject.Digest, err)
	}
	for _, desc := range referrers {
		typed := desc.ArtifactType == BundleMediaType
		if !typed && desc.ArtifactType != "" && desc.ArtifactType != emptyMediaType {
			continue
		}
		if !v.take() {
			break
		}
		signer, ok, err := v.bundle(ctx, desc, typed)
		if err != nil || ok {
			return signer, ok, err
		}
	}
	return Signer{}, false, nil
}

// emptyMediaType is the OCI empty descriptor's media type, which
// go-containerregistry's fallback index lists a bundle under (bundles).
const emptyMediaType = "application/vnd.oci.empty.v1+json"

// bundle reads one referrer's manifest and its bundle, and verifies it. A
// referrer not listed as a bundle (typed false) whose manifest is no bundle
// is another kind of referrer (an SBOM, an attestation), and passed over.
func (v *verification) bundle(ctx context.Context, desc ocispec.Descriptor, typed bool) (Signer, bool, error) {
	where := "bundle " + string(desc.Digest)
	if err := desc.Digest.Validate(); err != nil || desc.Digest.Algorithm() != digest.SHA256 {
		v.refuse("a referrer", InvalidSignature, errors.New("its digest is not a sha256 digest"))
		return Signer{}, false, nil
	}
	raw, found, err := v.fetcher.Manifest(ctx, string(desc.Digest))
	if err != nil {
		return Signer{}, false, fmt.Errorf("reading %s: %w", where, err)
	}
	if !found || digest.SHA256.FromBytes(raw) != desc.Digest {
		v.refuse(where, InvalidSignature, errors.New("its manifest is missing or does not match its digest"))
		return Signer{}, false, nil
	}
	if !typed && !isBundleManifest(raw) {
		return Signer{}, false, nil
	}
	layer, err := bundleLayer(raw, v.subject.Digest)
	if err != nil {
		v.refuse(where, InvalidSignature, err)
		return Signer{}, false, nil
	}
	blob, ok, err := v.blob(ctx, where, layer, MaxBundle)
	if err != nil || !ok {
		return Signer{}, false, err
	}
	signer, reason, err := verifyBundle(blob, v.keys, v.subject.Digest)
	if err != nil {
		v.refuse(where, reason, err)
		return Signer{}, false, nil
	}
	return signer, true, nil
}

// bundleLayer reads a referrer's manifest: it must be a bundle's, refer to
// subject, and hold the bundle as a layer.
func bundleLayer(raw []byte, subject digest.Digest) (ocispec.Descriptor, error) {
	var m bundleManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return ocispec.Descriptor{}, errors.New("its manifest is not an OCI image manifest")
	}
	if m.ArtifactType != BundleMediaType {
		return ocispec.Descriptor{}, errors.New("its manifest is not of artifact type " + BundleMediaType)
	}
	if m.Subject == nil || m.Subject.Digest != subject {
		return ocispec.Descriptor{}, errors.New("its manifest's subject is not " + string(subject))
	}
	for _, l := range m.Layers {
		if isBundleMediaType(l.MediaType) {
			return l, nil
		}
	}
	return ocispec.Descriptor{}, errors.New("its manifest has no layer of media type " + BundleMediaType)
}

func isBundleMediaType(t string) bool { return t == BundleMediaType || t == bundleMediaTypeAlt }

// isBundleManifest reports whether raw is a manifest of the bundle artifact
// type.
func isBundleManifest(raw []byte) bool {
	var m bundleManifest
	return json.Unmarshal(raw, &m) == nil && m.ArtifactType == BundleMediaType
}

// verifyBundle verifies a bundle's signature by the trusted keys and then
// what the signed content claims. A refusal comes with its Reason, and its
// error quotes nothing of the bundle.
func verifyBundle(raw []byte, keys *Keys, subject digest.Digest) (Signer, Reason, error) {
	var b sigstoreBundle
	if err := json.Unmarshal(raw, &b); err != nil {
		return Signer{}, InvalidSignature, errors.New("is not a Sigstore bundle in JSON")
	}
	if !isBundleMediaType(b.MediaType) {
		return Signer{}, InvalidSignature, errors.New("is not a Sigstore bundle of version 0.3")
	}
	switch {
	case b.MessageSignature != nil && b.DSSEEnvelope == nil:
		return verifyMessageSignature(b.MessageSignature, keys, subject)
	case b.DSSEEnvelope != nil && b.MessageSignature == nil:
		return verifyDSSE(b.DSSEEnvelope, keys, subject)
	default:
		return Signer{}, InvalidSignature, errors.New("holds neither a message signature nor a DSSE envelope, or both")
	}
}

// verifyMessageSignature verifies a signature over the artifact's manifest,
// known by its SHA-256 digest, which must be subject's.
func verifyMessageSignature(m *messageSignature, keys *Keys, subject digest.Digest) (Signer, Reason, error) {
	want, err := hex.DecodeString(subject.Encoded())
	if err != nil {
		return Signer{}, InvalidSignature, errors.New("subject digest is not hex")
	}
	if m.MessageDigest.Algorithm != "SHA2_256" || !bytes.Equal(m.MessageDigest.Digest, want) {
		return Signer{}, InvalidSignature, errors.New("its message signature is over another digest than " + string(subject))
	}
	signer, ok := keys.verifyDigest(m.Signature, want)
	if !ok {
		return Signer{}, UntrustedSignature, errors.New("its message signature is not by a trusted ECDSA or RSA key")
	}
	return signer, "", nil
}

// maxEnvelopeSignatures bounds the signatures of one DSSE envelope tried.
const maxEnvelopeSignatures = 4

// verifyDSSE verifies a DSSE envelope's signatures (the first
// maxEnvelopeSignatures) over its pre-authentication encoding, then that its
// in-toto statement names subject.
func verifyDSSE(env *dsseEnvelope, keys *Keys, subject digest.Digest) (Signer, Reason, error) {
	if env.PayloadType != InTotoPayloadType {
		return Signer{}, InvalidSignature, errors.New("its DSSE envelope is not of payload type " + InTotoPayloadType)
	}
	if len(env.Payload) > MaxPayload {
		return Signer{}, InvalidSignature, fmt.Errorf("its DSSE payload is %d bytes, over the bound of %d", len(env.Payload), MaxPayload)
	}
	pae := preAuthEncoding(env.PayloadType, env.Payload)
	var signer Signer
	var ok bool
	for i, s := range env.Signatures {
		if i == maxEnvelopeSignatures {
			break
		}
		if signer, ok = keys.verify(s.Sig, pae); ok {
			break
		}
	}
	if !ok {
		return Signer{}, UntrustedSignature, errors.New("its DSSE envelope is not signed by a trusted key, or not over this payload")
	}
	if err := checkStatement(env.Payload, subject); err != nil {
		return Signer{}, InvalidSignature, fmt.Errorf("signed by %s, but its in-toto statement %w", signer, err)
	}
	return signer, "", nil
}

// preAuthEncoding is DSSE's PAE: "DSSEv1" SP LEN(type) SP type SP LEN(body)
// SP body, lengths in ASCII decimal.
func preAuthEncoding(payloadType string, payload []byte) []byte {
	var b bytes.Buffer
	b.WriteString("DSSEv1 ")
	b.WriteString(strconv.Itoa(len(payloadType)))
	b.WriteByte(' ')
	b.WriteString(payloadType)
	b.WriteByte(' ')
	b.WriteString(strconv.Itoa(len(payload)))
	b.WriteByte(' ')
	b.Write(payload)
	return b.Bytes()
}

// checkStatement checks that a verified in-toto statement has subject's
// digest among its subjects. Its errors complete "its in-toto statement …".
func checkStatement(payload []byte, subject digest.Digest) error {
	var st inTotoStatement
	if err := json.Unmarshal(payload, &st); err != nil {
		return errors.New("is not JSON")
	}
	known := false
	for _, t := range statementTypes {
		known = known || st.Type == t
	}
	if !known {
		return errors.New("is not of a known in-toto statement type")
	}
	for _, s := range st.Subject {
		if s.Digest["sha256"] == subject.Encoded() {
			return nil
		}
	}
	return errors.New("names another digest than " + string(subject))
}
