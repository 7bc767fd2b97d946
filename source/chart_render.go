package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"

	"tether.dev/tether/source/chartrepo"
	"tether.dev/tether/source/render"
)

// errPackageGone is the cause of a RenderChart of a package the cache no longer
// holds: FetchChart downloads it again.
var errPackageGone = errors.New("the chart's package is no longer in the agent's cache; it is downloaded again at the next fetch")

// RenderChart renders the packaged chart FetchChart returned as rev, as helm
// says, through the same path as a chart in git (renderChart: values layered,
// templates guarded, output bounded), after unpacking the package within its
// bounds (unpackChart). The Snapshot's Revision carries Digest, the SHA-256 of
// the package and of what of helm changes the render (the values among it), so
// that status reports "podinfo@6.14.1+sha256:<digest>" and a values change is
// a new revision. Results are cached as renders of git are.
func (s *Source) RenderChart(ctx context.Context, rev Revision, helm Helm) (*Snapshot, error) {
	pkg, ok := s.charts.Package(rev)
	if !ok {
		return nil, &FetchError{URL: rev.URL, Ref: rev.Ref, Reason: ReasonChartRepositoryFailed, Err: errPackageGone}
	}
	digest := helm.Digest()
	key := "chart\x00" + chartrepo.PackageKey(rev) + "\x00helm:" + digest
	rev.Digest = chartDigest(rev.Package, digest)
	if err := s.renders.Failure(key); err != nil {
		return nil, err
	}
	r, ok := s.renders.Get(key)
	if !ok {
		in := renderInput{rev: rev, dir: rev.Ref, helm: &helm, pkg: pkg, tenant: TenantOf(ctx)}
		var err error
		if in.caps, err = render.ReadCapabilities(ctx, helm); err != nil {
			return nil, err
		}
		if r, err = s.render(ctx, in, key); err != nil {
			return nil, err
		}
	}
	return &Snapshot{Revision: rev, Path: rev.Ref, Objects: r.ForCaller()}, nil
}

// chartDigest is the digest a packaged chart's revision reports: of the
// package and of the helm input it rendered with.
func chartDigest(pkg, helm string) string {
	sum := sha256.Sum256([]byte(pkg + "\x00" + helm))
	return hex.EncodeToString(sum[:])
}
