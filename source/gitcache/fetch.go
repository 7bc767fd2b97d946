package gitcache

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/git"
	"tether.dev/tether/source/result"
)

const remoteName = "origin"

// Fetch resolves req.Ref to a commit and makes sure that commit is in the local
// cache. It lists the remote refs first (one small request) and fetches only when
// the commit is not cached yet, so polling an unchanged repository costs one request.
// A resolution is shared, within req.MaxAge, only with callers that hold the same
// credentials: one without access never rides on a resolution made by one with it.
//
// A slow or dead host costs its neighbours little: at most
// Options.MaxFetchesPerHost network conversations with one host run at once (a
// caller over that waits in the host's line, least recently served first, for
// a few seconds, then gets ReasonHostBusy: git.HostGate), one URL has one
// conversation at a time (another caller waits for it briefly, holding none of
// the host's places, and shares its answer within MaxAge, or is busy too),
// and a host that could not be reached is not asked again for
// Options.HostFailureMemory: callers get its last failure at once. No lock that
// rendering or other URLs need is held while waiting for the network, except
// that a pack being written into a URL's cache keeps renders of that URL waiting.
func (c *Cache) Fetch(ctx context.Context, req Request) (Revision, error) {
	ref := req.Ref
	if ref == (v1alpha1.GitRef{}) {
		ref.Branch = "main"
	}
	rev := Revision{URL: req.URL, Ref: ref.String()}
	var r *git.Remote
	fail := func(reason string, err error) (Revision, error) {
		if reason == "" {
			reason = r.Reason(err)
		}
		return rev, &FetchError{URL: req.URL, Ref: refLabel(ref), Reason: reason, Err: git.WithoutHostText(err)}
	}
	if err := checkURL(req.URL, c.opts.AllowFileURLs); err != nil {
		return fail(v1alpha1.ReasonUnsupportedURL, err)
	}
	r, err := c.remotes.For(req.URL, req.Auth)
	if err != nil {
		return fail("", err)
	}
	defer r.Done()
	r.Tenant = req.Tenant
	c.sweep()
	e := c.entry(req.URL)
	c.usedBy(e, req.Tenant)
	key := r.Key + "\x00" + refKey(ref)
	res, ok, err := c.cached(e, req, r, ref, key)
	if err != nil {
		return fail(v1alpha1.ReasonCacheUnreadable, err)
	}
	if ok {
		return res.revision(rev), nil
	}

	// The repository first, the host second: a caller waiting for another's
	// conversation with its own repository (the Syncs of a monorepo, when their
	// agent starts or their shared listing expires) holds none of the host's
	// places, and shares that conversation's answer when it ends.
	if !e.lockNetwork(ctx, shareWait) {
		return fail(v1alpha1.ReasonHostBusy, fmt.Errorf("another fetch of this repository has been running for over %s", shareWait))
	}
	defer e.unlockNetwork()
	// Another caller may have asked while this one waited.
	if res, ok, err = c.cached(e, req, r, ref, key); err != nil {
		return fail(v1alpha1.ReasonCacheUnreadable, err)
	} else if ok {
		return res.revision(rev), nil
	}
	release, reason, err := c.hosts.Enter(ctx, r.Host, req.Tenant, req.URL+"\x00"+key, req.MaxAge, c.now())
	if err != nil {
		return fail(reason, err)
	}
	defer release()

	callerCtx := ctx
	if c.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.Timeout)
		defer cancel()
	}
	asked := c.now()
	res, reason, err = c.resolve(ctx, e, req.URL, r, ref, req.MaxAge)
	if err != nil {
		if reason == "" {
			reason = r.Reason(err)
		}
		if reason == v1alpha1.ReasonHostUnreachable && callerCtx.Err() == nil {
			c.hosts.Failed(r.Host, c.now(), err)
		}
		return fail(reason, err)
	}
	c.hosts.Answered(r.Host)
	e.mu.Lock()
	if res.at.IsZero() {
		res.at = asked
	}
	e.resolved[key] = res
	e.mu.Unlock()
	return res.revision(rev), nil
}

// shareWait is how long a Fetch waits for another one of the same repository to
// finish before it reports the host busy.
const shareWait = time.Second

