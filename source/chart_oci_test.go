package source_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/ociregistry"
)

func TestAChartFromAnOCIRegistryRendersItsNewestMatchingTag(t *testing.T) {
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0", "1.2.0-rc.1", "1.0.5+build.7"} {
		reg.Push(t, "webapp", v, chartrepo.Package(t, webapp, v))
	}
	src := newSource(t, source.Options{})
	rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: reg.Repository, Name: "webapp", Version: "1.x"})
	if err != nil {
		t.Fatalf("FetchChart: %v", err)
	}
	if rev.Ref != "webapp@1.1.0" || len(rev.Package) != 64 || rev.URL != reg.Repository {
		t.Fatalf("FetchChart resolved %+v; want webapp@1.1.0 of %s with its package's SHA-256", rev, reg.Repository)
	}
	snap, err := src.RenderChart(t.Context(), rev, source.Helm{ReleaseName: "web", Namespace: "apps", Values: []byte(`{"greeting":"hi"}`)})
	if err != nil {
		t.Fatalf("RenderChart: %v", err)
	}
	if got := snap.Revision.String(); !chartRevision.MatchString(got) {
		t.Errorf("revision %q; want webapp@1.1.0+sha256:<digest>", got)
	}
	if len(snap.Objects) != 1 || stringMap(snap.Objects[0].Object, "data")["greeting"] != "hi" {
		t.Errorf("rendered %d objects; want web-config with greeting hi", len(snap.Objects))
	}

	t.Run("exact versions, a build tag written with _, the newest, none in range", func(t *testing.T) {
		for version, want := range map[string]string{"1.0.0": "webapp@1.0.0", "1.0.5+build.7": "webapp@1.0.5+build.7", "": "webapp@2.0.0", ">=1.2.0-0 <2": "webapp@1.2.0-rc.1"} {
			rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: reg.Repository, Name: "webapp", Version: version})
			if err != nil || rev.Ref != want {
				t.Errorf("version %q resolved to %q (%v); want %s", version, rev.Ref, err, want)
			}
		}
		for _, req := range []source.ChartRequest{{Name: "webapp", Version: "3.x"}, {Name: "nothing"}} {
			req.Repository = reg.Repository
			_, err := src.FetchChart(t.Context(), req)
			var fe *source.FetchError
			if !errors.As(err, &fe) || (fe.Reason != source.ReasonChartNotFound && fe.Reason != source.ReasonRepositoryNotFound) || !strings.Contains(err.Error(), req.Name) {
				t.Errorf("%s %s: %v; want ChartNotFound or RepositoryNotFound naming the chart", req.Name, req.Version, err)
			}
		}
	})
}

