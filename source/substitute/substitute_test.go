package substitute_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/source/substitute"
)

// read reads a YAML file of testdata as one object.
func read(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	return parse(t, string(data))
}

func parse(t *testing.T, text string) *unstructured.Unstructured {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(text), &m); err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

// text writes obj as the agent's objects are written (sorted keys).
func text(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	b, err := yaml.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func one(t *testing.T, obj *unstructured.Unstructured, opts substitute.Options) (*unstructured.Unstructured, error) {
	t.Helper()
	out, err := substitute.Objects([]*unstructured.Unstructured{obj}, opts)
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func TestObjectsFluxExample(t *testing.T) {
	t.Run("renders Flux's documented output byte for byte", func(t *testing.T) {
		in := read(t, "flux/namespace.yaml")
		want := text(t, read(t, "flux/namespace.out.yaml"))
		got, err := one(t, in, substitute.Options{Variables: map[string]string{"cluster_region": "eu-central-1"}, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, text(t, got)); diff != "" {
			t.Errorf("substituted (-Flux's documented output +got):\n%s", diff)
		}
	})
	t.Run("inline values win over defaults", func(t *testing.T) {
		in := read(t, "flux/namespace.yaml")
		got, err := one(t, in, substitute.Options{Variables: map[string]string{"cluster_env": "prod", "cluster_region": "eu-central-1"}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"environment": "prod", "region": "eu-central-1"}
		if diff := cmp.Diff(want, got.GetLabels()); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
	})
	t.Run("substitutes a Secret's stringData", func(t *testing.T) {
		got, err := one(t, read(t, "flux/secret.yaml"), substitute.Options{Variables: map[string]string{"token": "s3cr3t-t0ken"}})
		if err != nil {
			t.Fatal(err)
		}
		if v, _, _ := unstructured.NestedString(got.Object, "stringData", "token"); v != "s3cr3t-t0ken" {
			t.Errorf("stringData.token = %q", v)
		}
	})
}

func TestObjectsStrict(t *testing.T) {
	in := read(t, "flux/namespace.yaml")
	t.Run("names the object and the missing variable", func(t *testing.T) {
		_, err := one(t, in, substitute.Options{Variables: map[string]string{"cluster_env": "prod"}, Strict: true})
		var se *substitute.Error
		if !errors.As(err, &se) || !errors.Is(err, substitute.ErrNotSet) {
			t.Fatalf("err = %v, want a *substitute.Error wrapping ErrNotSet", err)
		}
		if se.Object != "Namespace/apps" || se.Variable != "cluster_region" {
			t.Errorf("error names %q and %q, want Namespace/apps and cluster_region", se.Object, se.Variable)
		}
		if !strings.Contains(err.Error(), "Namespace/apps") || !strings.Contains(err.Error(), `"cluster_region"`) {
			t.Errorf("message %q does not name the object and the variable", err)
		}
	})
	t.Run("a default satisfies strict mode", func(t *testing.T) {
		_, err := one(t, in, substitute.Options{Variables: map[string]string{"cluster_region": "x"}, Strict: true})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("not strict, a missing variable is empty", func(t *testing.T) {
		got, err := one(t, in, substitute.Options{Variables: map[string]string{"cluster_env": "prod"}})
		if err != nil {
			t.Fatal(err)
		}
		if r := got.GetLabels()["region"]; r != "" {
			t.Errorf("region = %q, want empty", r)
		}
	})
}

func TestObjectsOptOut(t *testing.T) {
	vars := substitute.Options{Variables: map[string]string{"cluster_env": "prod", "cluster_region": "eu"}, Strict: true}
	for _, where := range []string{"annotations", "labels"} {
		t.Run("keeps ${} of an object opted out by its "+where, func(t *testing.T) {
			in := read(t, "flux/namespace.yaml")
			m := in.GetAnnotations()
			if where == "labels" {
				m = in.GetLabels()
			}
			if m == nil {
				m = map[string]string{}
			}
			m["kustomize.toolkit.fluxcd.io/substitute"] = "disabled"
			if where == "labels" {
				in.SetLabels(m)
			} else {
				in.SetAnnotations(m)
			}
			got, err := one(t, in, vars)
			if err != nil {
				t.Fatal(err)
			}
			if env := got.GetLabels()["environment"]; env != "${cluster_env:=dev}" {
				t.Errorf("environment = %q, want ${cluster_env:=dev} kept", env)
			}
		})
	}
}

func TestObjectsForms(t *testing.T) {
	vars := map[string]string{"set": "value", "empty": "", "path": "a/b/c"}
	for _, tc := range []struct{ in, want string }{
		{"${set}", "value"},
		{"${unset:=fallback}", "fallback"},
		{"${empty:=fallback}", "fallback"},
		{"${empty:-fallback}", "fallback"},
		{"${set:=fallback}", "value"},
		{"${set^^}", "VALUE"},
		{"${set:1:3}", "alu"},
		{"${path//\\//-}", "a-b-c"},
		{"${path/b/x}", "a/x/c"},
		{"$${set}", "${set}"},
		{"$set", "$set"},
		{"pre-${set}-post", "pre-value-post"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			in := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: '"+tc.in+"'}\n")
			got, err := one(t, in, substitute.Options{Variables: vars})
			if err != nil {
				t.Fatal(err)
			}
			if v, _, _ := unstructured.NestedString(got.Object, "data", "k"); v != tc.want {
				t.Errorf("%s = %q, want %q", tc.in, v, tc.want)
			}
		})
	}
}

func TestObjectsLeavesInputAlone(t *testing.T) {
	in := read(t, "flux/namespace.yaml")
	plain := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\ndata: {k: v}\n")
	before := in.DeepCopy()
	out, err := substitute.Objects([]*unstructured.Unstructured{in, plain}, substitute.Options{Variables: map[string]string{"cluster_region": "eu"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.Object, in.Object); diff != "" {
		t.Errorf("the input object changed (-before +after):\n%s", diff)
	}
	if out[1] != plain {
		t.Error("an object with no ${ was copied; want it passed through")
	}
	if out[0] == in {
		t.Error("a substituted object is the input object; want a new one")
	}
}

func TestObjectsInvalidName(t *testing.T) {
	_, err := substitute.Objects(nil, substitute.Options{Variables: map[string]string{"bad-name": "x"}})
	var se *substitute.Error
	if !errors.As(err, &se) || !errors.Is(err, substitute.ErrInvalidName) || se.Variable != "bad-name" {
		t.Fatalf("err = %v, want ErrInvalidName naming bad-name", err)
	}
}

func TestObjectsBudget(t *testing.T) {
	value := strings.Repeat("x", 1<<10)
	refs := strings.Repeat("${big}", 1<<10) // 6 KiB of text, 1 MiB substituted
	in := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: amplifier, namespace: apps}\ndata: {k: '"+refs+"'}\n")
	opts := substitute.Options{Variables: map[string]string{"big": value}, MaxBytes: 512 << 10}
	t.Run("fails past the budget, naming the object", func(t *testing.T) {
		_, err := one(t, in, opts)
		var se *substitute.Error
		if !errors.As(err, &se) || !errors.Is(err, substitute.ErrBudget) || se.Object != "ConfigMap/apps/amplifier" {
			t.Fatalf("err = %v, want ErrBudget naming ConfigMap/apps/amplifier", err)
		}
	})
	t.Run("the budget is shared by the objects of one call", func(t *testing.T) {
		opts := opts
		opts.MaxBytes = 3 << 20 // each object takes just over 1 MiB
		objs := []*unstructured.Unstructured{in, in, in}
		if _, err := substitute.Objects(objs[:2], opts); err != nil {
			t.Fatalf("two objects within the budget: %v", err)
		}
		if _, err := substitute.Objects(objs, opts); !errors.Is(err, substitute.ErrBudget) {
			t.Fatalf("three objects past the budget: err = %v, want ErrBudget", err)
		}
	})
	t.Run("a growing replacement is charged before it is built", func(t *testing.T) {
		grow := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: grow}\ndata: {k: '${big//x/"+strings.Repeat("y", 1024)+"}'}\n")
		_, err := one(t, grow, opts)
		if !errors.Is(err, substitute.ErrBudget) {
			t.Fatalf("err = %v, want ErrBudget", err)
		}
	})
}

func TestObjectsErrorsHoldNoValue(t *testing.T) {
	const secret = "hunter2-not-yaml: ["
	in := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  k: ${pw}\n")
	_, err := one(t, in, substitute.Options{Variables: map[string]string{"pw": secret}})
	if !errors.Is(err, substitute.ErrSyntax) {
		t.Fatalf("err = %v, want ErrSyntax (the value breaks the YAML)", err)
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("the error quotes the value: %v", err)
	}
}
