package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tether.dev/tether/source"
)

func TestRenderPrintsWhatTheAgentWouldApply(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"render", "testdata/app/prod"}, &out, &errOut); err != nil {
		t.Fatalf("tether render: %v\n%s", err, errOut.String())
	}
	objs, err := source.DecodeManifests(out.Bytes())
	if err != nil {
		t.Fatalf("output is not a manifest stream: %v\n%s", err, out.String())
	}
	if len(objs) != 1 || objs[0].GetKind() != "Deployment" || objs[0].GetNamespace() != "prod" {
		t.Fatalf("rendered %d objects, want the prod Deployment:\n%s", len(objs), out.String())
	}
	if replicas := objs[0].Object["spec"].(map[string]any)["replicas"]; replicas != int64(3) {
		t.Errorf("spec.replicas = %v, want the overlay's 3", replicas)
	}
}

func TestRenderOfAMissingDirectoryNamesItAsTyped(t *testing.T) {
	for _, typed := range []string{t.TempDir() + "/missing", "testdata/missing", "testdata/app/prod/kustomization.yaml"} {
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"render", typed}, &out, &errOut)
		if want := typed + ": no such directory"; err == nil || err.Error() != want {
			t.Errorf("tether render %s: error %v, want %q", typed, err, want)
		}
		if code := exitCode(err, &errOut); code != exitBroken {
			t.Errorf("tether render %s: exit status %d, want 2", typed, code)
		}
		if out.Len() != 0 {
			t.Errorf("printed %q on failure, want nothing", out.String())
		}
	}
}

func TestRenderReportsTheFileAtFault(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n")
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"render", dir}, &out, &errOut)
	if !source.IsRenderError(err) || !strings.Contains(err.Error(), "cm.yaml") {
		t.Errorf("tether render of a broken file: error %v, want a render error naming cm.yaml", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q on failure, want nothing", out.String())
	}
}

func TestRenderOfNothingIsAnEmptyStream(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir+"/empty.yaml", "# nothing here yet\n---\n")
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"render", dir}, &out, &errOut); err != nil {
		t.Fatalf("tether render of a directory of no objects: %v", err)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q, want nothing", out.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{nil, {"frobnicate"}, {"render"}, {"render", "a", "b"}} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), args, &out, &errOut); !errors.Is(err, errUsage) {
			t.Errorf("tether %v: error %v, want a usage error (exit 2)", args, err)
		}
		if errOut.Len() == 0 {
			t.Errorf("tether %v printed no usage", args)
		}
	}
}

// TestRenderEndsAtItsDeadline: a render past --render-timeout ends there, as
// the agent's does, with exit status 3, naming the directory. The render here is
// 4,000 ConfigMaps, tens of milliseconds of work at the least, against a
// deadline of a millisecond.
func TestRenderEndsAtItsDeadline(t *testing.T) {
	dir := t.TempDir()
	var many strings.Builder
	for i := range 4000 {
		fmt.Fprintf(&many, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {index: \"%d\"}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "many.yaml"), []byte(many.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	ended := make(chan error, 1)
	go func() { ended <- run(t.Context(), []string{"render", "--render-timeout", "1ms", dir}, &out, &errOut) }()
	var err error
	select {
	case err = <-ended:
	case <-time.After(time.Minute): // a hang, not a performance bound
		t.Fatal("tether render --render-timeout 1ms has not returned after a minute")
	}
	if !errors.Is(err, source.ErrRenderTimeout) || !source.IsRenderError(err) || !strings.Contains(err.Error(), dir) {
		t.Errorf("tether render of a render that never ends: error %v; want a render error naming %s, wrapping ErrRenderTimeout", err, dir)
	}
	if code := exitCode(err, &errOut); code != exitTimedOut {
		t.Errorf("exit status %d, want %d (timed out)", code, exitTimedOut)
	}
	if out.Len() != 0 {
		t.Errorf("printed %q on failure, want nothing", out.String())
	}
}

// TestRenderLeavesOutWhatGitCannotHold: a named pipe in the directory (which a
// render used to wait on for good) is left out, as a commit cannot hold one, and
// the rest renders.
func TestRenderLeavesOutWhatGitCannotHold(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: only}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run(t.Context(), []string{"render", dir}, &out, &errOut); err != nil {
		t.Fatalf("tether render: %v\n%s", err, errOut.String())
	}
	if got := out.String(); !strings.Contains(got, "name: only") || strings.Count(got, "kind:") != 1 {
		t.Errorf("tether render printed %q; want the one ConfigMap", got)
	}
}
