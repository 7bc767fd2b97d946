package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/source"
)

// The conformance fixtures of source, written by the project.
const conformanceFixtures = "../../source/testdata/conformance"

// What `tether render` prints, read back as kubectl reads it, is what the
// agent's renderer makes of the same directory: the YAML it writes loses
// nothing and changes no type (a string "yes" stays a string).
func TestRenderPrintsEveryConformanceFixtureAsTheAgentRendersIt(t *testing.T) {
	entries, err := os.ReadDir(conformanceFixtures)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(conformanceFixtures, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := run(t.Context(), []string{"render", dir}, &out, &errOut); err != nil {
				t.Fatalf("tether render %s: %v\n%s", dir, err, errOut.String())
			}
			printed, err := source.DecodeManifests(out.Bytes())
			if err != nil {
				t.Fatalf("the output is no manifest stream: %v\n%s", err, out.String())
			}
			want, err := source.RenderDirectory(t.Context(), dir, source.Helm{}, source.DefaultOptions())
			if err != nil {
				t.Fatalf("RenderDirectory: %v", err)
			}
			if len(want) != len(printed) {
				t.Fatalf("printed %d objects, want %d", len(printed), len(want))
			}
			for i := range want {
				if diff := cmp.Diff(want[i].Object, printed[i].Object); diff != "" {
					t.Errorf("object %d printed differs (-rendered +printed):\n%s", i, diff)
				}
			}
		})
	}
}
