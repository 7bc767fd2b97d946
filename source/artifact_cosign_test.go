package source_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/ociregistry"
)

// This file checks source/cosign against the real cosign CLI, where
// artifact_test.go signs with test/signing (Go written from cosign's
// documented format): a format read from the documentation alone could agree
// with itself and not with the tool. `make test-cosign` builds the pinned
// cosign (hack/cosign.sh) and runs it; make test leaves it out, as the cold
// build is too slow for its budget.

// realCosign is the cosign binary TETHER_COSIGN names; the test is skipped
// without it.
func realCosign(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TETHER_COSIGN")
	if bin == "" {
		t.Skip("checks artifacts signed by the real cosign CLI: set TETHER_COSIGN to its binary (`make test-cosign` builds cosign v2.6.5 and sets it)")
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		t.Fatalf("TETHER_COSIGN=%s: %v (an absolute path, or a name on PATH: go test runs in the package's directory)", bin, err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// cosignCLI runs the real cosign in a home of its own: no credentials, no
// Sigstore cache and no key of the user's are read or written.
type cosignCLI struct {
	bin  string
	home string
}

func newCosignCLI(t *testing.T) *cosignCLI {
	t.Helper()
	return &cosignCLI{bin: realCosign(t), home: t.TempDir()}
}

// run runs cosign with args in dir, failing the test with its output on
// error; the password of cosign.key is empty.
func (c *cosignCLI) run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), c.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COSIGN_PASSWORD=", "HOME="+c.home,
		"DOCKER_CONFIG="+filepath.Join(c.home, ".docker"), "TUF_ROOT="+filepath.Join(c.home, ".sigstore"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// cosignKeyPair is a key pair `cosign generate-key-pair` wrote in dir.
type cosignKeyPair struct {
	dir    string
	public []byte
}

func (c *cosignCLI) generateKeyPair(t *testing.T) cosignKeyPair {
	t.Helper()
	dir := t.TempDir()
	c.run(t, dir, "generate-key-pair")
	public, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
	if err != nil {
		t.Fatal(err)
	}
	return cosignKeyPair{dir: dir, public: public}
}

// sign signs the artifact ref ("host/path@sha256:…", by digest, as cosign
// advises) with key, uploading nothing to a transparency log, and logs the
// command; more are further flags (--new-bundle-format).
func (c *cosignCLI) sign(t *testing.T, key cosignKeyPair, ref string, more ...string) {
	t.Helper()
	args := append([]string{"sign", "--key", "cosign.key", "--tlog-upload=false", "--yes", "--allow-insecure-registry"}, more...)
	args = append(args, ref)
	t.Logf("cosign %s", strings.Join(args, " "))
	c.run(t, key.dir, args...)
}

// registryGet is what the registry answers a GET of path (under /v2/) through
// its proxy: what cosign wrote, for a failure's message (read in a cleanup,
// after t.Context is done).
func registryGet(t *testing.T, reg *ociregistry.Server, path string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(context.WithoutCancel(t.Context()), http.MethodGet, "http://"+reg.Host()+"/v2/"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return resp.Status + " " + resp.Header.Get("Content-Type") + "\n" + string(body)
}

// describeReferrers logs, if t fails, how cosign attached its bundle to
// charts/<name>@digest: the registry's referrers API answer, and the index
// of the referrers tag schema (sha256-<hex>) with each manifest it lists.
func describeReferrers(t *testing.T, reg *ociregistry.Server, name, digest string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		repo := "charts/" + name + "/"
		t.Logf("the referrers API: %s", registryGet(t, reg, repo+"referrers/"+digest))
		index := registryGet(t, reg, repo+"manifests/"+strings.Replace(digest, ":", "-", 1))
		t.Logf("the referrers tag schema's index: %s", index)
		var idx struct{ Manifests []struct{ Digest string } }
		_, body, _ := strings.Cut(index, "\n")
		_ = json.Unmarshal([]byte(body), &idx)
		for _, m := range idx.Manifests {
			t.Logf("referrer %s: %s", m.Digest, registryGet(t, reg, repo+"manifests/"+m.Digest))
		}
	})
}

// registryTags lists the tags of charts/<name>.
func registryTags(t *testing.T, reg *ociregistry.Server, name string) []string {
	t.Helper()
	var list struct {
		Tags []string `json:"tags"`
	}
	answer := registryGet(t, reg, "charts/"+name+"/tags/list")
	_, body, _ := strings.Cut(answer, "\n")
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("tags of charts/%s: %v: %s", name, err, answer)
	}
	return list.Tags
}

func TestAnArtifactSignedByTheRealCosignIsAppliedOnlyWithATrustedKey(t *testing.T) {
	cli := newCosignCLI(t)
	reg := ociregistry.Start(t)
	src := newSource(t, source.Options{})
	ci, other := cli.generateKeyPair(t), cli.generateKeyPair(t)
	keys, err := source.ParseCosignKeys(map[string][]byte{"ci.pub": ci.public})
	if err != nil {
		t.Fatalf("cosign.pub as cosign generate-key-pair wrote it: %v", err)
	}
	// push pushes a Flux artifact to charts/<name>, tagged v1, and returns
	// the request of it with the trusted keys and its reference by digest.
	push := func(t *testing.T, name string) (source.ArtifactRequest, string, string) {
		t.Helper()
		digest := reg.PushFluxArtifact(t, name, "v1", ociregistry.Tarball(t, map[string]string{"web.yaml": artifactConfigMap("web", name)}))
		req := source.ArtifactRequest{URL: artifactURL(reg, name), Ref: v1alpha1.OCIRef{Tag: "v1"}, Keys: keys}
		return req, reg.Host() + "/charts/" + name + "@" + digest, digest
	}
	refused := func(t *testing.T, req source.ArtifactRequest, digest, says string) {
		t.Helper()
		_, err := src.FetchArtifact(t.Context(), req)
		var fe *source.FetchError
		if !errors.As(err, &fe) || fe.Reason != v1alpha1.ReasonRevisionNotVerified || !strings.Contains(err.Error(), digest) || !strings.Contains(err.Error(), says) {
			t.Fatalf("%v; want RevisionNotVerified naming %s and saying %q", err, digest, says)
		}
	}
	applied := func(t *testing.T, req source.ArtifactRequest, name string) {
		t.Helper()
		rev, got := renderArtifact(t, src, req, ".")
		if got["web"] != name || !strings.Contains(rev.Signer, "ci.pub") {
			t.Fatalf("rendered %v signed by %q; want web %s signed by ci.pub", got, rev.Signer, name)
		}
	}

	t.Run("cosign v2's signature manifest", func(t *testing.T) {
		req, ref, digest := push(t, "simple")
		t.Run("unsigned, it is refused naming its digest", func(t *testing.T) { refused(t, req, digest, "not signed") })
		t.Run("signed by another cosign key, it is refused", func(t *testing.T) {
			cli.sign(t, other, ref)
			refused(t, req, digest, "trusted")
		})
		// cosign adds the second signature as a second layer of the same
		// manifest, after the untrusted one.
		t.Run("signed by the trusted key too, it applies and names its signer", func(t *testing.T) {
			cli.sign(t, ci, ref)
			applied(t, req, "simple")
		})
	})

	t.Run("a Sigstore bundle among the referrers (--new-bundle-format)", func(t *testing.T) {
		t.Run("signed by the trusted key, it applies and names its signer", func(t *testing.T) {
			req, ref, digest := push(t, "bundled")
			cli.sign(t, ci, ref, "--new-bundle-format")
			describeReferrers(t, reg, "bundled", digest)
			for _, tag := range registryTags(t, reg, "bundled") {
				if tag == strings.Replace(digest, ":", "-", 1)+".sig" {
					t.Fatalf("cosign --new-bundle-format wrote the signature manifest %s: the bundle would not be what is verified", tag)
				}
			}
			applied(t, req, "bundled")
		})
		t.Run("signed by another cosign key, it is refused", func(t *testing.T) {
			req, ref, digest := push(t, "bundled-other")
			cli.sign(t, other, ref, "--new-bundle-format")
			describeReferrers(t, reg, "bundled-other", digest)
			refused(t, req, digest, "trusted")
		})
	})
}
