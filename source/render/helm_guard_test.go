package render

import (
	"errors"

	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/result"
)

// guardedTemplates are templates that use what charts use: defines, include,
// tpl, range with else, with, variables and assignment, whitespace trimming,
// comments, break and continue, and pipelines.
var guardedTemplates = map[string]string{
	"templates/_helpers.tpl": `{{/* a comment */}}
{{- define "t.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "t.labels" -}}
app: {{ include "t.name" . }}
{{- range $k, $v := .Values.labels }}
{{ $k }}: {{ $v | quote }}
{{- end }}
{{- end }}`,
	"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "t.name" . }}
  labels:
    {{- include "t.labels" . | nindent 4 }}
data:
  {{- $count := 0 }}
  {{- range $i, $p := .Values.ports }}
  {{- if eq $p 0 }}{{ continue }}{{ end }}
  {{- if gt $p 9000 }}{{ break }}{{ end }}
  {{- $count = add1 $count }}
  port{{ $i }}: {{ $p | quote }}
  {{- else }}
  none: "true"
  {{- end }}
  count: {{ $count | quote }}
  {{- with .Values.greeting }}
  greeting: {{ tpl . $ | quote }}
  {{- else }}
  greeting: none
  {{- end }}
  list: {{ until 3 | join "," | quote }}
  printf: {{ printf "%05d-%s" 42 "x" | quote }}
`,
}

func guardedChart() *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{Name: "t", Version: "0.1.0", APIVersion: "v2"}}
	for name, data := range guardedTemplates {
		c.Templates = append(c.Templates, &common.File{Name: name, Data: []byte(data)})
	}
	return c
}

// TestGuardedTemplatesRenderAsHelmRendersThem: the decorated functions return
// what Helm's return, so a chart renders the same with and without them.
func TestGuardedTemplatesRenderAsHelmRendersThem(t *testing.T) {
	vals := common.Values{
		"Values": map[string]any{
			"labels":   map[string]any{"tier": "web", "team": "a"},
			"ports":    []any{80, 0, 443, 9443, 8080},
			"greeting": "hello {{ .Chart.Name }}",
		},
		"Chart":   map[string]any{"Name": "t"},
		"Release": map[string]any{"Name": "r", "Namespace": "ns"},
	}
	want, err := engine.Render(guardedChart(), vals)
	if err != nil {
		t.Fatal(err)
	}
	got, err := executeTemplates(guardedChart(), vals, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("guarded render differs (-helm +guarded):\n%s", diff)
	}
	if !strings.Contains(got["t/templates/cm.yaml"], `greeting: "hello t"`) {
		t.Errorf("tpl did not render: %s", got["t/templates/cm.yaml"])
	}
}

// TestTplRendersAsHelmsTpl: Tether's tpl (render_helm_tpl.go) gives what
// Helm's gives: defines of the chart and its subcharts (the parent's winning),
// a define made inside a tpl text and included there, tpl nested in tpl, a
// missing value, Helm's parsers and required inside tpl, and tpl given a
// value other than the top-level one.
func TestTplRendersAsHelmsTpl(t *testing.T) {
	parent := &chart.Chart{Metadata: &chart.Metadata{Name: "p", Version: "0.1.0", APIVersion: "v2"}}
	sub := &chart.Chart{Metadata: &chart.Metadata{Name: "s", Version: "0.1.0", APIVersion: "v2"}}
	lib := &chart.Chart{Metadata: &chart.Metadata{Name: "lib", Version: "0.1.0", APIVersion: "v2", Type: "library"}}
	parent.AddDependency(sub, lib)
	add := func(c *chart.Chart, name, data string) {
		c.Templates = append(c.Templates, &common.File{Name: name, Data: []byte(data)})
	}
	add(parent, "templates/_helpers.tpl", `{{- define "shared" -}}parent{{- end -}}`)
	add(sub, "templates/_helpers.tpl", `{{- define "shared" -}}sub{{- end -}}{{- define "sub.only" -}}only {{ .x }}{{- end -}}`)
	add(lib, "templates/_lib.tpl", `{{- define "lib.name" -}}lib-{{ . }}{{- end -}}`)
	add(lib, "templates/ignored.yaml", `a library chart's non-partial is not a template`)
	add(sub, "templates/s.yaml", `sub: {{ tpl .Values.msg . }}`)
	add(parent, "templates/p.yaml", `shared: {{ tpl "{{ include \"shared\" . }}" . }}
only: {{ tpl "{{ include \"sub.only\" (dict \"x\" 1) }}" . }}
lib: {{ tpl "{{ include \"lib.name\" \"x\" }}" . }}
defined: {{ tpl "{{ define \"inner\" }}in-{{ . }}{{ end }}{{ include \"inner\" 7 }}" . }}
nested: {{ tpl .Values.outer . }}
missing: [{{ tpl "{{ .Values.nothing }}" . }}]
parsed: {{ tpl "{{ (fromYaml \"a: 1\").a }} {{ (fromJson \"{\\\"b\\\": 2}\").b }} {{ required \"x\" \"y\" }}" . }}
other: {{ tpl "{{ .name }}" (dict "name" "given") }}
name: {{ tpl "{{ .Template.Name }}" . }}
`)
	vals := common.Values{
		"Values": map[string]any{
			"outer": `{{ tpl .Values.inner . }}!`,
			"inner": `{{ .Release.Name }}-{{ .Chart.Name }}`,
			"s":     map[string]any{"msg": `{{ include "shared" . }} {{ .Values.msg | len }}`},
		},
		"Release":      map[string]any{"Name": "r", "Namespace": "ns"},
		"Capabilities": map[string]any{},
	}
	want, err := engine.Render(parent, vals)
	if err != nil {
		t.Fatal(err)
	}
	got, err := executeTemplates(parent, vals, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Tether's tpl renders otherwise than Helm's (-helm +tether):\n%s", diff)
	}
	if !strings.Contains(got["p/templates/p.yaml"], "nested: r-p!") || !strings.Contains(got["p/templates/p.yaml"], "defined: in-7") {
		t.Errorf("tpl did not render: %s", got["p/templates/p.yaml"])
	}
}

