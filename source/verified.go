package source

import (
	"fmt"
	"slices"
	"strings"

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
	var signers []string
	pinned := req.Ref.Commit != ""
	if mode != v1alpha1.VerifyHEAD && !pinned {
		if rev.TagObject == "" {
			return refuse("tag "+rev.Ref, fmt.Errorf("it is a lightweight tag or no tag, which carries no signature (verify.mode %s)", mode))
		}
		raw, err := s.git.RawObject(req.URL, plumbing.TagObject, rev.TagObject, verify.MaxObject)
		if err != nil {
			return refuse("tag "+rev.Ref, err)
		}
		signer, err := v.Keys.Tag(raw)
		if err != nil {
			return refuse("tag "+rev.Ref, err)
		}
		signers = append(signers, shown(signer))
	}
	if mode != v1alpha1.VerifyTag || pinned {
		raw, err := s.git.RawObject(req.URL, plumbing.CommitObject, rev.Commit, verify.MaxObject)
		if err != nil {
			return refuse("commit "+rev.Commit, err)
		}
		signer, err := v.Keys.Commit(raw)
		if err != nil {
			return refuse("commit "+rev.Commit, err)
		}
		if !slices.Contains(signers, shown(signer)) {
			signers = append(signers, shown(signer))
		}
	}
	rev.Signer = strings.Join(signers, "; ")
	return rev, nil
}

// maxSigner bounds how a signer is shown, in bytes.
const maxSigner = 256

// shown is a signer as status shows it: one line, bounded. The identity comes
// from the trusted keys, which the Sync's namespace wrote, so it is made as
// safe to print as a commit's subject.
func shown(s verify.Signer) string {
	return OneLine(s.String(), maxSigner)
}
