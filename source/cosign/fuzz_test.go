package cosign

import (
	"context"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/opencontainers/go-digest"
)

// FuzzSignatureManifest feeds Verify a hostile signature manifest and payload
// blob: the manifest tagged SignatureTag, whose layers may name the payload
// (its digest is the fuzzed payload's). It must not panic, must accept only a
// signature by the trusted key, and must refuse with an *Error whose message
// prints and quotes neither input.
func FuzzSignatureManifest(f *testing.F) {
	ci := newECDSAKey(f, elliptic.P256())
	keys := mustKeys(f, map[string]testKey{"ci.pub": ci})
	subject := newRegistry().artifact("app")
	payload := simpleSigning(testRepo, subject.Digest)
	sig := base64.StdEncoding.EncodeToString(ci.sign(f, payload))
	layer := `{"mediaType":"` + SimpleSigningMediaType + `","digest":"` + string(digest.FromBytes(payload)) + `","size":` + strconv.Itoa(len(payload))
	for _, seed := range []struct{ manifest, payload string }{
		{manifest: `{"layers":[` + layer + `,"annotations":{"` + SignatureAnnotation + `":"` + sig + `"}}]}`, payload: string(payload)},
		{manifest: `{"layers":[` + layer + `}]}`, payload: string(payload)},
		{manifest: `{"layers":[` + layer + `,"annotations":{"` + SignatureAnnotation + `":"!!"}}]}`, payload: `{"critical":null}`},
		{manifest: `{"layers":null}`, payload: ""},
		{manifest: `[]`, payload: "\x00"},
	} {
		f.Add([]byte(seed.manifest), []byte(seed.payload))
	}
	f.Fuzz(func(t *testing.T, manifest, payload []byte) {
		r := newRegistry()
		r.tags[SignatureTag(subject)] = manifest
		r.blobs[digest.FromBytes(payload)] = payload
		signer, err := Verify(context.Background(), r, keys, testRepo, subject)
		checkVerdict(t, signer, err, manifest, payload)
	})
}

// FuzzBundle feeds Verify a hostile Sigstore bundle attached to the artifact
// as cosign v3 attaches one.
func FuzzBundle(f *testing.F) {
	ci := newECDSAKey(f, elliptic.P256())
	keys := mustKeys(f, map[string]testKey{"ci.pub": ci})
	r := newRegistry()
	subject := r.artifact("app")
	for _, seed := range [][]byte{
		dsseBundle(f, ci, InTotoPayloadType, statement(subject.Digest)),
		messageBundleOf(f, ci, r.manifests[subject.Digest]),
		[]byte(`{"mediaType":"` + BundleMediaType + `","dsseEnvelope":{"payload":"e30=","payloadType":"` + InTotoPayloadType + `","signatures":[{"sig":"AA=="}]}}`),
		[]byte(`{"mediaType":"` + BundleMediaType + `","messageSignature":{"messageDigest":{"algorithm":"SHA2_256"}}}`),
		[]byte(`null`),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, bundle []byte) {
		r := newRegistry()
		subject := r.artifact("app")
		r.attach(t, subject, bundle)
		signer, err := Verify(context.Background(), r, keys, testRepo, subject)
		checkVerdict(t, signer, err, bundle, nil)
	})
}

// checkVerdict fails unless an acceptance names a signer and a refusal is an
// *Error with no signer and a message that prints and quotes no input of
// some length. A manifest naming a blob the registry does not hold is the
// Fetcher's error, passed on.
func checkVerdict(t *testing.T, signer Signer, err error, inputs ...[]byte) {
	t.Helper()
	if errors.Is(err, errBlobUnknown) && ReasonOf(err) == "" {
		return
	}
	if err == nil {
		if signer.Key != "ci.pub" || signer.Fingerprint == "" {
			t.Fatalf("accepted with signer %#v", signer)
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
	msg := err.Error()
	for _, c := range msg {
		if !unicode.IsPrint(c) {
			t.Fatalf("message %q holds a character that does not print", msg)
		}
	}
	for _, in := range inputs {
		if len(in) >= 12 && strings.Contains(msg, string(in)) {
			t.Fatalf("message %q quotes the input", msg)
		}
	}
}
