package cosign

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Bounds on what Verify reads. A signature over a bound is refused as
// InvalidSignature, not read.
const (
	// MaxSignatures bounds the signatures Verify examines for one artifact:
	// the layers of its signature manifest and then its bundles, in order.
	MaxSignatures = 16
	// MaxPayload bounds a simple-signing payload and a bundle's in-toto
	// statement (a payload cosign writes is a few hundred bytes).
	MaxPayload = 64 << 10
	// MaxBundle bounds a Sigstore bundle, which carries its payload in base64
	// and its transparency log entries besides.
	MaxBundle = 256 << 10
)

// Verify finds the cosign signatures of subject (the artifact's manifest
// descriptor, as resolved in repo) and returns the first made by a trusted
// key whose payload names subject's digest. Signatures are looked for where
// cosign puts them: first the manifest tagged SignatureTag(subject) (cosign
// v2's format, "simple signing" payloads; their docker-reference is not
// compared with repo, as cosign does not), then Sigstore bundles among subject's referrers (cosign v3's
// --new-bundle-format). Nothing is fetched but through f, and nothing after a
// signature verifies.
//
// repo is the artifact's repository as "host/path" ("ghcr.io/org/app",
// "docker.io/library/nginx", "localhost:5000/app"), without tag or digest.
//
// A refusal is an *Error: NotSigned, UntrustedSignature or InvalidSignature.
// Any other error is the Fetcher's (wrapped) or a bad argument, and says
// nothing about the artifact.
func Verify(ctx context.Context, f Fetcher, keys *Keys, repo string, subject ocispec.Descriptor) (Signer, error) {
	if keys == nil || len(keys.keys) == 0 {
		return Signer{}, errors.New("cosign verification needs trusted keys")
	}
	if err := checkSubject(subject); err != nil {
		return Signer{}, err
	}
	identity, err := parseRepository(repo)
	if err != nil {
		return Signer{}, fmt.Errorf("repository %q: %w", repo, err)
	}
	v := &verification{fetcher: f, keys: keys, repo: identity, subject: subject}
	if signer, ok, err := v.simpleSigning(ctx); err != nil || ok {
		return signer, err
	}
	if signer, ok, err := v.bundles(ctx); err != nil || ok {
		return signer, err
	}
	return Signer{}, refusal(subject.Digest, v.causes)
}

// SignatureTag is cosign's tag for subject's signatures: its digest with ':'
// made '-' and ".sig" appended ("sha256-<hex>.sig").
func SignatureTag(subject ocispec.Descriptor) string {
	return strings.Replace(string(subject.Digest), ":", "-", 1) + ".sig"
}

// checkSubject refuses a subject whose digest is not a well-formed sha256
// digest: cosign signs sha256 manifest digests only.
func checkSubject(subject ocispec.Descriptor) error {
	if err := subject.Digest.Validate(); err != nil {
		return fmt.Errorf("subject digest: %w", err)
	}
	if subject.Digest.Algorithm() != digest.SHA256 {
		return fmt.Errorf("subject digest is %s, not sha256, which cosign signs", subject.Digest.Algorithm())
	}
	return nil
}

// verification is one Verify call: what it checks against, and what it has
// found so far.
type verification struct {
	fetcher Fetcher
	keys    *Keys
	repo    repository
	subject ocispec.Descriptor
	// read counts the signatures examined, against MaxSignatures.
	read int
	// causes says why each signature examined did not verify.
	causes []*sigError
}

// refuse records why the signature at where did not verify.
func (v *verification) refuse(where string, reason Reason, err error) {
	v.causes = append(v.causes, &sigError{where: where, reason: reason, err: err})
}

// take counts one more signature; false when the bound is reached (said once,
// as a cause).
func (v *verification) take() bool {
	if v.read == MaxSignatures {
		v.read++
		v.refuse("signatures past the first "+fmt.Sprint(MaxSignatures), UntrustedSignature, errors.New("not read"))
	}
	if v.read > MaxSignatures {
		return false
	}
	v.read++
	return true
}

// blob reads desc through the fetcher within limit and checks its digest.
// A descriptor over limit is refused (ok false) without a request; a Fetcher
// error is returned as it is, wrapped.
func (v *verification) blob(ctx context.Context, where string, desc ocispec.Descriptor, limit int64) ([]byte, bool, error) {
	if desc.Size < 0 || desc.Size > limit {
		v.refuse(where, InvalidSignature, fmt.Errorf("its blob is %d bytes, over the bound of %d", desc.Size, limit))
		return nil, false, nil
	}
	if err := desc.Digest.Validate(); err != nil || desc.Digest.Algorithm() != digest.SHA256 {
		v.refuse(where, InvalidSignature, errors.New("its blob digest is not a sha256 digest"))
		return nil, false, nil
	}
	raw, err := v.fetcher.Blob(ctx, desc, limit)
	if err != nil {
		return nil, false, fmt.Errorf("%s: reading blob %s: %w", where, desc.Digest, err)
	}
	if int64(len(raw)) != desc.Size || digest.SHA256.FromBytes(raw) != desc.Digest {
		v.refuse(where, InvalidSignature, fmt.Errorf("blob %s does not match its digest and size", desc.Digest))
		return nil, false, nil
	}
	return raw, true, nil
}
