package oci_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
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

// fakeTagList serves page at /v2/charts/app/tags/list on loopback, with link
// as its Link header when not "", and counts the requests.
func fakeTagList(t *testing.T, page, link string) (oci.Repository, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if r.URL.Path != "/v2/charts/app/tags/list" {
			http.NotFound(w, r)
			return
		}
		if link != "" {
			w.Header().Set("Link", link)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, page)
	}))
	t.Cleanup(srv.Close)
	repo, err := oci.ParseURL("oci://" + strings.TrimPrefix(srv.URL, "http://") + "/charts/app")
	if err != nil {
		t.Fatal(err)
	}
	return repo, &n
}

func TestAPageOfMoreTagsThanTheBoundIsRefusedAsItIsRead(t *testing.T) {
	page := `{"name":"charts/app","tags":[` + strings.Repeat(`"a",`, 1<<20) + `"b"]}`
	repo, _ := fakeTagList(t, page, "")
	_, err := newClient(t, oci.Options{MaxTags: 1000}).Tags(t.Context(), repo, oci.Credentials{})
	checkFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "the tag list of charts/app holds more than 1000 tags")

	escaped := `{"name":"charts/app","tags":["a\"b\\","c"]}`
	repo, _ = fakeTagList(t, escaped, "")
	tags, err := newClient(t, oci.Options{MaxTags: 2}).Tags(t.Context(), repo, oci.Credentials{})
	if err != nil || len(tags) != 2 {
		t.Errorf("a page of two tags with escaped quotes: %q (%v); want both", tags, err)
	}
}

func TestATagListsNextPageOnAnotherHostIsNotFollowed(t *testing.T) {
	repo, n := fakeTagList(t, `{"name":"charts/app","tags":["v1"]}`, `<http://other.example.com/v2/charts/app/tags/list?last=v1>; rel="next"`)
	_, err := newClient(t, oci.Options{}).Tags(t.Context(), repo, oci.Credentials{})
	checkFailure(t, err, v1alpha1.ReasonRegistryFailed, "the tag list's next page is on another host")
	if strings.Contains(err.Error(), "other.example.com") || n.Load() != 1 {
		t.Errorf("error %q after %d requests; want one request, and the other host unnamed", err, n.Load())
	}
}
