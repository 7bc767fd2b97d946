package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"tether.dev/tether/source"
	"tether.dev/tether/test/chartrepo"
	"tether.dev/tether/test/ociregistry"
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
			maskSecrets(want) // tether render never prints a Secret's values without --decrypt
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

// tether render renders a chart directory as a Sync with the same spec.helm
// would: release name, namespace and values files layered in order.
func TestRenderRendersAChartWithItsReleaseAndValues(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "chart")
	for name, content := range map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml":      "size: small\ncolor: red\n",
		"values-prod.yaml": "size: large\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\n" +
			"data: {size: {{ .Values.size | quote }}, color: {{ .Values.color | quote }}, ns: {{ .Release.Namespace | quote }}}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out, errOut bytes.Buffer
	args := []string{"render", dir, "--release-name", "shop", "--namespace", "prod", "--values", "values-prod.yaml"}
	if err := run(t.Context(), args, &out, &errOut); err != nil {
		t.Fatalf("tether render: %v\n%s", err, errOut.String())
	}
	objs, err := source.DecodeManifests(out.Bytes())
	if err != nil || len(objs) != 1 {
		t.Fatalf("want one object, got %d: %v\n%s", len(objs), err, out.String())
	}
	want := map[string]any{"size": "large", "color": "red", "ns": "prod"}
	if objs[0].GetName() != "shop" {
		t.Errorf("name %q, want the release name shop", objs[0].GetName())
	}
	if diff := cmp.Diff(want, objs[0].Object["data"]); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
}

// `tether render --chart-repository … --chart …` fetches a packaged chart as the
// agent fetches a Sync's spec.source.chart (the newest version in range) from a
// chart repository and from an OCI registry, both on loopback, and prints what it
// renders to with the release name and namespace given.
func TestRenderRendersAPackagedChart(t *testing.T) {
	webapp := chartrepo.Chart(t, "webapp")
	repo := chartrepo.Start(t, chartrepo.Options{})
	reg := ociregistry.Start(t)
	for _, v := range []string{"1.0.0", "1.4.2", "2.0.0"} {
		repo.Publish(t, webapp, v)
		reg.Push(t, "webapp", v, chartrepo.Package(t, webapp, v))
	}
	for _, repository := range []string{repo.URL, reg.Repository} {
		var out, errOut bytes.Buffer
		args := []string{"render", "--chart-repository", repository, "--chart", "webapp", "--chart-version", "1.x", "--release-name", "shop", "--namespace", "prod"}
		if err := run(t.Context(), args, &out, &errOut); err != nil {
			t.Fatalf("tether render %s: %v\n%s", repository, err, errOut.String())
		}
		objs, err := source.DecodeManifests(out.Bytes())
		if err != nil || len(objs) == 0 {
			t.Fatalf("%s: want the chart's objects, got %d: %v\n%s", repository, len(objs), err, out.String())
		}
		var data any
		for _, o := range objs {
			if o.GetKind() == "ConfigMap" && o.GetName() == "shop-config" {
				data = o.Object["data"]
			}
		}
		if diff := cmp.Diff(map[string]any{"greeting": "hello", "chartVersion": "1.4.2"}, data); diff != "" {
			t.Errorf("%s: ConfigMap shop-config's data (-want +got):\n%s\n%s", repository, diff, out.String())
		}
	}
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"render", "somedir", "--chart", "webapp"}, &out, &errOut); err == nil {
		t.Errorf("render DIR --chart NAME without a repository: no error, want a usage error")
	}
}
