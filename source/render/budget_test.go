package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// The shapes of YAML that cost the most memory for their size or their bound:
// nodes as small as YAML can write them, and aliases that expand a small tree.
var worstShapes = []string{"flat-mapping", "flat-list", "flow-list", "documents", "aliases"}

// kustomizedShape is a worst shape read through a kustomization. (A flat
// mapping of hex keys takes kustomize minutes and trips a bug of its own,
// "json: unsupported type: map[interface {}]interface {}", so it is left out.)
const kustomizedShape = "kustomized flow-list"

// raceSkippedShapes are the worst shapes TestPeakMemoryOfTheWorstYAML leaves to
// `make test-memory` under the race detector.
var raceSkippedShapes = []string{"flat-list", "flow-list", "documents"}

// worstYAML returns a file of shape whose node bound (yamlNodeBound) is at most
// bound, and as close to it as the shape allows.
func worstYAML(shape string, bound int) string {
	head := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n"
	var b strings.Builder
	grow := func(unit string, weight int) {
		for n := YAMLNodeBound([]byte(b.String())); n+weight < bound; n += weight {
			b.WriteString(unit)
		}
	}
	switch shape {
	case "flat-mapping":
		fmt.Fprintf(&b, head+"data:\n", "m")
		for i, n := 0, YAMLNodeBound([]byte(b.String())); n+4 < bound; i, n = i+1, n+4 {
			fmt.Fprintf(&b, " %x: v\n", i) // 4: the key, ":" and the value
		}
	case "flat-list":
		fmt.Fprintf(&b, head+"values:\n", "l")
		grow("- 1\n", 3)
	case "flow-list":
		fmt.Fprintf(&b, head+"values: [", "f")
		grow("1,", 2)
		b.WriteString("1]\n")
	case "documents":
		for i, n := 0, 2; ; i++ {
			doc := fmt.Sprintf("---\n"+head, "d"+strconv.Itoa(i))
			if n += YAMLNodeBound([]byte(doc)) - 2; n > bound {
				break
			}
			b.WriteString(doc)
		}
	case "aliases":
		// 1,000 values under an anchor, named by as many aliases as the bound
		// allows once expanded: the tree is small, its conversion is not.
		fmt.Fprintf(&b, head+"a: &a [%s1]\nb:\n", "a", strings.Repeat("1,", 999))
		for i := 0; (i+2)*1001 < bound; i++ {
			b.WriteString("- *a\n")
		}
	}
	return b.String()
}

// worstRender is a directory of files of shape that fill a render's node budget
// at opts' bounds, each file just under the bound of one file.
func worstRender(shape string, opts DirOptions) filesys.FileSystem {
	nodes := newNodeBudget(opts)
	fs := NewFS()
	files := nodes.perRender / nodes.perFile
	if base, ok := strings.CutPrefix(shape, "kustomized "); ok {
		shape = base
		// Each file is read twice, by the check of kustomizations (checkRootFiles)
		// and by kustomize, and each read counts.
		files /= 2
		var k strings.Builder
		k.WriteString("resources:\n")
		for i := 0; i < files; i++ {
			fmt.Fprintf(&k, "- %02d.yaml\n", i)
		}
		if err := fs.WriteFile("/worst/kustomization.yaml", []byte(k.String())); err != nil {
			panic(err)
		}
	}
	for i := 0; i < files; i++ {
		data := worstYAML(shape, nodes.perFile-64)
		data = strings.ReplaceAll(data, "name: ", fmt.Sprintf("name: f%d-", i))
		if err := fs.WriteFile(fmt.Sprintf("/worst/%02d.yaml", i), []byte(data)); err != nil {
			panic(err)
		}
	}
	return fs
}

// shippedRenderOptions are the bounds an agent renders with by default.
func shippedRenderOptions() DirOptions {
	d := DefaultOptions()
	return DirOptions{MaxObjects: d.MaxObjects, MaxBytes: d.MaxRenderedBytes, MaxYAMLNodesPerFile: d.MaxYAMLNodesPerFile, MaxYAMLNodesPerRender: d.MaxYAMLNodesPerRender}
}

