package oci_test

import (
	"slices"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/test/ociregistry"
)

func TestTagsAreListedOverEveryPageWithinTheirBounds(t *testing.T) {
	reg := ociregistry.Start(t)
	c := newClient(t, oci.Options{})
	repo := repository(t, reg, "app")
	want := []string{"v1", "v2", "v3", "v4", "v5"}
	for _, tag := range want {
		pushImage(t, c, repo, "application/vnd.example.config.v1+json", nil, nil, tag)
	}
	reg.PageTags(2)
	before := reg.Requests("tags")
	tags, err := c.Tags(t.Context(), repo, oci.Credentials{})
	slices.Sort(tags)
	if err != nil || !slices.Equal(tags, want) {
		t.Fatalf("Tags over pages of two = %v (%v); want %v", tags, err, want)
	}
	if n := reg.Requests("tags") - before; n != 3 {
		t.Errorf("the tag list was read in %d requests; want 3 (pages of two)", n)
	}

	t.Run("more tags than the bound are refused", func(t *testing.T) {
		_, err := newClient(t, oci.Options{MaxTags: 4}).Tags(t.Context(), repo, oci.Credentials{})
		checkFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "the tag list of charts/app holds more than 4 tags")
	})
	t.Run("more pages than the bound are refused", func(t *testing.T) {
		_, err := newClient(t, oci.Options{MaxTagPages: 2}).Tags(t.Context(), repo, oci.Credentials{})
		checkFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "the tag list of charts/app is over 2 pages")
	})
	t.Run("more bytes than the bound over all pages are refused", func(t *testing.T) {
		_, err := newClient(t, oci.Options{MaxTagListBytes: 60}).Tags(t.Context(), repo, oci.Credentials{})
		checkFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "the tag list of charts/app is over the limit of 60 bytes in its 2 pages")
	})
	t.Run("a repository that does not exist", func(t *testing.T) {
		_, err := c.Tags(t.Context(), repository(t, reg, "nothing"), oci.Credentials{})
		checkFailure(t, err, v1alpha1.ReasonRepositoryNotFound, "reading the tag list of charts/nothing: HTTP 404 Not Found")
	})
}
