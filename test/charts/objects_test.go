package charts

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// objectKey is an object's identity in a render, as its text gives it: the
// namespace is empty where the template names none.
type objectKey struct{ APIVersion, Kind, Namespace, Name string }

func (k objectKey) String() string {
	if k.Namespace == "" {
		return k.APIVersion + " " + k.Kind + " " + k.Name
	}
	return k.APIVersion + " " + k.Kind + " " + k.Namespace + "/" + k.Name
}

// objects is a render's objects by identity, each as JSON holds it, so that two
// texts of one object compare equal however either lays it out (quoting, order
// of keys, flow or block style, comments).
type objects map[objectKey]map[string]any

// parseStream reads a YAML stream (helm template's or tether render's output)
// into its objects; documents holding nothing (a template that rendered only
// comments) are not objects. One identity twice is an error.
func parseStream(data []byte) (objects, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	objs := objects{}
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		k := objectKey{u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName()}
		if _, dup := objs[k]; dup {
			return nil, fmt.Errorf("document %d: %s a second time", n, k)
		}
		objs[k] = obj
	}
}

// secretMask is what tether render prints for each value of a Secret without
// --decrypt (cmd/tether's maskSecrets).
const secretMask = "***"

// maskSecrets replaces each value of the Secrets of objs by secretMask, as
// tether render prints them. The Secrets' contents are still compared: the
// charts hash them into their workloads' annotations (checksum/secret).
func maskSecrets(objs objects) {
	for k, obj := range objs {
		if k.APIVersion != "v1" || k.Kind != "Secret" {
			continue
		}
		for _, field := range []string{"data", "stringData"} {
			values, _ := obj[field].(map[string]any)
			for key := range values {
				values[key] = secretMask
			}
		}
	}
}

// differences lists, one entry per object, how got (tether's) differs from want
// (helm's): objects only one side has, and a field diff of those both have.
func differences(want, got objects) []string {
	keys := map[objectKey]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var diffs []string
	for k := range keys {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			diffs = append(diffs, k.String()+": rendered by helm template only")
		case !inWant:
			diffs = append(diffs, k.String()+": rendered by tether render only")
		default:
			if d := cmp.Diff(w, g); d != "" {
				diffs = append(diffs, k.String()+" differs (-helm template +tether render):\n"+d)
			}
		}
	}
	slices.Sort(diffs)
	return diffs
}

// unpack extracts the packaged chart testdata/archive into a temporary directory
// and returns the chart's directory in it (the archive's one top directory).
func unpack(t *testing.T, archive string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", archive))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", archive, err)
	}
	dir := t.TempDir()
	top := ""
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		name := filepath.Clean(filepath.FromSlash(h.Name))
		if !filepath.IsLocal(name) {
			t.Fatalf("%s: entry %q outside the archive's directory", archive, h.Name)
		}
		top, _, _ = strings.Cut(filepath.ToSlash(name), "/")
		if h.Typeflag != tar.TypeReg {
			continue
		}
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", archive, h.Name, err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if top == "" {
		t.Fatalf("%s: no files", archive)
	}
	return filepath.Join(dir, top)
}
