package source_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/ociregistry"
	"tether.dev/tether/test/signing"
)

// configMap is a manifest of a ConfigMap name whose data.greeting is greeting.
func artifactConfigMap(name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  greeting: %q\n", name, greeting)
}

// artifactURL is the oci:// URL of repository charts/<name> of reg.
func artifactURL(reg *ociregistry.Server, name string) string {
	return reg.Repository + "/" + name
}

// renderArtifact fetches req and renders dir of it, failing the test on error.
func renderArtifact(t *testing.T, src *source.Source, req source.ArtifactRequest, dir string) (source.Revision, map[string]string) {
	t.Helper()
	rev, err := src.FetchArtifact(t.Context(), req)
	if err != nil {
		t.Fatalf("FetchArtifact %s: %v", req.Label(), err)
	}
	snap, err := src.RenderSelected(t.Context(), rev, dir, source.Directory{}, source.Helm{}, nil)
	if err != nil {
		t.Fatalf("rendering %s of %s: %v", dir, rev, err)
	}
	greetings := map[string]string{}
	for _, o := range snap.Objects {
		greetings[o.GetName()] = stringMap(o.Object, "data")["greeting"]
	}
	return rev, greetings
}

func TestAFluxArtifactRendersByTagBySemverAndByDigest(t *testing.T) {
	reg := ociregistry.Start(t)
	src := newSource(t, source.Options{})
	url := artifactURL(reg, "deploy")
	digests := map[string]string{}
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		layer := ociregistry.Tarball(t, map[string]string{
			"apps/web.yaml":           artifactConfigMap("web", v),
			"apps/kustomization.yaml": "resources: [web.yaml]\n",
			"README.md":               "not a manifest",
			"other/ignored.yaml":      artifactConfigMap("other", v),
		})
		digests[v] = reg.PushFluxArtifact(t, "deploy", "v"+v, layer)
	}

	rev, got := renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{Tag: "v1.0.0"}}, "apps")
	if want := "v1.0.0@" + digests["1.0.0"]; rev.String() != want || got["web"] != "1.0.0" || len(got) != 1 {
		t.Fatalf("tag v1.0.0 rendered %v as %s; want web greeting 1.0.0 as %s", got, rev, want)
	}
	rev, got = renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{SemVer: "1.x"}}, "apps")
	if want := "v1.1.0@" + digests["1.1.0"]; rev.String() != want || got["web"] != "1.1.0" {
		t.Fatalf("semver 1.x rendered %v as %s; want 1.1.0 as %s", got, rev, want)
	}
	rev, got = renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{Digest: digests["2.0.0"]}}, "apps")
	if rev.String() != digests["2.0.0"] || got["web"] != "2.0.0" {
		t.Fatalf("digest %s rendered %v as %s; want 2.0.0 pinned by its digest", digests["2.0.0"], got, rev)
	}

	t.Run("a new tag in range is followed, a tag pushed again is followed", func(t *testing.T) {
		digests["1.2.0"] = reg.PushFluxArtifact(t, "deploy", "v1.2.0", ociregistry.Tarball(t, map[string]string{"apps/web.yaml": artifactConfigMap("web", "1.2.0")}))
		rev, got := renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{SemVer: "1.x"}}, "apps")
		if rev.Ref != "v1.2.0" || got["web"] != "1.2.0" {
			t.Fatalf("after v1.2.0 was pushed, 1.x rendered %v as %s; want v1.2.0", got, rev)
		}
		moved := reg.PushFluxArtifact(t, "deploy", "v1.0.0", ociregistry.Tarball(t, map[string]string{"apps/web.yaml": artifactConfigMap("web", "moved")}))
		rev, got = renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{Tag: "v1.0.0"}}, "apps")
		if rev.String() != "v1.0.0@"+moved || got["web"] != "moved" {
			t.Fatalf("after v1.0.0 was pushed again, it rendered %v as %s; want moved as v1.0.0@%s", got, rev, moved)
		}
	})

	t.Run("one listing per interval, one download per digest", func(t *testing.T) {
		// What was learnt of the tags is forgotten (a push was told): the
		// first fetch lists them, the next two answer from that list.
		src.Refresh(url)
		before := reg.Requests("blobs")
		lists := reg.Requests("tags")
		for range 3 {
			renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{SemVer: ">=1.1 <2"}, MaxAge: 1 << 40}, "apps")
		}
		if got := reg.Requests("tags") - lists; got != 1 {
			t.Errorf("three fetches within the interval listed the tags %d times; want once", got)
		}
		if got := reg.Requests("blobs") - before; got != 0 {
			t.Errorf("fetching an artifact unpacked before read %d blobs; want none (it is kept per digest)", got)
		}
	})

	t.Run("nothing in range, no such tag, no such repository", func(t *testing.T) {
		for _, req := range []source.ArtifactRequest{
			{URL: url, Ref: v1alpha1.OCIRef{SemVer: "3.x"}},
			{URL: url, Ref: v1alpha1.OCIRef{Tag: "v9"}},
			{URL: artifactURL(reg, "nothing"), Ref: v1alpha1.OCIRef{Tag: "v1"}},
		} {
			_, err := src.FetchArtifact(t.Context(), req)
			var fe *source.FetchError
			if !errors.As(err, &fe) || (fe.Reason != v1alpha1.ReasonNoMatchingTag && fe.Reason != v1alpha1.ReasonRepositoryNotFound) || !strings.Contains(err.Error(), req.Label()) {
				t.Errorf("%s %s: %v; want NoMatchingTag or RepositoryNotFound naming %s", req.URL, req.Label(), err, req.Label())
			}
		}
	})
}

