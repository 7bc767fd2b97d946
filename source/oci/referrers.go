package oci

import (
	"context"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Referrers lists the manifests whose subject is subject, filtered by
// artifactType when it is not "": by the referrers API, or, on a registry
// without it, by the tag schema ("sha256-<hex>") as oras-go falls back to.
// The list is bounded by Options.MaxReferrers, each page (and the tag
// schema's index) by MaxManifestBytes.
func (c *Client) Referrers(ctx context.Context, repo Repository, creds Credentials, subject ocispec.Descriptor, artifactType string) ([]ocispec.Descriptor, error) {
	if err := subject.Digest.Validate(); err != nil {
		return nil, registryError("the referrers in %s: the subject's digest is not one", repo.Path)
	}
	what := "the referrers of " + repo.Path + "@" + subject.Digest.String()
	call, err := c.start(ctx, repo, creds, c.opts.MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	defer call.done()
	var found []ocispec.Descriptor
	tooMany := false
	err = call.repo.Referrers(call.ctx, subject, artifactType, func(page []ocispec.Descriptor) error {
		if len(found)+len(page) > c.opts.MaxReferrers {
			tooMany = true
			return errEnough
		}
		found = append(found, page...)
		return nil
	})
	switch {
	case tooMany:
		return nil, limitError("%s are more than %d, the limit", what, c.opts.MaxReferrers)
	case err != nil:
		return nil, wrap(what, err)
	}
	return found, nil
}
