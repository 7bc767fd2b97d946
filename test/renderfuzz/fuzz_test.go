// Package renderfuzz fuzzes the render wall from outside: the fuzzer's chart
// templates and values are rendered by the shipped binary (`tether render`),
// whose render workers are the processes the agent starts. The package imports
// none of the agent, so that `go test -fuzz` instruments only this package and
// the standard library, not Helm, kustomize and Kubernetes' clients (the
// renders ran in workers of their own before as well, outside the fuzzer's
// coverage).
package renderfuzz

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// renderTimeout is the render's deadline (the agent's --render-timeout).
	renderTimeout = 5 * time.Second
	// workerMemory is a worker's memory limit: 256 MiB, the bound on one
	// hostile input. A worker at rest holds about 110 MiB of what RLIMIT_DATA
	// counts, which leaves a render room to fail by its budgets before its
	// limits, as the shipped 384 MiB does.
	workerMemory = 256 << 20
	// maxRenderedBytes bounds the objects of one render (the default).
	maxRenderedBytes = 16 << 20
	// The command's exit statuses (docs/cli.md): a render that failed, and one
	// past its deadline.
	exitBroken, exitTimedOut = 2, 3
)

// FuzzAChartRendersBehindTheWall renders a chart of one template and one
// values file, both the fuzzer's, as `tether render` does (the agent's render
// path, in a worker within the agent's limits): whatever they hold, the
// command ends before its deadline with the objects or with its lines naming
// the chart and the cause, never by a signal or a crash of the command or a
// worker, and prints no more than the render's bound. `go test` runs the
// seeds; `make fuzz` fuzzes for a bounded time.
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
	f.Fuzz(func(t *testing.T, tmpl, values string) {
		dir := t.TempDir()
		for name, data := range map[string]string{
			"c/Chart.yaml":          "apiVersion: v2\nname: c\nversion: 0.1.0\n",
			"c/values.yaml":         values,
			"c/templates/t.yaml":    tmpl,
			"c/templates/_help.tpl": `{{- define "c.name" -}}{{ .Chart.Name }}{{- end -}}`,
		} {
			path := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		stdout, stderr, code := render(t, dir, "c")
		switch code {
		case 0:
			if len(stdout) > 8*maxRenderedBytes {
				t.Fatalf("the render printed %d bytes of objects, over its bound", len(stdout))
			}
		case exitBroken, exitTimedOut:
			failure(t, stderr)
		default:
			t.Fatalf("tether render exited %d:\n%s", code, truncated(stderr))
		}
	})
}

// render runs `tether render chart` in dir, and returns what it printed and
// its exit status; a command that outlives its deadline by a minute, or that
// a signal ended, fails the test.
func render(t *testing.T, dir, chart string) (stdout, stderr []byte, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), renderTimeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tetherBinary, "render", chart,
		"--render-timeout="+renderTimeout.String(),
		"--render-memory-limit="+strconv.Itoa(workerMemory),
		"--max-rendered-bytes="+strconv.Itoa(maxRenderedBytes))
	cmd.Dir = dir
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tether render did not end within %s of its deadline", time.Minute)
	}
	var exit *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), errOut.Bytes(), 0
	case !errors.As(err, &exit):
		t.Fatal(err)
	case !exit.Exited():
		t.Fatalf("tether render ended by %v:\n%s", exit, truncated(errOut.Bytes()))
	}
	return out.Bytes(), errOut.Bytes(), exit.ExitCode()
}

// failure checks what a failed render said: the command's lines (each
// "tether: ", a template's error indented over several), the first naming the
// chart; no crash of a worker (one that ended for no limit it was given) or of
// the command.
func failure(t *testing.T, stderr []byte) {
	t.Helper()
	msg := string(stderr)
	// A worker's crash is reported as one (ErrRenderWorker); the command's
	// own panic or fatal error prints lines of Go's runtime, not the
	// command's, and exits 2 as a failed render does. The template's text may
	// say anything inside the command's lines.
	if strings.Contains(msg, "render worker ended without an answer") {
		t.Fatalf("a render worker crashed:\n%s", truncated(stderr))
	}
	lines := strings.Split(strings.TrimSuffix(msg, "\n"), "\n")
	// The chart, or a file of it ("c/values.yaml: ..."), comes first.
	if !strings.HasPrefix(lines[0], "tether: c: ") && !strings.HasPrefix(lines[0], "tether: c/") {
		t.Fatalf("a failed render said, not naming the chart first:\n%s", truncated(stderr))
	}
	for _, line := range lines {
		if !strings.HasPrefix(line, "tether: ") {
			t.Fatalf("a failed render said, beside the command's own lines:\n%s", truncated(stderr))
		}
	}
}

// truncated is at most the first 4 KiB of b, for a failure's message.
func truncated(b []byte) string {
	if len(b) > 4<<10 {
		return string(b[:4<<10]) + "…"
	}
	return string(b)
}
