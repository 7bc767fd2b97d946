package git

import (
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-git/v5/plumbing"
)

// NewestTag returns the tag with the highest version that satisfies the range,
// from a remote's refs. Tags that are not versions are ignored; a leading "v" is
// allowed ("v1.2.3"). Pre-releases match only a range that names a pre-release,
// the rule of npm and Flux. Two tags of one version ("1.2.0" and "v1.2.0") resolve
// to the one that sorts first, so the choice is stable.
func NewestTag(refs []*plumbing.Reference, constraint *semver.Constraints) (string, bool) {
	var best *semver.Version
	var bestTag string
	for _, r := range refs {
		if !r.Name().IsTag() || strings.HasSuffix(r.Name().String(), "^{}") {
			continue
		}
		tag := r.Name().Short()
		v, err := semver.NewVersion(tag)
		if err != nil || !constraint.Check(v) {
			continue
		}
		if best == nil || v.GreaterThan(best) || (v.Equal(best) && tag < bestTag) {
			best, bestTag = v, tag
		}
	}
	return bestTag, best != nil
}

// ParseRange parses a semver range such as ">=1.2 <2" or "~1.4".
func ParseRange(r string) (*semver.Constraints, error) {
	c, err := semver.NewConstraint(r)
	if err != nil {
		return nil, fmt.Errorf("semver range %q: %w", r, err)
	}
	return c, nil
}
