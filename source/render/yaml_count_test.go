package render

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// yamlNodes counts the nodes yaml.v3 builds from data; ok is false when it
// refuses data.
func yamlNodes(data []byte) (n int, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return n, true
		}
		if err != nil {
			return n, false
		}
		n += countNodes(&doc)
	}
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

func TestYAMLNodeBoundIsABoundAndClose(t *testing.T) {
	crd, err := os.ReadFile("../../deploy/base/crd/tether.dev_syncs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		data  string
		ratio float64 // the most the bound may be over the count
	}{
		{"a manifest", configMapYAML, 2.5},
		{"the Sync CRD (long descriptions)", string(crd), 3},
		{"a flat list", "items:\n" + strings.Repeat("- 1\n", 1000), 3.1},
		{"a flat flow list", "items: [" + strings.Repeat("1,", 1000) + "1]", 2.1},
		{"a flat mapping", strings.Repeat("k: v\n", 1000), 2.1},
		{"JSON", `{"a": [1, 2, {"b": "c"}], "d": null}`, 3},
	} {
		nodes, ok := yamlNodes([]byte(tc.data))
		if !ok {
			t.Fatalf("%s: yaml.v3 refuses it", tc.name)
		}
		bound := YAMLNodeBound([]byte(tc.data))
		t.Logf("%s: %d nodes, bound %d (%.2f×)", tc.name, nodes, bound, float64(bound)/float64(nodes))
		if bound < nodes || float64(bound) > tc.ratio*float64(nodes) {
			t.Errorf("%s: bound %d for %d nodes; want between 1 and %.1f times the count", tc.name, bound, nodes, tc.ratio)
		}
	}
}

const configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: prod
  labels: {app: web, tier: "frontend"}
  annotations:
    note: "it's a long note, with: colons and - dashes"
data:
  nginx.conf: |
    server {
      listen 8080;
      location / { return 200 'ok'; }
    }
  image: nginx:1.25.3
  list: [a, b, c]
`

// FuzzYAMLNodeBound checks that the bound is never below the nodes yaml.v3
// builds, whatever the input, and never panics.
func FuzzYAMLNodeBound(f *testing.F) {
	for _, seed := range []string{
		configMapYAML, "[:]", "{a, b}", "- - - a", "? a\n: b", "&a !t [x]", "*a : b", "{\"a\":\"\"}",
		"a\n...\nb\n", "---\n---\n", "[a,[b,{c: d}]]", "k: !!binary aGk=", "a: |\n  - not\n  - nodes\n",
		"x: &a [1, 2]\ny: [*a, *a]\n", "<<: {a: 1}\n", "a:\u2028b: c", "'a': 'b'\n\"c\": \"d\"\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		bound := YAMLNodeBound(data)
		nodes, ok := yamlNodes(data)
		if ok && bound < nodes {
			t.Fatalf("bound %d under the %d nodes of %q", bound, nodes, data)
		}
	})
}
