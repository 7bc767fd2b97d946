package source_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// peakHeapBound is the most heap one render of any hostile case may take, child
// process and all (the Go runtime, the git cache opened, the ref listing): a
// quarter of the 512 MiB the shipped Deployment allows the agent.
const peakHeapBound = 128 << 20

// Environment of the child process that TestPeakHeapOfHostileRenders starts.
const (
	envMemCache  = "TETHER_MEMTEST_CACHE"
	envMemURL    = "TETHER_MEMTEST_URL"
	envMemCommit = "TETHER_MEMTEST_COMMIT"
	envMemDir    = "TETHER_MEMTEST_DIR"
)

// TestPeakHeapOfHostileRenders renders each hostile case in a child process of
// its own and reads the heap the child's runtime ever mapped (runtime/metrics),
// which is the peak heap whatever the garbage collector did after it. Under the
// race detector it skips itself (reading a 234 MiB pack race-instrumented takes
// minutes): make test runs it without (make test-memory).
func TestPeakHeapOfHostileRenders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 234 MiB repository")
	}
	if source.RaceEnabled {
		t.Skip("measures memory: make test runs it without the race detector (make test-memory)")
	}
	mib := strings.Repeat("y", 1<<20)
	var aliases strings.Builder
	for i := range 400 {
		fmt.Fprintf(&aliases, "  k%d: *big\n", i)
	}
	eight := strings.Repeat("z", 8<<20-4096)
	var eightAliases strings.Builder
	for i := range 64 {
		fmt.Fprintf(&eightAliases, "  k%d: *big\n", i)
	}
	files := map[string]string{
		"amplify/cm.yaml":                      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: amp}\nbig: &big " + mib + "\ndata:\n" + aliases.String(),
		"amplify-kustomize/kustomization.yaml": "resources: [cm.yaml]\n",
		"amplify-kustomize/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: amp}\nbig: &big " + mib + "\ndata:\n" + aliases.String(),
		"eight/cm.yaml":                        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: eight}\nbig: &big " + eight + "\ndata:\n" + eightAliases.String(),
		"small/cm.yaml":                        configMap("small", "hello"),
	}
	// 224 MiB of the repository that the Sync rendering small/ does not need
	// (the whole repository stays under the limit the agent had on a render, 256 MiB).
	for i := range 28 {
		files[fmt.Sprintf("data/blob-%02d.txt", i)] = strconv.Itoa(i) + strings.Repeat("d", 8<<20-8192)
	}
	repo := gitserver.NewLocalRepo(t, "hostile-memory")
	head := pushTree(t, repo, files, nil)
	cache := t.TempDir()
	src := newSource(t, source.Options{CacheDir: cache, AllowFileURLs: true})
	fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	cases := []struct{ name, dir, outcome string }{
		{"a 1 MiB scalar under 400 aliases", "amplify", "too large"},
		{"a 1 MiB scalar under 400 aliases, through kustomize", "amplify-kustomize", "too large"},
		{"an 8 MiB scalar under 64 aliases", "eight", "too large"},
		{"one small directory of a 234 MiB repository", "small", "rendered 1 objects"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			heap, outcome := renderInChild(t, cache, repo.URL(), head, tc.dir)
			t.Logf("%s: peak heap %d MiB: %s", tc.dir, heap>>20, outcome)
			if !strings.Contains(outcome, tc.outcome) {
				t.Errorf("rendering %s: %s; want %q", tc.dir, outcome, tc.outcome)
			}
			if heap > peakHeapBound {
				t.Errorf("rendering %s took a peak heap of %d MiB; want at most %d MiB", tc.dir, heap>>20, peakHeapBound>>20)
			}
		})
	}
}

// renderInChild runs TestPeakHeapChild in a child process and returns its peak
// heap and what it reported. (The child's peak RSS would be no measure: Linux
// counts in it what the parent held when it forked.)
func renderInChild(t *testing.T, cache, url, commit, dir string) (heap int64, outcome string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestPeakHeapChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envMemCache+"="+cache, envMemURL+"="+url, envMemCommit+"="+commit, envMemDir+"="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("child rendering %s: %v\n%s", dir, err, out.String())
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if rest, ok := strings.CutPrefix(line, "peak-heap "); ok {
			heapText, report, _ := strings.Cut(rest, " ")
			heap, _ = strconv.ParseInt(heapText, 10, 64)
			outcome = report
		}
	}
	if outcome == "" {
		t.Fatalf("child rendering %s reported nothing:\n%s", dir, out.String())
	}
	return heap, outcome
}

// TestPeakHeapChild is the child of TestPeakHeapOfHostileRenders; it does nothing
// in a normal run.
func TestPeakHeapChild(t *testing.T) {
	cache := os.Getenv(envMemCache)
	if cache == "" {
		t.Skip("run by TestPeakHeapOfHostileRenders")
	}
	src, err := source.New(source.Options{CacheDir: cache, AllowFileURLs: true})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := src.Fetch(t.Context(), source.Request{URL: os.Getenv(envMemURL), Ref: v1alpha1.GitRef{Commit: os.Getenv(envMemCommit)}})
	if err != nil {
		t.Fatal(err)
	}
	report := ""
	snap, err := src.Render(t.Context(), rev, os.Getenv(envMemDir), source.Helm{})
	if err != nil {
		report = "failed: " + err.Error()
	} else {
		report = fmt.Sprintf("rendered %d objects", len(snap.Objects))
	}
	if len(report) > 300 {
		report = report[:300]
	}
	fmt.Printf("peak-heap %d %s\n", source.PeakHeap(), strings.ReplaceAll(report, "\n", " "))
}
