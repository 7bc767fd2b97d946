package source_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
)

// chartRevision is how status names a packaged chart's revision.
var chartRevision = regexp.MustCompile(`^webapp@1\.1\.0\+sha256:[0-9a-f]{64}$`)

func TestAChartFromARepositoryRendersItsNewestMatchWithItsValues(t *testing.T) {
	repo := chartrepo.Start(t, chartrepo.Options{})
	webapp := chartrepo.Chart(t, "webapp")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1"} {
		repo.Publish(t, webapp, v)
	}
	src := newSource(t, source.Options{})
	rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: repo.URL, Name: "webapp", Version: "1.x"})
	if err != nil {
		t.Fatalf("FetchChart: %v", err)
	}
	if rev.Ref != "webapp@1.1.0" || len(rev.Package) != 64 {
		t.Fatalf("FetchChart resolved %+v; want webapp@1.1.0 with its package's SHA-256 (1.2.0-rc.1 is a pre-release, 2.0.0 out of range)", rev)
	}
	helm := source.Helm{ReleaseName: "web", Namespace: "apps", Values: []byte(`{"greeting":"hi"}`)}
	snap, err := src.RenderChart(t.Context(), rev, helm)
	if err != nil {
		t.Fatalf("RenderChart: %v", err)
	}
	if got := snap.Revision.String(); !chartRevision.MatchString(got) {
		t.Errorf("revision %q; want webapp@1.1.0+sha256:<digest>", got)
	}
	if len(snap.Objects) != 1 {
		t.Fatalf("rendered %d objects; want the ConfigMap", len(snap.Objects))
	}
	cm := snap.Objects[0]
	data := stringMap(cm.Object, "data")
	if cm.GetName() != "web-config" || data["greeting"] != "hi" || data["chartVersion"] != "1.1.0" {
		t.Errorf("rendered %s with data %v; want web-config greeting hi chartVersion 1.1.0", cm.GetName(), data)
	}

	t.Run("the same values are the same revision, other values another", func(t *testing.T) {
		again, err := src.RenderChart(t.Context(), rev, helm)
		if err != nil {
			t.Fatal(err)
		}
		helm.Values = []byte(`{"greeting":"bye"}`)
		other, err := src.RenderChart(t.Context(), rev, helm)
		if err != nil {
			t.Fatal(err)
		}
		if again.Revision.String() != snap.Revision.String() || other.Revision.String() == snap.Revision.String() {
			t.Errorf("revisions %s, %s (same values), %s (other values)", snap.Revision, again.Revision, other.Revision)
		}
	})
	t.Run("an exact version and the newest", func(t *testing.T) {
		for version, want := range map[string]string{"1.0.0": "webapp@1.0.0", "": "webapp@2.0.0", ">=1.2.0-0 <2": "webapp@1.2.0-rc.1"} {
			rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: repo.URL, Name: "webapp", Version: version})
			if err != nil || rev.Ref != want {
				t.Errorf("version %q resolved to %q (%v); want %s", version, rev.Ref, err, want)
			}
		}
	})
	t.Run("no version in range, and no such chart", func(t *testing.T) {
		for _, req := range []source.ChartRequest{{Name: "webapp", Version: "3.x"}, {Name: "nothing"}} {
			req.Repository = repo.URL
			_, err := src.FetchChart(t.Context(), req)
			var fe *source.FetchError
			if !errors.As(err, &fe) || fe.Reason != source.ReasonChartNotFound || !strings.Contains(err.Error(), req.Name) {
				t.Errorf("%s %s: %v; want ChartNotFound naming the chart", req.Name, req.Version, err)
			}
		}
	})
}

