package chartrepo

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// helmIndex is an index as `helm repo index` writes it: sequences at the
// indent of their key, fields Tether drops among those it keeps.
const helmIndex = `apiVersion: v1
entries:
  podinfo:
  - apiVersion: v2
    description: |
      A multi-line description
      podinfo: that looks like a key
    digest: aaaa
    name: podinfo
    urls:
    - podinfo-6.14.1.tgz
    version: 6.14.1
  - digest: bbbb
    name: podinfo
    urls:
    - https://cdn.example.com/podinfo-6.14.0.tgz
    version: 6.14.0

  web-app:
    - name: web-app
      urls: [web-app-1.0.0.tgz]
      version: 1.0.0
generated: "2026-11-27T00:00:00Z"
`

func TestAnIndexKeepsVersionsURLsAndDigestsWhateverItsSpelling(t *testing.T) {
	want := chartIndex{
		"podinfo": {
			{Version: "6.14.1", URLs: []string{"podinfo-6.14.1.tgz"}, Digest: "aaaa"},
			{Version: "6.14.0", URLs: []string{"https://cdn.example.com/podinfo-6.14.0.tgz"}, Digest: "bbbb"},
		},
		"web-app": {{Version: "1.0.0", URLs: []string{"web-app-1.0.0.tgz"}}},
	}
	jsonIndex := `{"apiVersion":"v1","entries":{"podinfo":[{"version":"6.14.1","urls":["podinfo-6.14.1.tgz"],"digest":"aaaa","description":"x"},` +
		`{"version":"6.14.0","urls":["https://cdn.example.com/podinfo-6.14.0.tgz"],"digest":"bbbb"}],"web-app":[{"version":"1.0.0","urls":["web-app-1.0.0.tgz"]}]}}`
	flowIndex := `{apiVersion: v1, entries: {podinfo: [{version: 6.14.1, urls: [podinfo-6.14.1.tgz], digest: aaaa},` +
		` {version: 6.14.0, urls: ["https://cdn.example.com/podinfo-6.14.0.tgz"], digest: bbbb}], web-app: [{version: 1.0.0, urls: [web-app-1.0.0.tgz]}]}}`
	for name, text := range map[string]string{"helm's layout": helmIndex, "JSON": jsonIndex, "YAML flow style": flowIndex} {
		t.Run(name, func(t *testing.T) {
			got, err := parseIndex([]byte(text), DefaultOptions().MaxYAMLNodesPerFile, "")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("index (-want +got):\n%s", d)
			}
		})
	}
	t.Run("helm's layout is read one chart at a time", func(t *testing.T) {
		parts, ok := indexParts([]byte(helmIndex))
		if !ok || len(parts) != 2 || !strings.HasPrefix(string(parts[1]), "  web-app:\n") {
			t.Errorf("parts %q (layout recognised: %v); want two, one per chart", parts, ok)
		}
	})
}

func TestAnIndexOverItsNodeBoundIsRefusedBeforeItIsParsed(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nentries:\n  big:\n")
	for i := range 2000 {
		b.WriteString("  - version: 1.0.")
		b.WriteString(strings.Repeat("1", i%3+1))
		b.WriteString("\n    urls: [a, b, c]\n")
	}
	_, err := parseIndex([]byte(b.String()), 1000, "")
	if err == nil || !strings.Contains(err.Error(), "more than 1000 YAML nodes") {
		t.Errorf("one chart of 2000 versions within 1000 nodes: %v; want refused", err)
	}
	odd := "entries: {big: [" + strings.Repeat("{version: 1.0.0},", 2000) + "]}\n"
	if _, err := parseIndex([]byte(odd), 1000, ""); err == nil || !strings.Contains(err.Error(), "not laid out") {
		t.Errorf("a large index in flow style: %v; want refused, naming the layout", err)
	}
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(helmIndex))
	f.Add([]byte("entries:\n  a:\n  - version: 1\n  b: &x\n  - version: 2\n  c: *x\n"))
	f.Add([]byte(`{"entries":{"a":[{"version":"1.0.0"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := parseIndex(data, 10_000, "")
		if err == nil && idx == nil {
			t.Error("no error and no index")
		}
		one, err := parseIndex(data, 10_000, "a")
		if err == nil && (one == nil || len(one) > 1 || len(one["a"]) > maxChartVersions) {
			t.Errorf("chart a alone: kept %d charts, %d versions of a", len(one), len(one["a"]))
		}
	})
}
