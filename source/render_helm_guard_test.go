package source

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
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