// cached returns the resolution of key if it is younger than req.MaxAge and its
// commit is in the cache, or else one made from a listing of the repository with
// the same credentials younger than req.MaxAge, made for any ref (see refs).
func (c *Cache) cached(e *repoEntry, req Request, r *git.Remote, ref v1alpha1.GitRef, key string) (resolution, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, req.URL)
	if err != nil {
		return resolution{}, false, err
	}
	res, ok := e.resolved[key]
	if ok && fresh(c.now(), res.at, req.MaxAge) && res.cachedIn(repo) {
		return res, true, nil
	}
	if res, ok := c.fromListing(e, r, ref, req.MaxAge); ok && res.cachedIn(repo) {
		e.resolved[key] = res
		return res, true, nil
	}
	return resolution{}, false, nil
}

// resolve asks the remote what ref names and makes sure the commit is cached. On
// error it returns the reason, or "" for the caller to class the error. The ref
// listing runs without the entry's lock; fetching a pack holds it, since it
// writes the cache that rendering reads.
func (c *Cache) resolve(ctx context.Context, e *repoEntry, url string, r *git.Remote, ref v1alpha1.GitRef, maxAge time.Duration) (resolution, string, error) {
	if ref.Commit != "" {
		return c.resolveCommit(ctx, e, url, r, ref.Commit, maxAge)
	}
	refs, at, err := c.refs(ctx, e, r, maxAge)
	if err != nil {
		return resolution{}, "", err
	}
	res, name, reason, err := pick(refs, ref)
	if err != nil {
		return resolution{}, reason, err
	}
	res.at = at
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, url)
	if err != nil {
		return resolution{}, v1alpha1.ReasonCacheUnreadable, err
	}
	if res.cachedIn(repo) {
		return res, "", nil
	}
	refspec := fmt.Sprintf("+%s:%s", name, name)
	// A cache with no commit yet takes only the ref's commit (depth 1): the
	// history a Sync needs starts at what it first applies. Later fetches
	// take the commits since, down to what the cache holds, so that
	// Descends can walk from one applied commit to the next.
	depth := 0
	if !hasCommits(repo) {
		depth = 1
	}
	if reason, err := c.fetchInto(ctx, url, repo, r, refspec, depth); err != nil {
		return resolution{}, reason, err
	}
	if !hasCommit(repo, res.commit) && isShallow(repo) {
		// The ref moved back below where the cache's history starts: the
		// remote took the commit for one the cache has. Ask for it alone,
		// telling the remote where the cache's history starts.
		if reason, err := c.fetchInto(ctx, url, repo, r, refspec, 1); err != nil {
			return resolution{}, reason, err
		}
	}
	if !hasCommit(repo, res.commit) {
		// The remote names the commit and the fetch of that ref succeeded, so the
		// cache must be damaged (a ref left pointing at lost objects makes the
		// fetch a no-op). Drop it, so that the next Fetch starts afresh.
		if err := c.discardCache(e, url); err != nil {
			return resolution{}, v1alpha1.ReasonCacheUnreadable, err
		}
		return resolution{}, v1alpha1.ReasonCacheUnreadable, fmt.Errorf("fetched %s but commit %s is missing; cache discarded", name.Short(), res.commit)
	}
	return res, "", nil
}

// resolveCommit makes sure a pinned commit is cached. A commit cached already is
// still only returned after the remote has answered these credentials (now, or
// in a listing younger than maxAge): the cache is shared by everyone who names
// the URL.
func (c *Cache) resolveCommit(ctx context.Context, e *repoEntry, url string, r *git.Remote, commit string, maxAge time.Duration) (resolution, string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	repo, err := c.openCache(e, url)
	if err != nil {
		return resolution{}, v1alpha1.ReasonCacheUnreadable, err
	}
	var at time.Time
	if hasCommit(repo, commit) {
		e.mu.Unlock() // the listing only checks access
		_, at, err = c.refs(ctx, e, r, maxAge)
		e.mu.Lock()
		if err != nil {
			return resolution{}, "", err
		}
	} else if reason, err := c.fetchInto(ctx, url, repo, r, "+refs/heads/*:refs/heads/*", 0); err != nil {
		// A pinned commit may be anywhere in the history of any branch.
		return resolution{}, reason, err
	}
	if !hasCommit(repo, commit) {
		return resolution{}, v1alpha1.ReasonCommitNotFound, fmt.Errorf("commit %s is not on any branch", commit)
	}
	return resolution{commit: commit, at: at}, "", nil
}

