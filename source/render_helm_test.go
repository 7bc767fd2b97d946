package source_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// writeChart writes files (path → content) under a new directory and returns
// the chart's directory, dir of it.
func writeChart(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	// The repository's root: errors name files relative to it.
	if err := os.Mkdir(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(root, dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(root, dir)
}

const webChart = `apiVersion: v2
name: web
version: 1.2.3
`

const webConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
data:
  color: {{ .Values.color | quote }}
  size: {{ .Values.size | quote }}
  shape: {{ .Values.shape | quote }}
  owner: {{ .Values.owner | quote }}
  namespace: {{ .Release.Namespace | quote }}
  install: {{ .Release.IsInstall | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  widgets: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}
  lookup: {{ lookup "v1" "Secret" "default" "x" | len | quote }}
`

func renderChart(t *testing.T, dir string, h source.Helm) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return source.RenderDirectory(t.Context(), dir, h, source.DefaultOptions())
}

func dataOf(t *testing.T, objs []*unstructured.Unstructured, name string) map[string]string {
	t.Helper()
	for _, o := range objs {
		if o.GetName() == name {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			return data
		}
	}
	t.Fatalf("no object %s among %d", name, len(objs))
	return nil
}

func TestAChartRendersWithItsValuesLayered(t *testing.T) {
	dir := writeChart(t, "charts/web", map[string]string{
		"Chart.yaml":               webChart,
		"values.yaml":              "color: red\nsize: small\nshape: square\nowner: chart\n",
		"values-prod.yaml":         "size: large\nshape: round\nowner: prod\n",
		"values-eu.yaml":           "owner: eu\n",
		"templates/configmap.yaml": webConfigMap,
		"templates/NOTES.txt":      "Thanks for installing {{ .Release.Name }}",
		"templates/_helpers.tpl":   `{{- define "web.name" -}}web{{- end -}}`,
	})
	h := source.Helm{
		ReleaseName: "shop",
		Namespace:   "prod",
		ValuesFiles: []string{"values-prod.yaml", "values-eu.yaml"},
		ValuesFrom:  []source.Values{{Name: "ConfigMap/web key values.yaml", YAML: []byte("shape: star\nowner: configmap\n")}},
		Values:      []byte(`{"owner": "inline"}`),
		Capabilities: func(context.Context) (source.Capabilities, error) {
			return source.Capabilities{KubeVersion: "v1.34.4", APIVersions: []string{"v1", "example.com/v1"}}, nil
		},
	}
	objs, err := renderChart(t, dir, h)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"color": "red", "size": "large", "shape": "star", "owner": "inline",
		"namespace": "prod", "install": "true", "kube": "v1.34.4", "widgets": "true", "lookup": "0",
	}
	if diff := cmp.Diff(want, dataOf(t, objs, "shop-config")); diff != "" {
		t.Errorf("values, release and capabilities (-want +got):\n%s", diff)
	}
	if len(objs) != 1 {
		t.Errorf("want only the ConfigMap (no NOTES.txt, no partial), got %d objects", len(objs))
	}

	t.Run("without spec.helm the chart's own values and name", func(t *testing.T) {
		objs, err := renderChart(t, dir, source.Helm{})
		if err != nil {
			t.Fatal(err)
		}
		data := dataOf(t, objs, "web-config")
		if data["owner"] != "chart" || data["namespace"] != "default" {
			t.Errorf("got %v", data)
		}
	})
	t.Run("a values file outside the chart is refused", func(t *testing.T) {
		_, err := renderChart(t, dir, source.Helm{ValuesFiles: []string{"../secrets.yaml"}})
		if err == nil || !strings.Contains(err.Error(), "inside the chart's directory") {
			t.Errorf("got %v", err)
		}
	})
}

func TestAChartsCRDsComeFirstAndItsHooksAreKept(t *testing.T) {
	dir := writeChart(t, "widgets", map[string]string{
		"Chart.yaml":          webChart,
		"crds/widget.yaml":    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n",
		"templates/hook.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: migrate\n  annotations:\n    helm.sh/hook: pre-install,pre-upgrade\n",
	})
	objs, err := renderChart(t, dir, source.Helm{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		got = append(got, o.GetKind()+"/"+o.GetName())
	}
	// The hook keeps its annotation: the agent runs it as a PreSync hook
	// (plan.OrderingOf), not as a plain object.
	if diff := cmp.Diff([]string{"CustomResourceDefinition/widgets.example.com", "ConfigMap/plain", "Job/migrate"}, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if hook := objs[2].GetAnnotations()["helm.sh/hook"]; hook != "pre-install,pre-upgrade" {
		t.Errorf("the hook's helm.sh/hook = %q, want it kept", hook)
	}
	objs, err = renderChart(t, dir, source.Helm{SkipCRDs: true})
	if err != nil || len(objs) != 2 || objs[0].GetKind() != "ConfigMap" {
		t.Errorf("skipCRDs: got %d objects, %v", len(objs), err)
	}
}

func TestAChartsDependenciesMustBeVendored(t *testing.T) {
	files := map[string]string{
		"Chart.yaml": webChart + "dependencies:\n- name: lib\n  version: 0.1.0\n  repository: https://charts.example.com\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "lib.name" . }}
`,
	}
	dir := writeChart(t, "app", files)
	_, err := renderChart(t, dir, source.Helm{})
	if !errors.Is(err, source.ErrChartDependencyMissing) || !strings.Contains(err.Error(), "lib (https://charts.example.com 0.1.0)") {
		t.Fatalf("want the missing dependency named, got %v", err)
	}
	if !strings.Contains(err.Error(), "app/Chart.yaml") {
		t.Errorf("want the error to name the chart's Chart.yaml, got %v", err)
	}

	files["charts/lib/Chart.yaml"] = "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n"
	files["charts/lib/templates/_names.tpl"] = `{{- define "lib.name" -}}from-{{ .Chart.Name }}{{- end -}}`
	dir = writeChart(t, "app", files)
	objs, err := renderChart(t, dir, source.Helm{})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs) != 1 || objs[0].GetName() != "from-web" {
		t.Errorf("want the library chart's template included, got %v", objs)
	}
}