func TestAPlainTarballArtifactRendersAndAnUnpackedOneSurvivesARestart(t *testing.T) {
	reg := ociregistry.Start(t)
	cache := t.TempDir()
	src := newSource(t, source.Options{CacheDir: cache})
	reg.PushTarballArtifact(t, "plain", "latest", ociregistry.Tarball(t, map[string]string{"./web.yaml": artifactConfigMap("web", "plain")}))
	req := source.ArtifactRequest{URL: artifactURL(reg, "plain")}
	rev, got := renderArtifact(t, src, req, ".")
	if rev.Ref != "latest" || got["web"] != "plain" {
		t.Fatalf("a plain tarball's tag latest (the default) rendered %v as %s; want web greeting plain", got, rev)
	}
	// A restarted agent renders the revision it applied from its cache,
	// without the registry: the artifact is on disk under its digest.
	again := newSource(t, source.Options{CacheDir: cache})
	snap, err := again.RenderSelected(t.Context(), rev, ".", source.Directory{}, source.Helm{}, nil)
	if err != nil || len(snap.Objects) != 1 {
		t.Fatalf("a new Source on the same cache rendered %s: %v; want the artifact from disk", rev, err)
	}
}

// hostileTar is a gzipped tar written entry by entry, as an attacker would.
func hostileTar(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("a"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = tw.Close()
	_ = gz.Close()
	return buf.Bytes()
}

func TestAnArtifactIsUnpackedWithinTheBoundsOfACommit(t *testing.T) {
	reg := ociregistry.Start(t)
	src := newSource(t, source.Options{MaxFileSize: 1 << 20, MaxTreeSize: 2 << 20, MaxTreeEntries: 100})
	cases := map[string]struct {
		layer  []byte
		reason string
		says   string
	}{
		"climbs out": {hostileTar(t, &tar.Header{Name: "../../etc/x.yaml", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), "", "leaves the artifact's directory"},
		"absolute":   {hostileTar(t, &tar.Header{Name: "/etc/x.yaml", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), "", "leaves the artifact's directory"},
		"a link":     {hostileTar(t, &tar.Header{Name: "x.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), "", "is a link"},
		"a big file": {hostileTar(t, &tar.Header{Name: "big.yaml", Typeflag: tar.TypeReg, Size: 2 << 20, Mode: 0o644}), v1alpha1.ReasonRenderLimitExceeded, "over the limit"},
		"too much": {hostileTar(t, &tar.Header{Name: "a.yaml", Typeflag: tar.TypeReg, Size: 1 << 20, Mode: 0o644},
			&tar.Header{Name: "b.yaml", Typeflag: tar.TypeReg, Size: 1 << 20, Mode: 0o644},
			&tar.Header{Name: "c.yaml", Typeflag: tar.TypeReg, Size: 1 << 20, Mode: 0o644}), v1alpha1.ReasonRenderLimitExceeded, "more than"},
		"twice":     {hostileTar(t, &tar.Header{Name: "a.yaml", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}, &tar.Header{Name: "./a.yaml", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}), "", "written twice"},
		"not a tar": {[]byte("\x1f\x8bnot gzip at all"), "", "not a gzipped tar"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			repo := strings.ReplaceAll(name, " ", "-")
			reg.PushFluxArtifact(t, repo, "v1", c.layer)
			_, err := src.FetchArtifact(t.Context(), source.ArtifactRequest{URL: artifactURL(reg, repo), Ref: v1alpha1.OCIRef{Tag: "v1"}})
			var re *source.RenderError
			if !errors.As(err, &re) || re.Reason != c.reason || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%v; want a RenderError (reason %q) saying %q", err, c.reason, c.says)
			}
			// The layer's content never changes: it is refused again
			// without being downloaded again.
			blobs := reg.Requests("blobs")
			_, again := src.FetchArtifact(t.Context(), source.ArtifactRequest{URL: artifactURL(reg, repo), Ref: v1alpha1.OCIRef{Tag: "v1"}})
			if again == nil || again.Error() != err.Error() || reg.Requests("blobs") != blobs {
				t.Errorf("fetched again: %v after %d more blob reads; want the same refusal and none", again, reg.Requests("blobs")-blobs)
			}
		})
	}
}

func TestAnArtifactIsAppliedOnlyWhenATrustedCosignKeySignedIt(t *testing.T) {
	reg := ociregistry.Start(t)
	src := newSource(t, source.Options{})
	ci, other := signing.NewCosignKey(t), signing.NewCosignKey(t)
	keys, err := source.ParseCosignKeys(map[string][]byte{"ci.pub": ci.Public})
	if err != nil {
		t.Fatal(err)
	}
	url := artifactURL(reg, "signed")
	req := source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{Tag: "v1"}, Keys: keys}
	digest := reg.PushFluxArtifact(t, "signed", "v1", ociregistry.Tarball(t, map[string]string{"web.yaml": artifactConfigMap("web", "signed")}))
	subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: godigest.Digest(digest)}
	sign := func(t *testing.T, key *signing.CosignKey) {
		sig := key.SignatureManifest(t, reg.Host()+"/charts/signed", subject)
		reg.PushSignature(t, "signed", sig.Tag, map[string][]byte{sig.ConfigDescriptor.MediaType: sig.Config, sig.PayloadDescriptor.MediaType: sig.Payload}, sig.Manifest)
	}
	refused := func(t *testing.T, says string) {
		t.Helper()
		_, err := src.FetchArtifact(t.Context(), req)
		var fe *source.FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonRevisionNotVerified || !strings.Contains(err.Error(), digest) || !strings.Contains(err.Error(), says) {
			t.Fatalf("%v; want RevisionNotVerified naming %s and saying %q", err, digest, says)
		}
	}

	t.Run("unsigned, it is refused naming its digest", func(t *testing.T) { refused(t, "not signed") })
	t.Run("signed by a key the Secret does not hold, it is refused", func(t *testing.T) {
		sign(t, other)
		refused(t, "trusted")
	})
	t.Run("signed by the trusted key, it applies and names its signer", func(t *testing.T) {
		sign(t, ci)
		rev, got := renderArtifact(t, src, req, ".")
		if got["web"] != "signed" || !strings.Contains(rev.Signer, "ci.pub") {
			t.Fatalf("rendered %v signed by %q; want web signed by ci.pub", got, rev.Signer)
		}
		// Without keys, nothing is checked and nobody named.
		if rev, _ := renderArtifact(t, src, source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{Tag: "v1"}}, "."); rev.Signer != "" {
			t.Errorf("an unverified fetch names signer %q", rev.Signer)
		}
	})
}