func TestAnOCITagListIsReadOncePerIntervalAndAPackageOncePerDigest(t *testing.T) {
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	reg.Push(t, "webapp", "1.0.0", chartrepo.Package(t, webapp, "1.0.0"))
	src := newSource(t, source.Options{})
	req := source.ChartRequest{Repository: reg.Repository, Name: "webapp", Version: "1.x", MaxAge: time.Hour}
	for range 3 {
		if _, err := src.FetchChart(t.Context(), req); err != nil {
			t.Fatal(err)
		}
	}
	if n, m, b := reg.Requests("tags"), reg.Requests("manifests"), reg.Requests("blobs"); n != 1 || m != 1 || b != 1 {
		t.Fatalf("three fetches within MaxAge read the tag list %d times, the manifest %d times and the layer %d times; want once each", n, m, b)
	}
	reg.Push(t, "webapp", "1.1.0", chartrepo.Package(t, webapp, "1.1.0"))
	if rev, err := src.FetchChart(t.Context(), req); err != nil || rev.Ref != "webapp@1.0.0" {
		t.Fatalf("within MaxAge the tag list read before is the answer: got %s (%v)", rev.Ref, err)
	}
	src.Refresh(reg.Repository)
	if rev, err := src.FetchChart(t.Context(), req); err != nil || rev.Ref != "webapp@1.1.0" {
		t.Fatalf("after Refresh the tag list is read again: got %s (%v)", rev.Ref, err)
	}
	req.MaxAge = 0
	if _, err := src.FetchChart(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if n, b := reg.Requests("tags"), reg.Requests("blobs"); n != 3 || b != 2 {
		t.Errorf("tag list read %d times (want 3: Refresh and MaxAge 0 ask again), layers %d times (want 2: one per digest)", n, b)
	}
}

func TestHostileOCIRegistriesFailNamingTheChart(t *testing.T) {
	opts := source.Options{MaxChartPackageBytes: 256 << 10}
	cases := []struct {
		name   string
		push   func(t *testing.T, reg *ociregistry.Server)
		reason string
		says   string
	}{
		{"a layer over the package bound", func(t *testing.T, reg *ociregistry.Server) {
			reg.Push(t, "webapp", "1.0.0", chartrepo.Package(t, withFiles(t, 1, bigFile(t, 512<<10)), "1.0.0"))
		}, v1alpha1.ReasonRenderLimitExceeded, "over the limit of 262144"},
		{"a layer of another media type", func(t *testing.T, reg *ociregistry.Server) {
			layer := reg.PushBlob(t, "webapp", "application/vnd.oci.image.layer.v1.tar+gzip", chartrepo.Package(t, chartrepo.Chart(t, "webapp"), "1.0.0"))
			reg.PushManifest(t, "webapp", "1.0.0", layer)
		}, v1alpha1.ReasonChartRepositoryFailed, `no layer is of media type application/vnd.cncf.helm.chart.content.v1.tar+gzip (it has "application/vnd.oci.image.layer.v1.tar+gzip")`},
		{"two chart layers", func(t *testing.T, reg *ociregistry.Server) {
			layer := reg.PushBlob(t, "webapp", ociregistry.ChartLayerType, chartrepo.Package(t, chartrepo.Chart(t, "webapp"), "1.0.0"))
			reg.PushManifest(t, "webapp", "1.0.0", layer, layer)
		}, v1alpha1.ReasonChartRepositoryFailed, "a chart has one"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := ociregistry.Start(t)
			tc.push(t, reg)
			src := newSource(t, opts)
			_, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: reg.Repository, Name: "webapp"})
			checkChartFailure(t, err, tc.reason, tc.says)
			if n := reg.Requests("blobs"); n != 0 {
				t.Errorf("the layer was downloaded %d times; want none (the manifest refuses it)", n)
			}
		})
	}
}

func TestAnOCIRepositoryThatIsNotOneIsRefused(t *testing.T) {
	src := newSource(t, source.Options{})
	for _, repo := range []string{"oci://", "oci://user:pw@host/charts", "oci://host/Charts"} {
		_, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: repo, Name: "webapp"})
		var fe *source.FetchError
		if !errors.As(err, &fe) || fe.Reason != source.ReasonUnsupportedURL || strings.Contains(err.Error(), "pw") {
			t.Errorf("%s: %v; want UnsupportedURL not quoting the credentials", repo, err)
		}
	}
}

func TestAnOCITagListIsReadPageByPageWithinItsBound(t *testing.T) {
	reg := ociregistry.Start(t)
	webapp := chartrepo.Chart(t, "webapp")
	for _, v := range []string{"1.0.0", "1.2.0", "1.1.0"} {
		reg.Push(t, "webapp", v, chartrepo.Package(t, webapp, v))
	}
	reg.PageTags(1)
	got, err := newSource(t, source.Options{}).FetchChart(t.Context(), source.ChartRequest{Repository: reg.Repository, Name: "webapp"})
	if err != nil || got.Ref != "webapp@1.2.0" {
		t.Fatalf("FetchChart over pages of one tag: %s (%v); want webapp@1.2.0", got.Ref, err)
	}
	if n := reg.Requests("tags"); n != 3 {
		t.Errorf("the tag list was read in %d requests; want 3 (one a page)", n)
	}
	small := newSource(t, source.Options{MaxChartIndexBytes: 80})
	_, err = small.FetchChart(t.Context(), source.ChartRequest{Repository: reg.Repository, Name: "webapp"})
	checkChartFailure(t, err, v1alpha1.ReasonRenderLimitExceeded, "the tag list of charts/webapp is over the limit of 80 bytes in its 2 pages")
}
