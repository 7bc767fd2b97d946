package importer_test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/importer"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// decode reads a YAML stream of objects.
func decode(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return out
		}
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestConvertPeersExamples converts each of the peers' own examples and
// compares the Syncs and the losses with the reviewed golden files.
func TestConvertPeersExamples(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range inputs {
		if strings.HasSuffix(in, ".syncs.yaml") {
			continue
		}
		base := strings.TrimSuffix(in, ".yaml")
		t.Run(filepath.Base(base), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			res := importer.Convert(decode(t, data))
			var syncs, lost bytes.Buffer
			for _, s := range res.Syncs {
				b, err := yaml.Marshal(s.Spec)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&syncs, "--- # %s/%s\n%s", s.Namespace, s.Name, b)
			}
			for _, l := range res.Lost {
				fmt.Fprintln(&lost, l)
			}
			golden(t, base+".syncs.yaml", syncs.String())
			golden(t, base+".lost.txt", lost.String())
		})
	}
}

func golden(t *testing.T, file, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", file, diff)
	}
}