// TestAChartsValuesMustBeAMapping: values.yaml holding YAML that is not a
// mapping fails naming values.yaml (not Chart.yaml, as Helm's loader does)
// and what the document is, in the user's words rather than Go's types.
func TestAChartsValuesMustBeAMapping(t *testing.T) {
	for values, want := range map[string]string{
		"0\n":         "values must be a YAML mapping, not a number",
		"- a\n- b\n":  "values must be a YAML mapping, not a sequence",
		"just text\n": "values must be a YAML mapping, not a string",
		"a: [1, 2\n":  "values are not a YAML mapping",
	} {
		dir := writeChart(t, "app", map[string]string{
			"Chart.yaml":       webChart,
			"values.yaml":      values,
			"templates/t.yaml": "{{ .Values }}\n",
		})
		_, err := renderChart(t, dir, source.Helm{})
		if err == nil || !strings.Contains(err.Error(), "app/values.yaml: "+want) {
			t.Errorf("values %q: want app/values.yaml: %s..., got %v", values, want, err)
		}
		if err != nil && strings.Contains(err.Error(), "interface") {
			t.Errorf("values %q: the error shows Go's types: %v", values, err)
		}
	}
}

// TestHostileChartsAreBounded: each template below would, unbounded, run for
// hours or take gigabytes; each fails within the render's bounds, naming the
// chart and the bound.
func TestHostileChartsAreBounded(t *testing.T) {
	cases := map[string]string{
		"range over a huge number": `{{ range $i := until 100000000 }}x{{ end }}`,
		"range over an integer":    `{{ range 100000000000 }}{{ end }}`,
		"deep include recursion": `{{- define "boom" -}}{{ include "boom" . }}{{ include "boom" . }}{{- end -}}
{{ include "boom" . }}`,
		"exponential include": `{{- define "twice" -}}{{ if lt (len .) 40 }}{{ include "twice" (append . 1) }}{{ include "twice" (append . 1) }}{{ end }}{{- end -}}
{{ include "twice" list }}`,
		"a 1 GiB repeat":               `data: {{ repeat 1073741824 "x" }}`,
		"doubling a string":            `{{ $s := "xxxxxxxxxxxxxxxx" }}{{ range until 40 }}{{ $s = printf "%s%s" $s $s }}{{ $s }}{{ end }}`,
		"a huge printf width":          `{{ printf "%999999999d" 1 }}`,
		"a huge indent":                `{{ "x" | indent 1073741824 }}`,
		"a loop made by tpl":           `{{ tpl "{{ range 100000000000 }}{{ end }}" . }}`,
		"tpl calling itself":           `{{ tpl .Values.x . }}`,
		"print doubling":               `{{ $s := "xxxxxxxxxxxxxxxx" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}{{ len $s }}`,
		"a dict doubled, then toJson":  `{{ $d := dict "a" "b" }}{{ range until 40 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ toJson $d | len }}`,
		"a dict doubled, then printed": `{{ $d := dict "a" "b" }}{{ range until 40 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ print $d | len }}`,
	}
	for name, tmpl := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeChart(t, "hostile", map[string]string{
				"Chart.yaml":          webChart,
				"values.yaml":         "x: \"{{ tpl .Values.x . }}\"\n",
				"templates/evil.yaml": tmpl,
			})
			// The loops that run until the deadline need not run for the
			// default 30 s to show that they end there.
			opts := source.DefaultOptions()
			opts.RenderTimeout = 10 * time.Second
			_, err := source.RenderDirectory(t.Context(), dir, source.Helm{}, opts)
			var re *source.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("want a RenderError, got %v", err)
			}
			t.Logf("%s", err)
			if !strings.Contains(err.Error(), "hostile") {
				t.Errorf("want the chart named, got %v", err)
			}
			if name != "deep include recursion" && re.Reason != v1alpha1.ReasonRenderLimitExceeded {
				t.Errorf("want reason %s, got %q: %v", v1alpha1.ReasonRenderLimitExceeded, re.Reason, err)
			}
		})
	}
}

