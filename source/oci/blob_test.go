package oci_test

import (
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/test/ociregistry"
)

func TestABlobIsReadWithinItsLimitAndCheckedAgainstItsDigest(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "webapp")
	desc := pushLayer(t, c, repo, ociregistry.ChartLayerType, []byte("a chart's package"))
	data, err := c.Blob(t.Context(), repo, oci.Credentials{}, desc, 1<<20)
	if err != nil || string(data) != "a chart's package" {
		t.Fatalf("Blob = %q (%v); want the package", data, err)
	}

	t.Run("over its limit, refused before a byte is read", func(t *testing.T) {
		before := reg.Requests("blobs")
		_, err := c.Blob(t.Context(), repo, oci.Credentials{}, desc, 8)
		checkFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "is 17 bytes, over the limit of 8")
		if n := reg.Requests("blobs") - before; n != 0 {
			t.Errorf("%d requests for the blob; want none", n)
		}
	})
	t.Run("content that is not its digest's", func(t *testing.T) {
		reg.CorruptBlobs()
		_, err := c.Blob(t.Context(), repo, oci.Credentials{}, desc, 1<<20)
		checkFailure(t, err, v1alpha1.ReasonRegistryFailed, "its content does not match its digest")
	})
	t.Run("a blob that does not exist", func(t *testing.T) {
		other := desc
		other.Digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
		_, err := c.Blob(t.Context(), repo, oci.Credentials{}, other, 1<<20)
		checkFailure(t, err, v1alpha1.ReasonRepositoryNotFound, "HTTP 404 Not Found")
	})
}
