package source

import (
	"errors"
	"testing"
	"time"
)

// FuzzAChartRendersBehindTheWall renders a chart of one template and one
// values file, both the fuzzer's, through the render wall as the agent does:
// whatever they hold, the render ends with objects or a RenderError, within
// the worker's limits, and the test process (the agent's side) never takes
// more than what a worker answered. `go test` runs the seeds; `make fuzz`
// fuzzes for a bounded time.
func FuzzAChartRendersBehindTheWall(f *testing.F) {
	seeds := []struct{ tmpl, values string }{
		{"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Values.name }}}\n", "name: a\n"},
		{`{{ tpl .Values.x . }}`, "x: \"{{ tpl .Values.x . }}\"\n"},
		{`{{ $s := "xx" }}{{ range until 40 }}{{ $s = print $s $s }}{{ end }}{{ len $s }}`, ""},
		{`{{ $d := dict "a" "b" }}{{ range until 40 }}{{ $d = dict "l" $d "r" $d }}{{ end }}{{ toJson $d | len }}`, ""},
		{`{{ range 100000000000 }}{{ end }}`, ""},
		{`{{ fail .Values.secret }}`, "secret: hunter2hunter2\n"},
		{"{{- define \"x\" -}}{{ include \"x\" . }}{{- end -}}{{ include \"x\" . }}", ""},
		{`{{ repeat 100000000 "x" }}`, "a: &a [1,2]\nb: [*a,*a,*a]\n"},
	}
	for _, s := range seeds {
		f.Add(s.tmpl, s.values)
	}
	opts := DefaultOptions()
	opts.RenderTimeout = 5 * time.Second
	// A worker at rest holds about 110 MiB of what RLIMIT_DATA counts: 256
	// MiB (the bound on one hostile input) leaves a render room to fail by
	// its budgets before its limits, as the shipped 384 MiB does.
	opts.RenderMemoryLimit = 256 << 20
	f.Fuzz(func(t *testing.T, tmpl, values string) {
		fs := newInMemoryFS()
		for name, data := range map[string]string{
			"/c/Chart.yaml":          "apiVersion: v2\nname: c\nversion: 0.1.0\n",
			"/c/values.yaml":         values,
			"/c/templates/t.yaml":    tmpl,
			"/c/templates/_help.tpl": `{{- define "c.name" -}}{{ .Chart.Name }}{{- end -}}`,
		} {
			if err := fs.WriteFile(name, []byte(data)); err != nil {
				t.Fatal(err)
			}
		}
		files, dirs := fs.contents()
		job := &renderJob{Dir: "c", Files: files, Dirs: dirs, Helm: &jobHelm{}, Opts: opts}
		r, err := runWorker(job, opts)
		var re *RenderError
		switch {
		case err == nil:
			if held := heldSizeOf(r.objs); held > opts.MaxRenderedBytes*8 {
				t.Fatalf("the render answered %d bytes of objects, over its bound", held)
			}
		case !errors.As(err, &re):
			t.Fatalf("a render failed with %T, not a RenderError: %v", err, err)
		case errors.Is(err, ErrRenderWorker):
			t.Fatalf("the worker ended for no limit: %v", err)
		}
	})
}