// pick finds what ref names among a remote's refs: the full name of the ref to
// fetch, and the commit, peeling annotated tags.
func pick(refs []*plumbing.Reference, ref v1alpha1.GitRef) (resolution, plumbing.ReferenceName, string, error) {
	var name plumbing.ReferenceName
	switch {
	case ref.Branch != "":
		name = plumbing.NewBranchReferenceName(ref.Branch)
	case ref.Tag != "":
		name = plumbing.NewTagReferenceName(ref.Tag)
	case ref.SemVer != "":
		constraint, err := git.ParseRange(ref.SemVer)
		if err != nil {
			return resolution{}, "", v1alpha1.ReasonInvalidSemVer, err
		}
		tag, ok := git.NewestTag(refs, constraint)
		if !ok {
			return resolution{}, "", v1alpha1.ReasonNoMatchingTag, fmt.Errorf("no tag of the repository satisfies %q (of %d tags)", ref.SemVer, countTags(refs))
		}
		name = plumbing.NewTagReferenceName(tag)
	default:
		return resolution{}, "", v1alpha1.ReasonUnsupportedRef, errors.New("the ref names no branch, tag, semver range or commit")
	}
	var direct, peeled string
	for _, r := range refs {
		switch r.Name().String() {
		case name.String():
			direct = r.Hash().String()
		case name.String() + "^{}":
			peeled = r.Hash().String()
		}
	}
	res := resolution{commit: cmp.Or(peeled, direct)}
	if peeled != "" {
		res.tagObject = direct
	}
	if ref.SemVer != "" {
		res.tag = name.Short()
	}
	if res.commit == "" {
		kind := "branch"
		if name.IsTag() {
			kind = "tag"
		}
		return resolution{}, "", v1alpha1.ReasonRefNotFound, fmt.Errorf("the remote has no %s %s: %w", kind, name.Short(), errRefNotFound)
	}
	return res, name, "", nil
}

func countTags(refs []*plumbing.Reference) int {
	n := 0
	for _, r := range refs {
		if r.Name().IsTag() && !strings.HasSuffix(r.Name().String(), "^{}") {
			n++
		}
	}
	return n
}

// refKey names a ref in the table of resolutions.
func refKey(ref v1alpha1.GitRef) string {
	switch {
	case ref.Branch != "":
		return plumbing.NewBranchReferenceName(ref.Branch).String()
	case ref.Tag != "":
		return plumbing.NewTagReferenceName(ref.Tag).String()
	case ref.SemVer != "":
		return "semver:" + ref.SemVer
	}
	return "commit:" + ref.Commit
}

// Refresh forgets every resolution of url's refs, so that the next Fetch of any of
// them asks the remote whatever its MaxAge: a push notification (webhook) says the
// remote has moved.
func (c *Cache) Refresh(url string) {
	// The host has just spoken: whatever failure it had is over.
	if bare, _ := git.SplitCredentials(url); bare != "" {
		if ep, err := transport.NewEndpoint(bare); err == nil {
			c.hosts.Answered(git.HostOf(ep))
		}
	}
	e := c.entry(url)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.resolved = map[string]resolution{}
	e.listed = map[string]listing{}
}

// errRefNotFound says a branch or tag is not on the remote (any more); the error
// that wraps it names which.
var errRefNotFound = errors.New("check the name, or push it")

// listRefs lists the remote's refs with one request, peeled tags included.
// Its answer is small, so it gets Options.ListTimeout, much less than a fetch:
// a host that accepts the connection and then says nothing is found out soon.
func (c *Cache) listRefs(ctx context.Context, r *git.Remote) ([]*plumbing.Reference, error) {
	if c.opts.ListTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.ListTimeout)
		defer cancel()
	}
	rem := gogit.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: remoteName, URLs: []string{r.URL}})
	refs, err := rem.ListContext(ctx, &gogit.ListOptions{Auth: r.Method, PeelingOption: gogit.AppendPeeled})
	if err != nil {
		return nil, fmt.Errorf("listing remote refs: %w", git.WithStatus(err))
	}
	return refs, nil
}

