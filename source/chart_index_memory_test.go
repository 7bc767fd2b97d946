package source_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
)

// envIndexURL tells TestPeakHeapOfALargeIndexChild the repository to read.
const envIndexURL = "TETHER_INDEXTEST_URL"

// largeIndex writes an index of about size bytes as `helm repo index` lays
// one out, entries as large repositories carry them (descriptions, maintainers,
// dependencies, URLs elsewhere), and webapp 1.0.0 last, whose package is sum.
func largeIndex(size int, sum string) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: v1\nentries:\n")
	for c := 0; b.Len() < size; c++ {
		fmt.Fprintf(&b, "  chart%d:\n", c)
		for v := range 40 {
			fmt.Fprintf(&b, `  - annotations:
      category: Infrastructure
      licenses: Apache-2.0
    apiVersion: v2
    appVersion: 1.%[2]d.0
    created: "2026-11-01T10:00:00.000000000Z"
    dependencies:
    - name: common
      repository: oci://registry.example.com/charts
      version: 2.x.x
    description: A chart that deploys something useful to a Kubernetes cluster, with many options and a long description.
    digest: %064[3]x
    home: https://example.com/charts/chart%[1]d
    keywords:
    - web
    - proxy
    maintainers:
    - name: Example
      url: https://github.com/example/charts
    name: chart%[1]d
    urls:
    - https://charts.example.com/chart%[1]d-0.%[2]d.0.tgz
    version: 0.%[2]d.0
`, c, v, c*100+v)
		}
	}
	fmt.Fprintf(&b, "  webapp:\n  - apiVersion: v2\n    digest: %s\n    name: webapp\n    urls:\n    - webapp-1.0.0.tgz\n    version: 1.0.0\ngenerated: \"2026-11-27T00:00:00Z\"\n", sum)
	return b.Bytes()
}

// TestPeakHeapOfALargeIndex reads a 20 MB index (and the package of one chart
// in it) in a child process of its own and checks the heap its runtime ever
// mapped, the Go runtime and the test binary included, against the bound of
// hostile renders: a quarter of what the shipped Deployment allows the agent.
// Parsed whole as one YAML tree, the same index allocated 315 MiB.
func TestPeakHeapOfALargeIndex(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a 20 MB index")
	}
	repo := chartrepo.Start(t, chartrepo.Options{})
	pkg := chartrepo.Package(t, chartrepo.Chart(t, "webapp"), "1.0.0")
	repo.PublishPackage("webapp", "1.0.0", pkg)
	raw := sha256.Sum256(pkg)
	index := largeIndex(20<<20, hex.EncodeToString(raw[:]))
	repo.SetIndex(index)

	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakHeapOfALargeIndexChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envIndexURL+"="+repo.URL)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\n%s", err, out.String())
	}
	var heap int64
	outcome := ""
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "peak-heap "); ok {
			heapText, report, _ := strings.Cut(rest, " ")
			heap, _ = strconv.ParseInt(heapText, 10, 64)
			outcome = report
		}
	}
	t.Logf("an index of %d bytes: peak heap %d MiB: %s", len(index), heap>>20, outcome)
	if outcome != "fetched webapp@1.0.0" {
		t.Fatalf("child: %q; want webapp@1.0.0 fetched\n%s", outcome, out.String())
	}
	if heap > peakHeapBound {
		t.Errorf("reading a %d MiB index took a peak heap of %d MiB; want at most %d MiB", len(index)>>20, heap>>20, peakHeapBound>>20)
	}
}

// TestPeakHeapOfALargeIndexChild is the child of TestPeakHeapOfALargeIndex; it
// does nothing in a normal run.
func TestPeakHeapOfALargeIndexChild(t *testing.T) {
	url := os.Getenv(envIndexURL)
	if url == "" {
		t.Skip("run by TestPeakHeapOfALargeIndex")
	}
	src, err := source.New(source.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	report := ""
	rev, err := src.FetchChart(t.Context(), source.ChartRequest{Repository: url, Name: "webapp"})
	if err != nil {
		report = "failed: " + err.Error()
	} else {
		report = "fetched " + rev.Ref
	}
	fmt.Printf("peak-heap %d %s\n", source.PeakHeap(), strings.ReplaceAll(report, "\n", " "))
}
