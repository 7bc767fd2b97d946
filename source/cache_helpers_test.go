package source

import (
	"testing"

	"tether.dev/tether/api/v1alpha1"
)

// The package's internal tests of rendering fetch through a Source of their
// own, whose git cache (source/gitcache, tested there) allows file:// URLs.

var mainBranch = v1alpha1.GitRef{Branch: "main"}

func newCacheTestSource(t *testing.T, opts Options) *Source {
	t.Helper()
	opts.CacheDir, opts.AllowFileURLs = t.TempDir(), true
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustFetch(t *testing.T, s *Source, url string) Revision {
	t.Helper()
	rev, err := s.Fetch(t.Context(), Request{URL: url, Ref: mainBranch})
	if err != nil {
		t.Fatalf("Fetch %s: %v", url, err)
	}
	return rev
}