// fetchInto fetches refspec into url's cache repo from r's URL: the caller's
// spelling of the URL, with the caller's credentials, whatever spelling created
// the cache. A depth above zero fetches that many commits of the ref's history
// (go-git then tells the remote where a shallow cache's history starts). The
// pack is received under Options.MaxCacheBytes and r's tenant's share of it
// (see packCap); a fetch that fails leaves nothing of its pack behind. On error it returns the reason, or
// "" for the caller to class the error.
func (c *Cache) fetchInto(ctx context.Context, url string, repo *gogit.Repository, r *git.Remote, refspec string, depth int) (string, error) {
	pc, err := c.reserve(url, r.Tenant)
	if err != nil {
		return v1alpha1.ReasonCacheFull, err
	}
	sto := repo.Storer
	if pc != nil {
		defer pc.done()
		if fs, ok := repo.Storer.(*filesystem.Storage); ok {
			sto = cappedStorage{Storage: fs, cap: pc}
		}
	}
	rem := gogit.NewRemote(sto, &config.RemoteConfig{Name: remoteName, URLs: []string{r.URL}})
	err = rem.FetchContext(ctx, &gogit.FetchOptions{
		RemoteName: remoteName,
		Auth:       r.Method,
		RefSpecs:   []config.RefSpec{config.RefSpec(refspec)},
		Depth:      depth,
		Tags:       gogit.NoTags,
		Force:      true,
	})
	if err != nil && !errors.Is(err, gogit.NoErrAlreadyUpToDate) {
		removePartialPacks(c.dir.of(url))
		var full *cacheFullError
		if errors.As(err, &full) {
			return v1alpha1.ReasonCacheFull, full
		}
		return "", fmt.Errorf("fetching %s: %w", refspec, git.WithStatus(err))
	}
	return "", nil
}

// hasCommits reports whether the cache holds any ref, and so any commit.
func hasCommits(repo *gogit.Repository) bool {
	refs, err := repo.References()
	if err != nil {
		return true // then fetch the whole history, as before
	}
	found := false
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			found = true
			return storer.ErrStop
		}
		return nil
	})
	return found
}

// isShallow reports whether the cache's history starts somewhere (a shallow
// fetch), rather than at the repository's first commits.
func isShallow(repo *gogit.Repository) bool {
	shallow, err := repo.Storer.Shallow()
	return err == nil && len(shallow) > 0
}

func hasCommit(repo *gogit.Repository, commit string) bool {
	_, err := repo.CommitObject(plumbing.NewHash(commit))
	return err == nil
}

// openCache opens the bare repository that caches url, creating it on first use and
// re-creating it when it is unreadable (a crash mid-write, a full disk): the cache is
// only a cache, the remote is the truth.
func (c *Cache) openCache(e *repoEntry, url string) (*gogit.Repository, error) {
	if e.repo != nil {
		return e.repo, nil
	}
	dir := c.dir.of(url)
	remoteURL, _ := git.SplitCredentials(url)
	objects := git.NewObjectLRU(repoObjectCache)
	repo, err := openRepository(dir, objects)
	if err == nil {
		if refsIntact(repo) {
			if remote, rerr := repo.Remote(remoteName); rerr == nil && len(remote.Config().URLs) == 1 && cacheKey(remote.Config().URLs[0]) == cacheKey(url) {
				e.repo, e.objects, e.trees = repo, objects, newTreeCache()
				return repo, nil
			}
		}
		_ = closeRepository(repo) // discarded below
	}
	if err := c.discardCache(e, url); err != nil {
		return nil, err
	}
	objects = git.NewObjectLRU(repoObjectCache)
	repo, err = gogit.Init(repositoryStorage(dir, objects), nil)
	if err != nil {
		return nil, fmt.Errorf("creating cache %s: %w", dir, err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{remoteURL}}); err != nil {
		return nil, fmt.Errorf("configuring cache %s: %w", dir, err)
	}
	e.repo, e.objects, e.trees = repo, objects, newTreeCache()
	return repo, nil
}

