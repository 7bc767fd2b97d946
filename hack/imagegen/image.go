package main

import (
	"fmt"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the container runs, and as whom: the user deploy/base's Deployment also
// sets (runAsUser 65532), so the image is non-root even where a pod sets nothing.
const (
	binaryPath = "/usr/local/bin/tether"
	user       = "65532:65532"
)

// labels are the OCI annotations (image-spec annotations.md) set as the config's
// labels, and as annotations of each manifest and of the index.
func labels(opts options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "tether",
		"org.opencontainers.image.description": "Tether, a GitOps sync agent for Kubernetes",
		"org.opencontainers.image.source":      opts.source,
		"org.opencontainers.image.url":         opts.source,
		"org.opencontainers.image.version":     opts.version,
		"org.opencontainers.image.revision":    opts.revision,
		"org.opencontainers.image.created":     opts.created.Format("2006-01-02T15:04:05Z07:00"),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// buildIndex builds one image per platform on the same base layer, and the index
// of them all.
func buildIndex(opts options) (v1.ImageIndex, error) {
	base, err := baseLayer(opts.created)
	if err != nil {
		return nil, fmt.Errorf("the base layer: %w", err)
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range opts.platforms {
		img, err := buildImage(opts, p, base)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", p.os, p.arch, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        plainImage{img},
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.os, Architecture: p.arch}},
		})
	}
	return mutate.Annotations(idx, labels(opts)).(v1.ImageIndex), nil
}

// buildImage is the base layer, the binary's layer and the config that runs it.
func buildImage(opts options, p platformBinary, base v1.Layer) (v1.Image, error) {
	bin, err := os.ReadFile(p.binary)
	if err != nil {
		return nil, err
	}
	if err := checkBinary(bin, p); err != nil {
		return nil, err
	}
	binLayer, err := binaryLayer(bin, opts.created)
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: opts.created}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created, CreatedBy: "imagegen: base (CA certificates, passwd, group, /tmp)"}, MediaType: types.OCILayer},
		mutate.Addendum{Layer: binLayer, History: v1.History{Created: created, CreatedBy: "imagegen: " + binaryPath}, MediaType: types.OCILayer},
	)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Created = created
	cfg.OS, cfg.Architecture = p.os, p.arch
	cfg.Config = v1.Config{
		User:       user,
		Entrypoint: []string{binaryPath},
		Cmd:        []string{"controller"},
		Env:        []string{"PATH=/usr/local/bin:/usr/bin:/bin", "SSL_CERT_FILE=" + caFile},
		WorkingDir: "/",
		Labels:     labels(opts),
	}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, labels(opts)).(v1.Image), nil
}

// plainImage is an image whose index descriptor carries no artifactType:
// go-containerregistry would copy the config's media type there, which
// image-spec reserves for artifacts (and which makes some clients list the
// platform images as artifacts).
type plainImage struct{ v1.Image }

// ArtifactType is empty: an image, not an artifact.
func (plainImage) ArtifactType() (string, error) { return "", nil }
