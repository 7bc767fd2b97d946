package source_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

func TestCallersOfOneRepositoryShareOneRefListing(t *testing.T) {
	srv := gitserver.Start(t, gitserver.Options{Username: "tether", Password: "s3cret-pass", BearerToken: "s3cret-token"})
	repo := srv.CreateRepo(t, "monorepo")
	tagged := repo.Commit(t, map[string]string{"team-a/cm.yaml": configMap("a", "v1")}, "release 1")
	repo.Tag(t, "v1.0.0")
	head := repo.Commit(t, map[string]string{"team-a/cm.yaml": configMap("a", "v2")}, "work after the release")
	basic := source.Auth{Username: "tether", Password: "s3cret-pass"}
	token := source.Auth{BearerToken: "s3cret-token"}
	src := newSource(t, source.Options{})
	shared := func(ref v1alpha1.GitRef, auth source.Auth) source.Request {
		return source.Request{URL: repo.URL(), Ref: ref, Auth: auth, MaxAge: time.Hour}
	}
	// Each fetches its ref's commit: the first fetch of a repository takes only
	// the commit its ref names, so the tag's commit is fetched on its own.
	fetch(t, src, shared(main, basic))
	fetch(t, src, shared(v1alpha1.GitRef{Tag: "v1.0.0"}, basic))

	t.Run("callers of other refs with the same credentials within MaxAge ask nothing", func(t *testing.T) {
		before := repo.Requests()
		want := map[v1alpha1.GitRef]string{
			{Tag: "v1.0.0"}:    "v1.0.0@sha1:" + tagged,
			{SemVer: ">=1.0"}:  "v1.0.0@sha1:" + tagged,
			{Commit: tagged}:   "sha1:" + tagged,
			main:               "main@sha1:" + head,
			{Branch: "absent"}: "",
		}
		for ref, revision := range want {
			rev, err := src.Fetch(t.Context(), shared(ref, basic))
			if revision == "" {
				if reason := fetchReason(t, err); reason != source.ReasonRefNotFound {
					t.Errorf("ref %+v: reason = %s, want %s (error %v)", ref, reason, source.ReasonRefNotFound, err)
				}
				continue
			}
			if err != nil || rev.String() != revision {
				t.Errorf("ref %+v: revision = %s (error %v), want %s", ref, rev, err, revision)
			}
		}
		if diff := cmp.Diff(before, repo.Requests()); diff != "" {
			t.Errorf("requests (-before +after):\n%s", diff)
		}
	})

	t.Run("a caller with other credentials lists the refs itself", func(t *testing.T) {
		before := repo.Requests()
		fetch(t, src, shared(v1alpha1.GitRef{Tag: "v1.0.0"}, token))
		want := before
		want.RefListings++
		if diff := cmp.Diff(want, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("a caller with wrong credentials is refused by the remote, whatever the ref", func(t *testing.T) {
		wrong := source.Auth{Username: "tether", Password: "nope"}
		for _, ref := range []v1alpha1.GitRef{{Tag: "v1.0.0"}, {SemVer: ">=1.0"}, {Commit: head}} {
			before := repo.Requests()
			_, err := src.Fetch(t.Context(), shared(ref, wrong))
			if reason := fetchReason(t, err); reason != source.ReasonAuthenticationFailed {
				t.Errorf("ref %+v: reason = %s, want %s (error %v)", ref, reason, source.ReasonAuthenticationFailed, err)
			}
			if got := repo.Requests(); got.Refused == before.Refused {
				t.Errorf("ref %+v: the remote was not asked (requests %+v)", ref, got)
			}
		}
	})

	t.Run("a push notification ends the sharing for every ref", func(t *testing.T) {
		newer := repo.Commit(t, map[string]string{"team-a/cm.yaml": configMap("a", "v3")}, "change")
		stale := fetch(t, src, shared(main, basic))
		if stale.Commit != head {
			t.Fatalf("within MaxAge, revision = %s, want the shared %s", stale, head)
		}
		src.Refresh(repo.URL())
		before := repo.Requests()
		if rev := fetch(t, src, shared(main, basic)); rev.Commit != newer {
			t.Errorf("after Refresh, revision = %s, want the new commit %s", rev, newer)
		}
		want := before
		want.RefListings += 2 // the listing, and the fetch's own
		want.Fetches++
		if diff := cmp.Diff(want, repo.Requests()); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})
}

func TestCallersOfARepositoryItsHostIsAnsweringShareTheAnswer(t *testing.T) {
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "monorepo")
	repo.Commit(t, map[string]string{"team-a/cm.yaml": configMap("a", "v1")}, "add team a")
	// One conversation at a time with the host: every caller but the first finds
	// it busy, with a listing of the very repository it wants.
	src := newSource(t, source.Options{MaxFetchesPerHost: 1})
	req := source.Request{URL: repo.URL(), Ref: main, MaxAge: time.Hour}
	fetch(t, src, req) // the commit is cached: the callers below only list
	src.Refresh(repo.URL())

	before := repo.Requests()
	const callers = 8 // the Syncs of a monorepo when their agent starts
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := src.Fetch(t.Context(), req)
			errs <- err
		}()
	}
	for range callers {
		if err := <-errs; err != nil {
			t.Errorf("a caller was refused: %v", err)
		}
	}
	want := before
	want.RefListings++
	if diff := cmp.Diff(want, repo.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}