// Bounds on the memory one open repository holds. go-git's defaults keep up to
// 96 MiB of decoded objects per repository and read objects of any size whole;
// with one repository per URL, that grows with the number of URLs.
const (
	repoObjectCache      = 4 << 20
	repoLargeObjectBytes = 1 << 20 // larger objects are streamed from the pack
)

// repositoryStorage is the storage of the bare repository at dir, with bounded
// memory: objects is its cache of decoded objects (and delta bases). It keeps up
// to repoOpenPacks pack files open: go-git otherwise opens the pack for each
// object it reads and closes it after, and a render reads a dozen objects (a
// tenth of a fleet's render time went to the opens). closeRepository closes
// them.
func repositoryStorage(dir string, objects cache.Object) *filesystem.Storage {
	return filesystem.NewStorageWithOptions(osfs.New(dir), objects,
		filesystem.Options{LargeObjectThreshold: repoLargeObjectBytes, MaxOpenDescriptors: repoOpenPacks})
}

// repoOpenPacks is how many pack files one cached repository keeps open: the
// newest fetch's and one other.
const repoOpenPacks = 2

// closeRepository closes the files repo keeps open; its cache directory may then
// be removed.
func closeRepository(repo *gogit.Repository) error {
	if closer, ok := repo.Storer.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}

// openRepository opens the bare repository at dir, which must exist, caching
// its decoded objects in objects.
func openRepository(dir string, objects cache.Object) (*gogit.Repository, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, err
	}
	return gogit.Open(repositoryStorage(dir, objects), nil)
}

// reposDir is the directory holding the cache's bare repositories
// (Options.CacheDir/git), one directory a repository.
type reposDir string

// of is where the bare repository caching url lives: one directory for every
// spelling of the URL that cacheKey deems the same (a cache key names it too).
func (d reposDir) of(url string) string {
	sum := sha256.Sum256([]byte(cacheKey(url)))
	return filepath.Join(string(d), hex.EncodeToString(sum[:12]))
}

// discardCache forgets and deletes the cache of url; the next openCache re-creates it.
func (c *Cache) discardCache(e *repoEntry, url string) error {
	if e.repo != nil {
		_ = closeRepository(e.repo) // a close that fails leaves no file to remove
	}
	e.repo, e.objects, e.trees = nil, nil, nil
	e.resolved = map[string]resolution{}
	if err := os.RemoveAll(c.dir.of(url)); err != nil {
		return fmt.Errorf("discarding cache %s: %w", c.dir.of(url), err)
	}
	return nil
}

// refsIntact reports whether every ref of a cached repository names an object the
// cache can read. A ref left pointing at lost objects would otherwise make every
// later fetch of it a no-op ("already up to date"), and the cache would never heal.
func refsIntact(repo *gogit.Repository) bool {
	refs, err := repo.References()
	if err != nil {
		return false
	}
	intact := true
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		if _, err := repo.Storer.EncodedObject(plumbing.AnyObject, r.Hash()); err != nil {
			intact = false
			return storer.ErrStop
		}
		return nil
	})
	return intact
}

// checkURL accepts the transports this build supports: https, http, ssh (also in
// the scp-like form git@host:path) and, when allowed, file.
func checkURL(url string, allowFile bool) error {
	if err := result.CheckUserinfo(url); err != nil {
		return err
	}
	if strings.HasPrefix(strings.ToLower(url), "file:") && !allowFile {
		return fmt.Errorf("file:// URL %q refused: it would read the agent's own file system, and this agent does not allow file:// URLs", url)
	}
	for _, p := range []string{"https://", "http://", "ssh://", "file://"} {
		if strings.HasPrefix(url, p) {
			return nil
		}
	}
	if result.IsSCPLike(url) {
		return nil
	}
	return fmt.Errorf("unsupported URL %q: use https://, http://, ssh://, user@host:path or file://", result.RedactURL(url))
}

// refLabel names a ref for messages, including a pinned commit.
func refLabel(ref v1alpha1.GitRef) string {
	if s := ref.String(); s != "" {
		return s
	}
	return ref.Commit
}
