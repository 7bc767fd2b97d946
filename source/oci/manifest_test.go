package oci_test

import (
	"encoding/json"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/test/ociregistry"
)

// pushIndex pushes an image index of manifests to repo, tagged tag.
func pushIndex(t *testing.T, c *oci.Client, repo oci.Repository, tag string, manifests ...ocispec.Descriptor) ocispec.Descriptor {
	t.Helper()
	index := ocispec.Index{MediaType: ocispec.MediaTypeImageIndex, Manifests: manifests}
	index.SchemaVersion = 2
	raw, err := json.Marshal(index)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := c.PushManifest(t.Context(), repo, oci.Credentials{}, ocispec.MediaTypeImageIndex, raw, tag)
	if err != nil {
		t.Fatalf("pushing an index: %v", err)
	}
	return desc
}

func TestAnImageIndexIsFollowedToTheManifestOfTheWantedType(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "webapp")
	chartLayer := pushLayer(t, c, repo, ociregistry.ChartLayerType, []byte("a chart"))
	chart := pushImage(t, c, repo, ociregistry.ConfigType, nil, []ocispec.Descriptor{chartLayer})
	imageLayer := pushLayer(t, c, repo, ocispec.MediaTypeImageLayerGzip, []byte("an image"))
	image := pushImage(t, c, repo, ocispec.MediaTypeImageConfig, nil, []ocispec.Descriptor{imageLayer})
	index := pushIndex(t, c, repo, "1.0.0", image, chart)

	m, err := c.Manifest(t.Context(), repo, oci.Credentials{}, "1.0.0", ociregistry.ConfigType)
	if err != nil {
		t.Fatalf("Manifest: %v", err)
	}
	if m.Descriptor.Digest != chart.Digest || m.ArtifactType != ociregistry.ConfigType || len(m.Layers) != 1 || m.Layers[0].Digest != chartLayer.Digest {
		t.Errorf("the index was followed to %s (%s, %d layers); want the chart's manifest %s", m.Descriptor.Digest, m.ArtifactType, len(m.Layers), chart.Digest)
	}

	t.Run("by digest", func(t *testing.T) {
		m, err := c.Manifest(t.Context(), repo, oci.Credentials{}, index.Digest.String(), ociregistry.ConfigType)
		if err != nil || m.Descriptor.Digest != chart.Digest {
			t.Errorf("Manifest(%s) = %s (%v); want the chart's manifest", index.Digest, m.Descriptor.Digest, err)
		}
		m, err = c.Manifest(t.Context(), repo, oci.Credentials{}, image.Digest.String())
		if err != nil || m.Descriptor.Digest != image.Digest || m.ArtifactType != ocispec.MediaTypeImageConfig || string(m.Raw) == "" {
			t.Errorf("Manifest(%s) = %s %s (%v); want the image's manifest", image.Digest, m.Descriptor.Digest, m.ArtifactType, err)
		}
	})
	t.Run("none or several of the wanted type", func(t *testing.T) {
		_, err := c.Manifest(t.Context(), repo, oci.Credentials{}, "1.0.0", "application/vnd.example.nothing")
		checkFailure(t, err, v1alpha1.ReasonRegistryFailed, "is an index holding no manifest of artifact type application/vnd.example.nothing")
		_, err = c.Manifest(t.Context(), repo, oci.Credentials{}, "1.0.0")
		checkFailure(t, err, v1alpha1.ReasonRegistryFailed, "is an index of 2 manifests; which one is meant cannot be told")
	})
	t.Run("a tag that does not exist", func(t *testing.T) {
		_, err := c.Manifest(t.Context(), repo, oci.Credentials{}, "9.9.9")
		checkFailure(t, err, v1alpha1.ReasonRepositoryNotFound, "reading the manifest of charts/webapp:9.9.9: HTTP 404 Not Found")
	})
	t.Run("a reference that is not one", func(t *testing.T) {
		_, err := c.Manifest(t.Context(), repo, oci.Credentials{}, "../../v2")
		checkFailure(t, err, v1alpha1.ReasonUnsupportedRef, "is not a tag or a digest")
	})
}

func TestAManifestOverItsBoundIsRefusedUnread(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "webapp")
	layer := pushLayer(t, c, repo, ociregistry.ChartLayerType, []byte("a chart"))
	layer.Annotations = map[string]string{"padding": strings.Repeat("x", 2048)}
	pushImage(t, c, repo, ociregistry.ConfigType, nil, []ocispec.Descriptor{layer}, "1.0.0")
	_, err := newClient(t, oci.Options{MaxManifestBytes: 1024}).Manifest(t.Context(), repo, oci.Credentials{}, "1.0.0")
	checkFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "over the limit of 1024")
}

func TestDockersManifestMediaTypesAreReadLikeOCIs(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "app")
	config := pushLayer(t, c, repo, "application/vnd.docker.container.image.v1+json", []byte(`{}`))
	layer := pushLayer(t, c, repo, "application/vnd.docker.image.rootfs.diff.tar.gzip", []byte("layer"))
	manifest, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json", "config": config, "layers": []any{layer}})
	if err != nil {
		t.Fatal(err)
	}
	image, err := c.PushManifest(t.Context(), repo, oci.Credentials{}, "application/vnd.docker.distribution.manifest.v2+json", manifest)
	if err != nil {
		t.Fatal(err)
	}
	list, err := json.Marshal(map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json", "manifests": []any{image}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PushManifest(t.Context(), repo, oci.Credentials{}, "application/vnd.docker.distribution.manifest.list.v2+json", list, "latest"); err != nil {
		t.Fatal(err)
	}
	m, err := c.Manifest(t.Context(), repo, oci.Credentials{}, "latest")
	if err != nil || m.Descriptor.Digest != image.Digest || m.ArtifactType != config.MediaType || len(m.Layers) != 1 {
		t.Errorf("a manifest list of one image: %s %s (%v); want the image %s", m.Descriptor.Digest, m.ArtifactType, err, image.Digest)
	}
}
