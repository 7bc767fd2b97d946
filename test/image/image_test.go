package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/test/agentbin/tetherbin"
	"tether.dev/tether/test/ociregistry"
)

// The labels the test asks imagegen for, and the time every file carries.
const (
	version  = "v0.0.0-imagetest"
	revision = "0123456789abcdef0123456789abcdef01234567"
	source   = "https://github.com/tether-dev/tether"
	created  = "2026-11-01T12:00:00Z"
)

// Media types the image and its SBOM are read as.
const (
	indexType    = "application/vnd.oci.image.index.v1+json"
	manifestType = "application/vnd.oci.image.manifest.v1+json"
	sbomType     = "application/spdx+json"
)

type descriptor struct {
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType"`
	Digest       string            `json:"digest"`
	Size         int64             `json:"size"`
	Annotations  map[string]string `json:"annotations"`
	Platform     *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

type manifest struct {
	MediaType    string            `json:"mediaType"`
	ArtifactType string            `json:"artifactType"`
	Config       descriptor        `json:"config"`
	Layers       []descriptor      `json:"layers"`
	Manifests    []descriptor      `json:"manifests"`
	Subject      *descriptor       `json:"subject"`
	Annotations  map[string]string `json:"annotations"`
}

type config struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
	Created      string `json:"created"`
	Config       struct {
		User       string            `json:"User"`
		Entrypoint []string          `json:"Entrypoint"`
		Cmd        []string          `json:"Cmd"`
		Labels     map[string]string `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func TestTheImageReadBackFromARegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent and the image and runs a registry; skipped with -short")
	}
	reg := ociregistry.Start(t)
	host := strings.TrimSuffix(strings.TrimPrefix(reg.Repository, "oci://"), "/charts")
	dir := t.TempDir()
	binary, imagegen := filepath.Join(dir, "tether"), filepath.Join(dir, "imagegen")
	if err := tetherbin.Build(binary); err != nil {
		t.Fatalf("building the tether binary: %v", err)
	}
	buildImagegen(t, imagegen)

	ref := host + "/tether/agent:" + version
	digestFile := filepath.Join(dir, "digest")
	imagegenRun(t, imagegen, binary, "-push", ref, "-digest-file", digestFile)
	pinned, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	repo, digest, _ := strings.Cut(strings.TrimSpace(string(pinned)), "@")
	if repo != host+"/tether/agent" || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("imagegen wrote the pinned reference %q, want %s/tether/agent@sha256:...", pinned, host)
	}
	r := registry{t: t, base: "http://" + host + "/v2/tether/agent"}

	var index manifest
	t.Run("the tag names the index by the digest imagegen printed", func(t *testing.T) {
		body, got := r.manifest(version, indexType)
		if got != digest || sha(body) != digest {
			t.Fatalf("the tag's digest is %s (its body's %s), imagegen printed %s", got, sha(body), digest)
		}
		decode(t, body, &index)
		if index.MediaType != indexType || len(index.Manifests) != 1 {
			t.Fatalf("want an OCI index of one image (this arch only), got %s of %d", index.MediaType, len(index.Manifests))
		}
		p := index.Manifests[0].Platform
		if p == nil || p.OS != "linux" || p.Architecture != runtime.GOARCH {
			t.Fatalf("the index's image is for %+v, want linux/%s", p, runtime.GOARCH)
		}
		checkLabels(t, "the index's annotations", index.Annotations)
	})
	if len(index.Manifests) != 1 {
		t.FailNow()
	}

	body, _ := r.manifest(index.Manifests[0].Digest, manifestType)
	var img manifest
	decode(t, body, &img)
	t.Run("the config runs the binary as the non-root user, labelled", func(t *testing.T) {
		var cfg config
		decode(t, r.blob(img.Config.Digest), &cfg)
		want := []string{"65532:65532", "/usr/local/bin/tether", "controller", "linux", runtime.GOARCH, created}
		got := []string{cfg.Config.User, strings.Join(cfg.Config.Entrypoint, " "), strings.Join(cfg.Config.Cmd, " "), cfg.OS, cfg.Architecture, cfg.Created}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("user, entrypoint, cmd, os, arch, created (-want +got):\n%s", diff)
		}
		checkLabels(t, "the config's labels", cfg.Config.Labels)
		checkLabels(t, "the manifest's annotations", img.Annotations)
		if len(cfg.RootFS.DiffIDs) != len(img.Layers) {
			t.Errorf("the config names %d layers, the manifest %d", len(cfg.RootFS.DiffIDs), len(img.Layers))
		}
	})
	t.Run("the layers hold the users, the CA roots, /tmp and the binary", func(t *testing.T) {
		files := map[string]*tar.Header{}
		contents := map[string][]byte{}
		for _, l := range img.Layers {
			readLayer(t, r.blob(l.Digest), files, contents)
		}
		if !strings.Contains(string(contents["etc/passwd"]), "nonroot:x:65532:65532:") || !strings.Contains(string(contents["etc/group"]), "nonroot:x:65532:") {
			t.Errorf("etc/passwd and etc/group lack the user 65532:\n%s%s", contents["etc/passwd"], contents["etc/group"])
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(contents["etc/ssl/certs/ca-certificates.crt"]) || len(pool.Subjects()) < 100 { //nolint:staticcheck // counting, not verifying
			t.Errorf("etc/ssl/certs/ca-certificates.crt holds %d roots, want the Mozilla bundle (over 100)", len(pool.Subjects())) //nolint:staticcheck // counting
		}
		if h := files["tmp/"]; h == nil || h.Mode != 0o1777 {
			t.Errorf("want /tmp with mode 1777, got %+v", h)
		}
		built, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		h := files["usr/local/bin/tether"]
		if h == nil || h.Mode != 0o755 || sha(contents["usr/local/bin/tether"]) != sha(built) {
			t.Errorf("usr/local/bin/tether is not the built binary with mode 0755: %+v", h)
		}
		for name, h := range files {
			if !h.ModTime.Equal(mustTime(t, created)) {
				t.Errorf("%s has the time %v, want %s (a reproducible build)", name, h.ModTime, created)
			}
		}
	})
	t.Run("an SPDX SBOM of the binary's modules refers to the index", func(t *testing.T) {
		sbom := r.sbomFor(digest)
		if sbom.Subject == nil || sbom.Subject.Digest != digest || sbom.ArtifactType != sbomType || len(sbom.Layers) != 1 {
			t.Fatalf("want an %s artifact of one layer whose subject is %s, got %+v", sbomType, digest, sbom)
		}
		var doc struct {
			SPDXVersion string `json:"spdxVersion"`
			Packages    []struct {
				Name string `json:"name"`
			} `json:"packages"`
		}
		decode(t, r.blob(sbom.Layers[0].Digest), &doc)
		names := map[string]bool{}
		for _, p := range doc.Packages {
			names[p.Name] = true
		}
		for _, want := range []string{"tether.dev/tether", "stdlib", "k8s.io/client-go", "sigs.k8s.io/controller-runtime", "golang.org/x/crypto/x509roots/fallback"} {
			if !names[want] {
				t.Errorf("the SBOM (%s, %d packages) lacks %s", doc.SPDXVersion, len(doc.Packages), want)
			}
		}
		if doc.SPDXVersion != "SPDX-2.3" {
			t.Errorf("spdxVersion %q, want SPDX-2.3", doc.SPDXVersion)
		}
	})
	t.Run("a second build into an OCI layout gives the same digest", func(t *testing.T) {
		layout := filepath.Join(dir, "layout")
		imagegenRun(t, imagegen, binary, "-layout", layout)
		var idx manifest
		b, err := os.ReadFile(filepath.Join(layout, "index.json"))
		if err != nil {
			t.Fatal(err)
		}
		decode(t, b, &idx)
		var digests []string
		for _, m := range idx.Manifests {
			digests = append(digests, m.Digest)
		}
		if len(idx.Manifests) != 2 || idx.Manifests[0].Digest != digest || idx.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
			t.Errorf("the layout's index.json names %v, want the pushed index %s (named %s) and its SBOM", digests, digest, version)
		}
	})
}

// TestTheChartPushedAsHelmPushesIt pushes a chart package with imagegen -chart
// (make release pushes deploy/chart's package so) and reads it back as Helm and
// Tether's OCI chart source read it: tagged with its version, "+" written "_",
// Chart.yaml as the JSON config, the package the one layer, byte for byte.
func TestTheChartPushedAsHelmPushesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a registry; skipped with -short")
	}
	reg := ociregistry.Start(t)
	host := strings.TrimSuffix(strings.TrimPrefix(reg.Repository, "oci://"), "/charts")
	dir := t.TempDir()
	imagegen := filepath.Join(dir, "imagegen")
	buildImagegen(t, imagegen)
	pkg := filepath.Join(dir, "tether-1.2.3+build.4.tgz")
	data := chartPackage(t, "apiVersion: v2\nname: tether\nversion: 1.2.3+build.4\nappVersion: v1.2.3\ndescription: a test\n")
	if err := os.WriteFile(pkg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(imagegen, "-chart", pkg, "-push", host+"/charts/tether").CombinedOutput()
	if err != nil {
		t.Fatalf("imagegen -chart: %v\n%s", err, out)
	}
	r := registry{t: t, base: "http://" + host + "/v2/charts/tether"}
	body, digest := r.manifest("1.2.3_build.4", manifestType)
	if !strings.Contains(string(out), "@"+digest) {
		t.Errorf("imagegen printed %q, not the pushed digest %s", out, digest)
	}
	var m manifest
	decode(t, body, &m)
	if m.Config.MediaType != ociregistry.ConfigType || len(m.Layers) != 1 || m.Layers[0].MediaType != ociregistry.ChartLayerType {
		t.Fatalf("the chart's manifest is not Helm's: %s", body)
	}
	var meta map[string]any
	decode(t, r.blob(m.Config.Digest), &meta)
	if meta["name"] != "tether" || meta["version"] != "1.2.3+build.4" || meta["appVersion"] != "v1.2.3" {
		t.Errorf("the chart's config is %v, want Chart.yaml's name, version and appVersion", meta)
	}
	if got := r.blob(m.Layers[0].Digest); !bytes.Equal(got, data) {
		t.Error("the chart's layer is not the package pushed")
	}
	if out, err := exec.Command(imagegen, "-chart", pkg, "-push", host+"/charts/tether:9.9.9").CombinedOutput(); err == nil {
		t.Errorf("imagegen pushed the chart 1.2.3+build.4 under the tag 9.9.9: %s", out)
	}
}

// chartPackage is a chart package holding only tether/Chart.yaml.
func chartPackage(t *testing.T, chartYAML string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: "tether/Chart.yaml", Mode: 0o644, Size: int64(len(chartYAML))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(chartYAML)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// buildImagegen builds hack/imagegen, its own module, into path.
func buildImagegen(t *testing.T, path string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", path, ".")
	cmd.Dir = filepath.Join("..", "..", "hack", "imagegen")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building hack/imagegen: %v\n%s", err, out)
	}
}

// imagegenRun packs binary for this machine's architecture with the test's
// labels, and the output flags given.
func imagegenRun(t *testing.T, imagegen, binary string, output ...string) {
	t.Helper()
	args := append([]string{"-platform", "linux/" + runtime.GOARCH + "=" + binary,
		"-version", version, "-revision", revision, "-source", source, "-created", created}, output...)
	cmd := exec.Command(imagegen, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("imagegen %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func checkLabels(t *testing.T, what string, got map[string]string) {
	t.Helper()
	want := map[string]string{
		"org.opencontainers.image.source":   source,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.created":  created,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
}

// registry reads one repository over the distribution API.
type registry struct {
	t    *testing.T
	base string
}

func (r registry) get(path, accept string) (*http.Response, []byte) {
	r.t.Helper()
	req, err := http.NewRequestWithContext(r.t.Context(), http.MethodGet, r.base+path, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("GET %s: %v", req.URL, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("GET %s: %v", req.URL, err)
	}
	return resp, body
}

// manifest returns the manifest ref names and the digest the registry gives it.
func (r registry) manifest(ref, accept string) ([]byte, string) {
	r.t.Helper()
	resp, body := r.get("/manifests/"+ref, accept)
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("manifest %s: %s: %.300s", ref, resp.Status, body)
	}
	return body, resp.Header.Get("Docker-Content-Digest")
}

func (r registry) blob(digest string) []byte {
	r.t.Helper()
	resp, body := r.get("/blobs/"+digest, "")
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("blob %s: %s", digest, resp.Status)
	}
	if sha(body) != digest {
		r.t.Fatalf("blob %s has the digest %s", digest, sha(body))
	}
	return body
}

// sbomFor finds the SBOM among subject's referrers: through the referrers API
// where the registry has it, else under the referrers tag schema's tag.
func (r registry) sbomFor(subject string) manifest {
	r.t.Helper()
	resp, body := r.get("/referrers/"+subject, indexType)
	if resp.StatusCode != http.StatusOK {
		body, _ = r.manifest(strings.Replace(subject, ":", "-", 1), indexType)
	}
	var referrers manifest
	decode(r.t, body, &referrers)
	for _, d := range referrers.Manifests {
		if d.ArtifactType == sbomType {
			b, _ := r.manifest(d.Digest, manifestType)
			var m manifest
			decode(r.t, b, &m)
			return m
		}
	}
	r.t.Fatalf("no referrer of %s is an %s: %s", subject, sbomType, body)
	return manifest{}
}

func readLayer(t *testing.T, blob []byte, files map[string]*tar.Header, contents map[string][]byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		t.Fatalf("a layer is not gzipped: %v", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = h
		if contents[h.Name], err = io.ReadAll(tr); err != nil {
			t.Fatal(err)
		}
	}
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %T: %v: %.300s", v, err, b)
	}
}

func sha(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}
