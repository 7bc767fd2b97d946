package cosign

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Fetcher reads what Verify needs from the registry holding the artifact, in
// the artifact's repository. The caller wraps its OCI client (credentials,
// TLS, retries, its own bounds); Verify makes no request of its own.
type Fetcher interface {
	// Manifest reads the manifest that reference names: a tag (the
	// SignatureTag), or a digest "sha256:…" (a manifest that Referrers
	// listed). It returns the raw bytes, within the caller's bounds; ok false
	// with a nil error means there is no such manifest. Verify checks bytes
	// read by digest against the digest.
	Manifest(ctx context.Context, reference string) (raw []byte, ok bool, err error)
	// Blob reads a blob by descriptor, at most limit bytes (more is an
	// error). The caller checks the digest; Verify checks it again.
	Blob(ctx context.Context, desc ocispec.Descriptor, limit int64) ([]byte, error)
	// Referrers lists the manifests whose subject is subject and whose
	// artifact type is artifactType: the referrers API, or its tag schema
	// (sha256-<hex>) on a registry without it. None is an empty list and a
	// nil error.
	Referrers(ctx context.Context, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error)
}
