package chartrepo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	testrepo "tether.dev/tether/test/chartrepo"

	"tether.dev/tether/test/harness"
)

// peakHeapBound is the most heap reading a hostile index or tag list may
// take, child process included (as source's bound for one render).
const peakHeapBound = 128 << 20

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
	repo := testrepo.Start(t, testrepo.Options{})
	pkg := testrepo.Package(t, testrepo.Chart(t, "webapp"), "1.0.0")
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
	src, err := NewRepositories(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	report := ""
	rev, err := src.FetchChart(t.Context(), Request{Repository: url, Name: "webapp"})
	if err != nil {
		report = "failed: " + err.Error()
	} else {
		report = "fetched " + rev.Ref
	}
	fmt.Printf("peak-heap %d %s\n", harness.PeakHeap(), strings.ReplaceAll(report, "\n", " "))
}

// envBomb tells TestPeakHeapOfIndexAndTagListBombsChild what to read: an
// index at a repository URL ("index <url>"), or a tag list of that many bytes
// made in the child ("tags <bytes>").
const envBomb = "TETHER_BOMBTEST"

// TestPeakHeapOfIndexAndTagListBombs reads, each in a child process of its
// own, a 32 MiB JSON index of "{}," entries (the asked-for chart's, then
// another chart's before the asked-for one) and a 32 MiB page of empty OCI
// tags, and checks the heap the child ever mapped against the bound of
// hostile renders, and what the child still holds after a garbage collection
// (the parsed index stays cached). On main (9ff9d5d) the index took +1,804 MiB
// with 734 MiB held after GC, the tag list +2,066 MiB with 905 MiB held.
func TestPeakHeapOfIndexAndTagListBombs(t *testing.T) {
	if testing.Short() {
		t.Skip("serves 32 MiB indexes")
	}
	pkg := testrepo.Package(t, testrepo.Chart(t, "webapp"), "1.0.0")
	raw := sha256.Sum256(pkg)
	webapp := fmt.Sprintf(`{"version":"1.0.0","urls":["webapp-1.0.0.tgz"],"digest":"%s"}`, hex.EncodeToString(raw[:]))
	const size = 32<<20 - 4<<10 // within the shipped MaxChartIndexBytes
	empties := func(n int) string { return strings.Repeat("{},", n/3) }
	cases := []struct {
		step, what, outcome string
		index               string
		// bound is what a refusal says of the bound.
		bound string
	}{
		{"empty entries of the asked-for chart are refused at the version bound", "index",
			"failed: ", `{"entries":{"webapp":[` + empties(size) + "{}]}}", "more than 20000 versions"},
		{"empty entries of another chart are skipped, the asked-for one fetched", "index",
			"fetched webapp@1.0.0", `{"entries":{"bomb":[` + empties(size) + `{}],"webapp":[` + webapp + "]}}", ""},
		{"a page of empty tags is refused at the version bound", "tags", "failed: ", "", "more than 20000 tags"},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			arg := fmt.Sprintf("tags %d", size)
			if c.what == "index" {
				repo := testrepo.Start(t, testrepo.Options{})
				repo.PublishPackage("webapp", "1.0.0", pkg)
				repo.SetIndex([]byte(c.index))
				arg = "index " + repo.URL
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestPeakHeapOfIndexAndTagListBombsChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), envBomb+"="+arg)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("child: %v\n%s", err, out.String())
			}
			var peak, held int64
			outcome := ""
			for _, line := range strings.Split(out.String(), "\n") {
				if rest, ok := strings.CutPrefix(line, "bomb "); ok {
					fields := strings.SplitN(rest, " ", 3)
					peak, _ = strconv.ParseInt(fields[0], 10, 64)
					held, _ = strconv.ParseInt(fields[1], 10, 64)
					outcome = fields[2]
				}
			}
			t.Logf("%s of %d MiB: peak heap %d MiB, %d MiB held after GC: %s", c.what, size>>20, peak>>20, held>>20, outcome)
			if !strings.HasPrefix(outcome, c.outcome) || (c.outcome == "failed: " && !strings.Contains(outcome, c.bound)) {
				t.Errorf("child: %q; want %q (refusals saying the bound)", outcome, c.outcome)
			}
			if peak > peakHeapBound {
				t.Errorf("peak heap %d MiB; want at most %d MiB", peak>>20, peakHeapBound>>20)
			}
			if held > 16<<20 {
				t.Errorf("%d MiB held after GC; want at most 16 MiB (only the asked-for chart's entries are kept)", held>>20)
			}
		})
	}
}

// TestPeakHeapOfIndexAndTagListBombsChild is the child of
// TestPeakHeapOfIndexAndTagListBombs; it does nothing in a normal run.
func TestPeakHeapOfIndexAndTagListBombsChild(t *testing.T) {
	what, arg, ok := strings.Cut(os.Getenv(envBomb), " ")
	if !ok {
		t.Skip("run by TestPeakHeapOfIndexAndTagListBombs")
	}
	report := ""
	var keep any
	switch what {
	case "index":
		src, err := NewRepositories(DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		keep = src
		rev, err := src.FetchChart(t.Context(), Request{Repository: arg, Name: "webapp", MaxAge: time.Hour})
		if err != nil {
			report = "failed: " + err.Error()
		} else {
			report = "fetched " + rev.Ref
		}
	case "tags":
		size, _ := strconv.Atoi(arg)
		page := []byte(`{"name":"charts/webapp","tags":[` + strings.Repeat(`"",`, size/3) + `""]}`)
		registry := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(page)
		}))
		src, err := NewRepositories(DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		keep = src
		rev, err := src.FetchChart(t.Context(), Request{Repository: "oci://" + strings.TrimPrefix(registry.URL, "http://") + "/charts", Name: "webapp"})
		// What the registry served is not what the reader holds: the server
		// ends (its handlers with it) and lets the page go.
		registry.Close()
		page = nil
		if err != nil {
			report = "failed: " + err.Error()
		} else {
			report = "fetched " + rev.Ref
		}
	}
	peak := harness.PeakHeap()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(keep)
	fmt.Printf("bomb %d %d %s\n", peak, ms.HeapAlloc, strings.ReplaceAll(report, "\n", " "))
}
