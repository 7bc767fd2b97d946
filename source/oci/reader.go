package oci

import (
	"context"
	"errors"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
)

// RepositoryReader reads one repository with one set of credentials: what a
// signature verifier (source/cosign's Fetcher) needs of the registry holding
// an artifact or a chart.
type RepositoryReader struct {
	client *Client
	repo   Repository
	creds  Credentials
}

// Reader is a RepositoryReader of repo with creds.
func (c *Client) Reader(repo Repository, creds Credentials) *RepositoryReader {
	return &RepositoryReader{client: c, repo: repo, creds: creds}
}

// Manifest reads the raw manifest reference (a tag or a digest) names; ok is
// false, with no error, when the registry has none.
func (r *RepositoryReader) Manifest(ctx context.Context, reference string) ([]byte, bool, error) {
	m, err := r.client.Manifest(ctx, r.repo, r.creds, reference)
	var oe *Error
	if errors.As(err, &oe) && oe.Reason == v1alpha1.ReasonRepositoryNotFound {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return m.Raw, true, nil
}

// Blob reads desc's blob within limit bytes, its digest checked.
func (r *RepositoryReader) Blob(ctx context.Context, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	return r.client.Blob(ctx, r.repo, r.creds, desc, limit)
}

// Referrers lists the manifests whose subject is subject, of artifactType.
func (r *RepositoryReader) Referrers(ctx context.Context, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	return r.client.Referrers(ctx, r.repo, r.creds, subject, artifactType)
}