func TestAChartReadsOnlyItsOwnFiles(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "app")
	for name, content := range map[string]string{
		"app/Chart.yaml":        webChart,
		"app/files/ok.txt":      "inside",
		"outside.txt":           "secret",
		"app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: files\ndata:\n  ok: {{ .Files.Get \"files/ok.txt\" | quote }}\n  up: {{ .Files.Get \"../outside.txt\" | quote }}\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "files", "passwd")); err != nil {
		t.Fatal(err)
	}
	_, err := renderChart(t, dir, source.Helm{})
	if err == nil || !strings.Contains(err.Error(), "passwd") {
		t.Fatalf("want a symlink out of the repository refused, naming it, got %v", err)
	}
	if err := os.Remove(filepath.Join(dir, "files", "passwd")); err != nil {
		t.Fatal(err)
	}
	objs, err := renderChart(t, dir, source.Helm{})
	if err != nil {
		t.Fatal(err)
	}
	data := dataOf(t, objs, "files")
	if data["ok"] != "inside" || data["up"] != "" {
		t.Errorf("want only the chart's own files, got %v", data)
	}
}

// TestAChartFileOverTheNodeBoundSaysTheLimit: a chart's YAML file over the
// bound of nodes per file fails as RenderLimitExceeded, naming the file.
func TestAChartFileOverTheNodeBoundSaysTheLimit(t *testing.T) {
	dir := writeChart(t, "nodes", map[string]string{
		"Chart.yaml":        webChart,
		"values.yaml":       "items:\n" + strings.Repeat("- 1\n", 300_000),
		"templates/cm.yaml": "{}\n",
	})
	_, err := source.RenderDirectory(t.Context(), dir, source.Helm{}, source.DefaultOptions())
	var re *source.RenderError
	if !errors.As(err, &re) || re.Reason != v1alpha1.ReasonRenderLimitExceeded || !strings.Contains(err.Error(), "values.yaml") || !strings.Contains(err.Error(), "YAML nodes") {
		t.Fatalf("want %s naming values.yaml and the YAML node bound, got %v", v1alpha1.ReasonRenderLimitExceeded, err)
	}
}
