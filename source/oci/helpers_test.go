package oci_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/source/oci"
	"tether.dev/tether/test/ociregistry"
)

// newClient is a Client bounded by opts, for one test.
func newClient(t *testing.T, opts oci.Options) *oci.Client {
	t.Helper()
	c, err := oci.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// repository is reg's repository charts/<name>, spoken to through its proxy.
func repository(t *testing.T, reg *ociregistry.Server, name string) oci.Repository {
	t.Helper()
	base, err := oci.ParseURL(reg.Repository)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := base.Join(name)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// pushImage pushes an image manifest of config (of configType) and layers to
// repo, tagged with tags, with subject when not nil, and returns its descriptor.
func pushImage(t *testing.T, c *oci.Client, repo oci.Repository, configType string, subject *ocispec.Descriptor, layers []ocispec.Descriptor, tags ...string) ocispec.Descriptor {
	t.Helper()
	config, err := c.PushBlob(t.Context(), repo, oci.Credentials{}, configType, []byte(`{}`))
	if err != nil {
		t.Fatalf("pushing a config: %v", err)
	}
	if layers == nil {
		layers = []ocispec.Descriptor{}
	}
	m := ocispec.Manifest{MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: layers, Subject: subject}
	m.SchemaVersion = 2
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := c.PushManifest(t.Context(), repo, oci.Credentials{}, ocispec.MediaTypeImageManifest, raw, tags...)
	if err != nil {
		t.Fatalf("pushing a manifest: %v", err)
	}
	return desc
}

// pushLayer pushes data as a layer of mediaType to repo.
func pushLayer(t *testing.T, c *oci.Client, repo oci.Repository, mediaType string, data []byte) ocispec.Descriptor {
	t.Helper()
	desc, err := c.PushBlob(t.Context(), repo, oci.Credentials{}, mediaType, data)
	if err != nil {
		t.Fatalf("pushing a layer: %v", err)
	}
	return desc
}

// checkFailure fails t unless err is an *oci.Error of reason saying says.
func checkFailure(t *testing.T, err error, reason, says string) {
	t.Helper()
	var oe *oci.Error
	if !errors.As(err, &oe) || oe.Reason != reason || !strings.Contains(err.Error(), says) {
		t.Errorf("error %v; want an oci.Error of reason %s saying %q", err, reason, says)
	}
}
