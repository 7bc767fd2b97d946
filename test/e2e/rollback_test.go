package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

func TestCLIRollsBackAndUndoes(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	commit := func(greeting, subject string) string {
		return repo.Commit(t, map[string]string{"app/config.yaml": fmt.Sprintf(cliConfig, "web-config", greeting)}, subject)
	}
	greeting := func() string {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data["greeting"]
	}
	first := commit("hello", "Say hello")
	startAgent(t)
	sync := gitSync(ns, "web", repo.URL(), "app", time.Hour)
	createSync(t, c, sync)
	waitRevision(t, c, sync, first)
	second := commit("bonjour", "Say bonjour")
	if r := tether(t, "reconcile", "web", "-n", ns, "--wait", "--timeout", "2m"); r.code != 0 {
		t.Fatalf("reconcile --wait: %s", r)
	}
	_ = second

	t.Run("history lists both revisions, newest first", func(t *testing.T) {
		r := tether(t, "history", "web", "-n", ns)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 3 {
			t.Fatalf("want a header and two rows:\n%s", r)
		}
		for i, want := range [][]string{{"*", "main@" + second[:7]}, {"main@" + first[:7]}} {
			row := lines[i+1]
			if !strings.HasPrefix(strings.Join(strings.Fields(row), " "), strings.Join(want, " ")) || !strings.Contains(row, "Healthy") {
				t.Errorf("row %d %q, want %v, Healthy", i, row, want)
			}
		}
		if !strings.Contains(lines[1], "Say bonjour") || !strings.Contains(lines[2], "Say hello") {
			t.Errorf("want the subjects:\n%s", r.stdout)
		}
	})

	t.Run("rollback pins the last Healthy revision and waits for it", func(t *testing.T) {
		r := tether(t, "rollback", "web", "-n", ns, "--timeout", "2m")
		if r.code != 0 || !strings.Contains(r.stdout, "► pinned Sync "+ns+"/web to "+first) || !strings.Contains(r.stdout, "✔ Applied revision main@sha1:"+first) {
			t.Fatalf("want exit 0, the pin and the revision applied:\n%s", r)
		}
		if g := greeting(); g != "hello" {
			t.Errorf("greeting %q, want the first commit's hello", g)
		}
		s := &v1alpha1.Sync{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(sync), s); err != nil {
			t.Fatal(err)
		}
		var manager string
		for _, f := range s.ManagedFields {
			if strings.Contains(string(f.FieldsV1.Raw), v1alpha1.PinRevisionAnnotation) {
				manager = f.Manager
			}
		}
		if manager != "tether-cli" {
			t.Errorf("the pin is owned by %q, want the CLI's own field manager tether-cli", manager)
		}
		if r := tether(t, "get", "web", "-n", ns); !strings.Contains(r.stdout, first[:7]) || !strings.Contains(r.stdout, "main@"+first[:7]) {
			t.Errorf("get does not show the pin:\n%s", r)
		}
	})

	third := commit("hallo", "Say hallo")
	t.Run("a new commit is fetched but not applied while pinned", func(t *testing.T) {
		r := tether(t, "reconcile", "web", "-n", ns, "--wait", "--timeout", "2m")
		if r.code != 0 {
			t.Fatalf("reconcile --wait: %s", r)
		}
		if g := greeting(); g != "hello" {
			t.Errorf("greeting %q while pinned, want hello", g)
		}
		if r := tether(t, "history", "web", "-n", ns); !strings.Contains(r.stdout, "git is at main@"+third[:7]) || !strings.Contains(r.stdout, "Pinned to "+first) {
			t.Errorf("history does not say the pin and where git is:\n%s", r)
		}
	})

	t.Run("rollback --undo follows the branch again", func(t *testing.T) {
		r := tether(t, "rollback", "web", "-n", ns, "--undo", "--timeout", "2m")
		if r.code != 0 || !strings.Contains(r.stdout, "✔ Applied revision main@sha1:"+third) {
			t.Fatalf("want exit 0 and the newest commit applied:\n%s", r)
		}
		if g := greeting(); g != "hallo" {
			t.Errorf("greeting %q, want hallo", g)
		}
	})

	t.Run("rollback --to a revision the history lacks exits 1", func(t *testing.T) {
		r := tether(t, "rollback", "web", "-n", ns, "--to", "abc")
		if r.code != 1 || !strings.Contains(r.stderr, "names no revision of its history") {
			t.Errorf("want exit 1 and why:\n%s", r)
		}
	})
}
