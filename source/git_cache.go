package source

import (
	"context"

	"tether.dev/tether/source/gitcache"
)

// The git cache's work, under the names source's callers know: the methods
// forward to the cache (source/gitcache), whose documentation says what each
// does, and the names below are its own.

// Names of the git cache's answers (gitcache).
const (
	// MaxGlobMatches is the most paths one Glob returns.
	MaxGlobMatches = gitcache.MaxGlobMatches
	// MaxSubject bounds a commit's subject as Subject returns it, in bytes.
	MaxSubject = gitcache.MaxSubject
	// GlobDirectories lists directories.
	GlobDirectories = gitcache.GlobDirectories
	// GlobFiles lists regular files and symlinks.
	GlobFiles = gitcache.GlobFiles
)

// GlobKind says what a Glob lists.
type GlobKind = gitcache.GlobKind

// CommitSummary is a commit's subject and author's name, for the history.
type CommitSummary = gitcache.Summary

// ErrHistoryUnknown is returned by Descends when the cache cannot tell: one of
// the commits is not in it (an agent whose cache was lost with its pod).
var ErrHistoryUnknown = gitcache.ErrHistoryUnknown

// OneLine makes text safe to show on one line within maxBytes
// (gitcache.OneLine, which Subject applies to a commit's subject).
func OneLine(text string, maxBytes int) string { return gitcache.OneLine(text, maxBytes) }

// Fetch resolves req.Ref to a commit and makes sure that commit is in the local
// cache, asking the remote only what it must (gitcache.Cache.Fetch says how;
// the package's documentation what it costs), and, when req.Verify is set,
// checks its signatures (verified.go). A failure is a *FetchError.
func (s *Source) Fetch(ctx context.Context, req Request) (Revision, error) {
	rev, err := s.git.Fetch(ctx, req)
	if err != nil || req.Verify == nil {
		return rev, err
	}
	return s.verified(rev, req)
}

// Refresh forgets every resolution of url's refs and every index of url as a
// chart repository, so that the next Fetch or FetchChart asks the remote
// whatever its MaxAge: a push notification (webhook) says the remote has moved.
func (s *Source) Refresh(url string) {
	s.charts.Forget(url)
	s.artifacts.Forget(url)
	s.git.Refresh(url)
}

// Glob lists the paths of the fetched commit rev that pattern matches, sorted,
// reading only the trees on the way (gitcache.Cache.Glob).
func (s *Source) Glob(rev Revision, pattern string, kind GlobKind) ([]string, error) {
	return s.git.Glob(rev, pattern, kind)
}

// ReadFiles reads files of the fetched commit rev, as Glob named them
// (gitcache.Cache.ReadFiles).
func (s *Source) ReadFiles(rev Revision, paths []string) (map[string][]byte, error) {
	return s.git.ReadFiles(rev, paths)
}

// Descends reports whether commit to has commit from in its history, reading
// only the cache (gitcache.Cache.Descends); ErrHistoryUnknown when it cannot
// tell.
func (s *Source) Descends(url, from, to string) (bool, error) {
	return s.git.Descends(url, from, to)
}

// Summary returns the subject and author's name of commit in url's cache,
// made safe to show (gitcache.Cache.Summary).
func (s *Source) Summary(url, commit string) (CommitSummary, error) {
	return s.git.Summary(url, commit)
}