// stringMap reads the map at key of obj as strings.
func stringMap(obj map[string]any, key string) map[string]string {
	m, _ := obj[key].(map[string]any)
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

func TestAChartIndexIsReadOncePerIntervalAndCredentialsAndAPackageOncePerVersion(t *testing.T) {
	repo := chartrepo.Start(t, chartrepo.Options{})
	webapp := chartrepo.Chart(t, "webapp")
	repo.Publish(t, webapp, "1.0.0")
	src := newSource(t, source.Options{})
	req := source.ChartRequest{Repository: repo.URL, Name: "webapp", Version: "1.x", MaxAge: time.Hour}
	for range 3 {
		if _, err := src.FetchChart(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n, p := repo.Requests("/index.yaml"), repo.Requests("/webapp-1.0.0.tgz"); n != 1 || p != 1 {
		t.Fatalf("three fetches within MaxAge read the index %d times and the package %d times; want once each", n, p)
	}

	repo.Publish(t, webapp, "1.1.0")
	rev, err := src.FetchChart(t.Context(), req)
	if err != nil || rev.Ref != "webapp@1.0.0" {
		t.Fatalf("within MaxAge the index read before is the answer: got %s (%v)", rev.Ref, err)
	}
	withCredentials := req
	withCredentials.Auth = source.Auth{Username: "u", Password: "p"}
	if rev, err = src.FetchChart(t.Context(), withCredentials); err != nil || rev.Ref != "webapp@1.1.0" {
		t.Fatalf("other credentials read the index themselves: got %s (%v)", rev.Ref, err)
	}
	if n := repo.Requests("/index.yaml"); n != 2 {
		t.Errorf("index read %d times; want 2 (one per credentials)", n)
	}
	src.Refresh(repo.URL)
	if rev, err = src.FetchChart(t.Context(), req); err != nil || rev.Ref != "webapp@1.1.0" {
		t.Fatalf("after Refresh the index is read again: got %s (%v)", rev.Ref, err)
	}
	req.MaxAge = 0
	if _, err = src.FetchChart(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n, p := repo.Requests("/index.yaml"), repo.Requests("/webapp-1.1.0.tgz"); n != 4 || p != 1 {
		t.Errorf("index read %d times (want 4: Refresh and MaxAge 0 ask again), 1.1.0's package %d times (want 1)", n, p)
	}
}

// bigFile is incompressible content of n bytes.
func bigFile(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// withFiles is webapp with n more template files of the given content.
func withFiles(t *testing.T, n int, content []byte) *chart.Chart {
	t.Helper()
	c := chartrepo.Chart(t, "webapp")
	for i := range n {
		c.Templates = append(c.Templates, &common.File{Name: fmt.Sprintf("templates/extra-%04d.txt", i), Data: content})
	}
	return c
}

// handMadePackage is a gzipped tar of the given entries, for what Helm's
// packager never writes (a link).
func handMadePackage(t *testing.T, entries []*tar.Header, contents []string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for i, h := range entries {
		h.Size = int64(len(contents[i]))
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(contents[i])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestHostileChartRepositoriesFailNamingTheChart(t *testing.T) {
	opts := source.Options{MaxChartPackageBytes: 256 << 10, MaxChartFiles: 50, MaxChartIndexBytes: 1 << 20, MaxFileSize: 1 << 20, MaxTreeSize: 2 << 20}
	chartYAML := "apiVersion: v2\nname: webapp\nversion: 1.0.0\n"
	cases := []struct {
		name string
		// publish makes the repository hostile.
		publish func(t *testing.T, repo *chartrepo.Server)
		reason  string
		// inRender: the failure comes from RenderChart, not FetchChart.
		inRender bool
		says     string
	}{
		{"a package over the size bound", func(t *testing.T, repo *chartrepo.Server) {
			repo.Publish(t, withFiles(t, 1, bigFile(t, 512<<10)), "1.0.0")
		}, v1alpha1.ReasonRenderLimitExceeded, false, "over the limit of 262144"},
		{"a package of too many files", func(t *testing.T, repo *chartrepo.Server) {
			repo.Publish(t, withFiles(t, 100, []byte("x")), "1.0.0")
		}, v1alpha1.ReasonRenderLimitExceeded, true, "more than 50 files"},
		{"a package that unpacks to too much", func(t *testing.T, repo *chartrepo.Server) {
			repo.Publish(t, withFiles(t, 3, bytes.Repeat([]byte("z"), 1<<20)), "1.0.0")
		}, v1alpha1.ReasonRenderLimitExceeded, true, "unpacks to more than"},
		{"a package holding a link", func(t *testing.T, repo *chartrepo.Server) {
			repo.PublishPackage("webapp", "1.0.0", handMadePackage(t, []*tar.Header{
				{Name: "webapp/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644},
				{Name: "webapp/templates/passwd.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
			}, []string{chartYAML, ""}))
		}, v1alpha1.ReasonRenderFailed, true, "links are refused"},
		{"a package leaving its directory", func(t *testing.T, repo *chartrepo.Server) {
			repo.PublishPackage("webapp", "1.0.0", handMadePackage(t, []*tar.Header{
				{Name: "webapp/Chart.yaml", Typeflag: tar.TypeReg, Mode: 0o644},
				{Name: "../../etc/evil.yaml", Typeflag: tar.TypeReg, Mode: 0o644},
			}, []string{chartYAML, "x: 1\n"}))
		}, v1alpha1.ReasonRenderFailed, true, "leaves the chart"},
		{"an index over the size bound", func(_ *testing.T, repo *chartrepo.Server) {
			repo.SetIndex(append([]byte("apiVersion: v1\nentries: {}\n#"), bytes.Repeat([]byte("#"), 2<<20)...))
		}, v1alpha1.ReasonRenderLimitExceeded, false, "index.yaml is over the limit"},
		{"a package that is not the one the index names", func(t *testing.T, repo *chartrepo.Server) {
			repo.Publish(t, chartrepo.Chart(t, "webapp"), "1.0.0")
			good := repo.Index()
			repo.SetIndex(regexp.MustCompile(`digest: [0-9a-f]{64}`).ReplaceAll(good, []byte("digest: "+strings.Repeat("0", 64))))
		}, v1alpha1.ReasonChartRepositoryFailed, false, "the repository's index says 0000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			repo := chartrepo.Start(t, chartrepo.Options{})
			tc.publish(t, repo)
			src := newSource(t, opts)
			rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: repo.URL, Name: "webapp"})
			if tc.inRender {
				if err != nil {
					t.Fatalf("FetchChart: %v", err)
				}
				_, err = src.RenderChart(t.Context(), rev, source.Helm{})
			}
			checkChartFailure(t, err, tc.reason, tc.says)
		})
	}
}

// checkChartFailure checks that err names the chart webapp, has reason and
// says says.
func checkChartFailure(t *testing.T, err error, reason, says string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error; want one")
	}
	got := ""
	var fe *source.FetchError
	var re *source.RenderError
	switch {
	case errors.As(err, &fe):
		got = fe.Reason
	case errors.As(err, &re):
		got = re.Reason
		if got == "" {
			got = v1alpha1.ReasonRenderFailed
		}
	}
	if got != reason || !strings.Contains(err.Error(), "webapp") || !strings.Contains(err.Error(), says) {
		t.Errorf("error %q (reason %s); want reason %s naming webapp and saying %q", err, got, reason, says)
	}
}

func TestARepositoryRefusingCredentialsIsNeverQuoted(t *testing.T) {
	repo := chartrepo.Start(t, chartrepo.Options{Username: "reader", Password: "s3cret-password"})
	repo.Publish(t, chartrepo.Chart(t, "webapp"), "1.0.0")
	src := newSource(t, source.Options{})
	for _, auth := range []source.Auth{{}, {Username: "reader", Password: "wrong-password"}} {
		_, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: repo.URL, Name: "webapp", Auth: auth})
		checkChartFailure(t, err, source.ReasonAuthenticationFailed, "HTTP 401 Unauthorized")
		if err != nil && (strings.Contains(err.Error(), "secret-refusal") || strings.Contains(err.Error(), "password")) {
			t.Errorf("error %q quotes the answer or a credential", err)
		}
	}
	rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: repo.URL, Name: "webapp", Auth: source.Auth{Username: "reader", Password: "s3cret-password"}})
	if err != nil || rev.Ref != "webapp@1.0.0" {
		t.Fatalf("with its credentials: %s, %v", rev.Ref, err)
	}
	if n := repo.Requests("/webapp-1.0.0.tgz"); n != 1 {
		t.Errorf("package read %d times; want 1 (the credentials go to the repository's host)", n)
	}
}
