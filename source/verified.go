package source

import (
	"fmt"
	"slices"
	"strings"
	gosync "sync"

	"github.com/go-git/go-git/v5/plumbing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/verify"
)

// verified checks the signatures of rev, which Fetch resolved for req, as
// req.Verify says: the annotated tag followed (modes Tag and TagAndHEAD), the
// commit (modes HEAD and TagAndHEAD, and a pinned commit in every mode: it
// was reached through no tag). It reads only the cache, at most
// verify.MaxObject bytes of each object. The revision comes back naming its
// signers; a failure is a *FetchError with the reason RevisionNotVerified
// naming the tag or commit, the key that signed it if any, and why.
func (s *Source) verified(rev Revision, req Request) (Revision, error) {
	v := req.Verify
	mode := v.Mode
	if mode == "" {
		mode = v1alpha1.VerifyHEAD
	}
	refuse := func(what string, err error) (Revision, error) {
		label := req.Ref.String()
		if label == "" {
			label = req.Ref.Commit
		}
		return rev, &FetchError{URL: req.URL, Ref: label, Reason: v1alpha1.ReasonRevisionNotVerified, Err: fmt.Errorf("%s: %w", what, err)}
	}
	pinned := req.Ref.Commit != ""
	key := strings.Join([]string{mode, fmt.Sprint(pinned), rev.Commit, rev.TagObject, v.Keys.Digest()}, "\x00")
	if signer, ok := s.verdicts.load(key); ok {
		rev.Signer = signer
		return rev, nil
	}
	var signers []string
	check := func(kind plumbing.ObjectType, hash string, signedBy func([]byte) (verify.Signer, error)) error {
		raw, err := s.git.RawObject(req.URL, kind, hash, verify.MaxObject)
		if err != nil {
			return err
		}
		signer, err := signedBy(raw)
		if err != nil {
			return err
		}
		if !slices.Contains(signers, shown(signer)) {
			signers = append(signers, shown(signer))
		}
		return nil
	}
	if mode != v1alpha1.VerifyHEAD && !pinned {
		if rev.TagObject == "" {
			return refuse("tag "+rev.Ref, fmt.Errorf("it is a lightweight tag or no tag, which carries no signature (verify.mode %s)", mode))
		}
		if err := check(plumbing.TagObject, rev.TagObject, v.Keys.Tag); err != nil {
			return refuse("tag "+rev.Ref, err)
		}
	}
	if mode != v1alpha1.VerifyTag || pinned {
		if err := check(plumbing.CommitObject, rev.Commit, v.Keys.Commit); err != nil {
			return refuse("commit "+rev.Commit, err)
		}
	}
	rev.Signer = strings.Join(signers, "; ")
	s.verdicts.store(key, rev.Signer)
	return rev, nil
}

// maxVerdicts bounds the verdicts kept; past it they are all dropped, and
// each is made again at its next fetch.
const maxVerdicts = 4096

// verdicts keeps, by what was verified (the mode, the commit, the tag object,
// the keys' digest), the signers of a revision that passed: a verdict is a
// function of the objects and the keys alone, so a converged Sync's poll
// reads and checks no signature (BenchmarkVerifiedPoll measures both).
// Refusals are not kept: they are checked at each fetch.
type verdicts struct {
	mu gosync.Mutex
	m  map[string]string
}

func (v *verdicts) load(key string) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	signer, ok := v.m[key]
	return signer, ok
}

func (v *verdicts) store(key, signer string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil || len(v.m) >= maxVerdicts {
		v.m = map[string]string{}
	}
	v.m[key] = signer
}

// maxSigner bounds how a signer is shown, in bytes.
const maxSigner = 256

// shown is a signer as status shows it: one line, bounded. The identity comes
// from the trusted keys, which the Sync's namespace wrote, so it is made as
// safe to print as a commit's subject.
func shown(s verify.Signer) string {
	return OneLine(s.String(), maxSigner)
}