func TestYAMLOverItsBoundsFailsNamingTheFile(t *testing.T) {
	opts := DirOptions{MaxYAMLNodesPerFile: 1000, MaxYAMLNodesPerRender: 2500}
	for _, shape := range worstShapes {
		t.Run("a file of "+shape+" just over the bound of one file fails before it is parsed", func(t *testing.T) {
			fs := NewFS()
			big := worstYAML(shape, 1100)
			if err := fs.WriteFile("/repo/app/big.yaml", []byte(big)); err != nil {
				t.Fatal(err)
			}
			_, err := Dir(fs, "/repo", "/repo/app", opts)
			var re *result.RenderError
			if !errors.As(err, &re) || re.File != "app/big.yaml" || re.Reason != v1alpha1.ReasonRenderLimitExceeded {
				t.Fatalf("Render = %v; want a result.RenderError naming app/big.yaml with reason %s", err, v1alpha1.ReasonRenderLimitExceeded)
			}
			if shape != "aliases" && !strings.Contains(err.Error(), "more than 1000 YAML nodes") {
				t.Errorf("error %q does not name the bound of 1000 nodes", err)
			}
		})
	}
	t.Run("a small file whose aliases expand past the bound of one file fails", func(t *testing.T) {
		fs := NewFS()
		small := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\na: &a [" + strings.Repeat("1,", 99) + "1]\nb: [" + strings.Repeat("*a, ", 19) + "*a]\n"
		if n := YAMLNodeBound([]byte(small)); n > 1000 {
			t.Fatalf("the file's bound is %d; the test wants it under 1000", n)
		}
		if err := fs.WriteFile("/repo/app/aliases.yaml", []byte(small)); err != nil {
			t.Fatal(err)
		}
		_, err := Dir(fs, "/repo", "/repo/app", opts)
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app/aliases.yaml" || re.Reason != v1alpha1.ReasonRenderLimitExceeded || !strings.Contains(err.Error(), "more than 1000 values") {
			t.Fatalf("Render = %v; want a result.RenderError naming app/aliases.yaml, more than 1000 values and reason %s", err, v1alpha1.ReasonRenderLimitExceeded)
		}
	})
	t.Run("files each under the bound of one file fail together over the bound of a render", func(t *testing.T) {
		fs := NewFS()
		for i := range 3 {
			if err := fs.WriteFile(fmt.Sprintf("/repo/app/%d.yaml", i), []byte(strings.ReplaceAll(worstYAML("flat-list", 990), "name: l", fmt.Sprintf("name: l%d", i)))); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Dir(fs, "/repo", "/repo/app", opts)
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app/2.yaml" || !strings.Contains(err.Error(), "more than 2500 YAML nodes") {
			t.Fatalf("Render = %v; want a result.RenderError naming app/2.yaml and the render's bound of 2500", err)
		}
	})
	t.Run("a kustomization reading a file over the bound fails naming the file", func(t *testing.T) {
		fs := NewFS()
		for name, data := range map[string]string{
			"/repo/app/kustomization.yaml": "resources: [big.yaml]\n",
			"/repo/app/big.yaml":           worstYAML("flow-list", 1100),
		} {
			if err := fs.WriteFile(name, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		_, err := Dir(fs, "/repo", "/repo/app", opts)
		var re *result.RenderError
		if !errors.As(err, &re) || re.File != "app/big.yaml" || re.Reason != v1alpha1.ReasonRenderLimitExceeded {
			t.Fatalf("Render = %v; want a result.RenderError naming app/big.yaml with reason %s", err, v1alpha1.ReasonRenderLimitExceeded)
		}
	})
	t.Run("files just under both bounds render", func(t *testing.T) {
		fs := worstRender("flat-list", DirOptions{MaxYAMLNodesPerFile: 1000, MaxYAMLNodesPerRender: 2500})
		objs, err := Dir(fs, "/", "/worst", opts)
		if err != nil || len(objs) != 2 {
			t.Fatalf("Render = %d objects, %v; want 2 objects", len(objs), err)
		}
	})
}
