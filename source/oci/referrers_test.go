package oci_test

import (
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/source/oci"
	"tether.dev/tether/test/ociregistry"
)

func TestReferrersFindAManifestPushedWithASubject(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "webapp")
	chart := pushImage(t, c, repo, ociregistry.ConfigType, nil, []ocispec.Descriptor{pushLayer(t, c, repo, ociregistry.ChartLayerType, []byte("a chart"))}, "1.0.0")
	const sigType = "application/vnd.example.signature.v1+json"
	sig := pushImage(t, c, repo, sigType, &chart, []ocispec.Descriptor{pushLayer(t, c, repo, "application/octet-stream", []byte("a signature"))})
	pushImage(t, c, repo, "application/vnd.example.sbom.v1+json", &chart, nil)

	found, err := c.Referrers(t.Context(), repo, oci.Credentials{}, chart, sigType)
	if err != nil || len(found) != 1 || found[0].Digest != sig.Digest || found[0].ArtifactType != sigType {
		t.Fatalf("Referrers of the chart of type %s = %v (%v); want the signature %s alone", sigType, found, err, sig.Digest)
	}
	all, err := c.Referrers(t.Context(), repo, oci.Credentials{}, chart, "")
	if err != nil || len(all) != 2 {
		t.Errorf("Referrers of the chart = %v (%v); want the signature and the SBOM", all, err)
	}
	none, err := c.Referrers(t.Context(), repo, oci.Credentials{}, sig, "")
	if err != nil || len(none) != 0 {
		t.Errorf("Referrers of the signature = %v (%v); want none", none, err)
	}
}
