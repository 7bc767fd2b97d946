package main

import (
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// writeLayout writes the index (named by its version, as `skopeo copy
// oci:DIR:VERSION` or `crane push DIR` take it) and the SBOM into a new OCI
// image layout at dir.
func writeLayout(dir, version string, idx v1.ImageIndex, sbom v1.Image) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("the directory is not empty")
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": version})); err != nil {
		return err
	}
	return p.AppendImage(sbom)
}

// push writes the index under ref and the SBOM beside it, and returns ref's
// repository pinned to the index's digest.
func push(ref string, idx v1.ImageIndex, sbom v1.Image) (string, error) {
	r, err := name.ParseReference(ref, name.StrictValidation)
	if err != nil {
		return "", err
	}
	auth := remote.WithAuthFromKeychain(authn.DefaultKeychain)
	if err := remote.WriteIndex(r, idx, auth); err != nil {
		return "", err
	}
	sbomDigest, err := sbom.Digest()
	if err != nil {
		return "", err
	}
	if err := remote.Write(r.Context().Digest(sbomDigest.String()), sbom, auth); err != nil {
		return "", fmt.Errorf("the SBOM: %w", err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return r.Context().Name() + "@" + digest.String(), nil
}