// TestTplCallingItselfIsCounted: the two-line chart that once ended the agent
// (a value that passes itself to tpl) is refused at tpl's depth bound, naming
// the template; so is an include that calls itself inside tpl. Both fail
// within the engine, well before any of the worker's limits.
func TestTplCallingItselfIsCounted(t *testing.T) {
	for name, tc := range map[string]struct{ template, want string }{
		"tpl":     {`{{ tpl .Values.x . }}`, "tpl nests more than 64 deep in t/templates/t.yaml"},
		"include": {`{{ tpl "{{ define \"loop\" }}{{ include \"loop\" . }}{{ end }}{{ include \"loop\" . }}" . }}`, `template "loop" includes itself more than 1000 deep inside tpl`},
	} {
		t.Run(name, func(t *testing.T) {
			c := &chart.Chart{Metadata: &chart.Metadata{Name: "t", Version: "0.1.0", APIVersion: "v2"}}
			c.Templates = []*common.File{{Name: "templates/t.yaml", Data: []byte(tc.template)}}
			vals := common.Values{"Values": map[string]any{"x": `{{ tpl .Values.x . }}`}, "Release": map[string]any{"Name": "r"}}
			_, err := executeTemplates(c, vals, DefaultOptions())
			var re *result.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("want a result.RenderError, got %v", err)
			}
			if re.Reason != v1alpha1.ReasonRenderLimitExceeded || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want %s naming %q, got %q: %v", v1alpha1.ReasonRenderLimitExceeded, tc.want, re.Reason, err)
			}
			if len(err.Error()) > 2*maxTemplateError {
				t.Errorf("the message is %d bytes", len(err.Error()))
			}
		})
	}
}
