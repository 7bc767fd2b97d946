package charts

import (
	"context"
	"sync/atomic"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// BenchmarkRenderOfKubePrometheusStack is what the agent's source pays for a
// Sync's render of kube-prometheus-stack 88.5.3 (132 objects, its CRDs
// included) behind the render wall, the shipped binary as the render worker:
//
//   - "first render": a revision not rendered yet. The render cache keeps
//     nothing, so every op sends the chart to a worker, which renders it; the
//     worker outlives the op (as the agent's do), so one op is a render, not a
//     worker's start.
//   - "cached render": the same revision, path and values again, as a Sync's
//     every resync of an unchanged commit asks: answered from the render cache
//     with no worker (the chart's Capabilities are asked once, for the one
//     render before the loop, which the benchmark checks).
//
// ns/op, B/op and allocs/op are the agent's side (the worker's CPU and memory
// are its own process's). Run: go test ./test/charts/ -run '^$'
// -bench BenchmarkRenderOfKubePrometheusStack -benchmem -benchtime 10x.
func BenchmarkRenderOfKubePrometheusStack(b *testing.B) {
	chart := unpack(b, "kube-prometheus-stack-88.5.3.tgz")
	writeValues(b, chart, release{values: "grafana:\n  adminPassword: conformance\n"})
	repo := gitserver.NewLocalRepo(b, "charts")
	commit := commitChart(b, repo, chart, "charts/kube-prometheus-stack", "kube-prometheus-stack 88.5.3")
	var capabilitiesAsked atomic.Int64
	helm := source.Helm{ReleaseName: "monitoring", Namespace: "monitoring", ValuesFiles: []string{valuesFile},
		Capabilities: func(context.Context) (source.Capabilities, error) {
			capabilitiesAsked.Add(1)
			return source.Capabilities{KubeVersion: "v1.34.0"}, nil
		}}
	render := func(b *testing.B, src *source.Source, rev source.Revision) {
		snap, err := src.Render(b.Context(), rev, "charts/kube-prometheus-stack", helm)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Objects) != 132 {
			b.Fatalf("rendered %d objects, want 132", len(snap.Objects))
		}
	}

	b.Run("first render", func(b *testing.B) {
		src, rev := benchSource(b, repo.URL(), commit, 1)
		b.ReportAllocs()
		for b.Loop() {
			render(b, src, rev)
		}
	})

	b.Run("cached render", func(b *testing.B) {
		src, rev := benchSource(b, repo.URL(), commit, source.DefaultOptions().RenderCacheBytes)
		capabilitiesAsked.Store(0)
		render(b, src, rev)
		b.ReportAllocs()
		for b.Loop() {
			render(b, src, rev)
		}
		if n := capabilitiesAsked.Load(); n != 1 {
			b.Errorf("the chart was rendered %d times, want once: the cache did not answer", n)
		}
	})
}

// benchSource is a Source at the agent's defaults but for its render cache
// (cacheBytes) whose render worker is the shipped binary, and the revision
// commit of the repository at url fetched into it.
func benchSource(b *testing.B, url, commit string, cacheBytes int64) (*source.Source, source.Revision) {
	b.Helper()
	src, err := source.New(source.Options{CacheDir: b.TempDir(), AllowFileURLs: true, RenderCacheBytes: cacheBytes,
		RenderWorkerPath: tetherBinary})
	if err != nil {
		b.Fatal(err)
	}
	rev, err := src.Fetch(b.Context(), source.Request{URL: url, Ref: v1alpha1.GitRef{Commit: commit}})
	if err != nil {
		b.Fatal(err)
	}
	return src, rev
}
