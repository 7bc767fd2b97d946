package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
)

// monorepo is a local clone of a repository with three apps, each a Sync's path.
type monorepo struct {
	dir string
	url string // the remote's URL, as the Syncs name it
}

func newMonorepo(t *testing.T, url string) *monorepo {
	t.Helper()
	m := &monorepo{dir: t.TempDir(), url: url}
	gitserver.Git(t, m.dir, "init", "--quiet", "--initial-branch", "main")
	// The remote in its scp-like form; the Syncs name it in https form.
	gitserver.Git(t, m.dir, "remote", "add", "origin", strings.Replace(strings.TrimPrefix(url, "https://"), "/", ":", 1)+".git")
	m.commit(t, map[string]string{
		"apps/a/cm.yaml": previewConfigMap("a", "one"),
		"apps/b/cm.yaml": previewConfigMap("b", "one"),
		"apps/c/cm.yaml": previewConfigMap("c", "one"),
		"README.md":      "three apps\n",
	}, "three apps")
	return m
}

// commit writes files and commits them, returning the commit.
func (m *monorepo) commit(t *testing.T, files map[string]string, msg string) string {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(m.dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitserver.Git(t, m.dir, "add", "--all")
	gitserver.Git(t, m.dir, "commit", "--quiet", "--message", msg)
	return gitserver.Git(t, m.dir, "rev-parse", "HEAD")
}

func previewConfigMap(name, greeting string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {greeting: %q}\n", name, greeting)
}

func previewSync(ns, name, url string) *v1alpha1.Sync {
	return &v1alpha1.Sync{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Sync"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.SyncSpec{
			Source:      v1alpha1.SourceSpec{URL: url, Ref: v1alpha1.GitRef{Branch: "main"}, Path: "apps/" + name},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
}

// previewOffline runs `tether preview --offline` of repo from base to head with
// s as the one Sync (-f), and returns its output, error output and exit code.
func previewOffline(t *testing.T, repo *monorepo, s *v1alpha1.Sync, base, head string) (string, string, int) {
	t.Helper()
	file := filepath.Join(t.TempDir(), s.Name+".yaml")
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err = run(t.Context(), []string{"preview", "--kubeconfig", unreachableKubeconfig(t), "--repo", repo.dir, "--base", base, "--head", head, "--offline", "-f", file}, &out, &errOut)
	return out.String(), errOut.String(), exitCode(err, &errOut)
}

func TestPreviewListsExactlyTheSyncsAChangeTouches(t *testing.T) {
	cp := controlplane.Shared(t)
	controlplane.InstallCRDs(t, cp.Config(), "../../deploy/base/crd")
	e := newDiffEnv(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// A URL of this test's own, so that the Syncs of other tests never match.
	repo := newMonorepo(t, "https://git.example.com/org/"+e.ns)
	base := gitserver.Git(t, repo.dir, "rev-parse", "HEAD")
	// The cluster holds the base of each app, as the agent applied it.
	for _, name := range []string{"a", "b", "c"} {
		s := previewSync(e.ns, name, repo.url)
		if err := c.Create(t.Context(), s); err != nil {
			t.Fatal(err)
		}
		objs, err := renderDir(t.Context(), filepath.Join(repo.dir, "apps", name), source.Helm{}, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := apply.NewManager(e.c, apply.ManagerOptions{}).ApplyAll(t.Context(), objs, plan.ForApply(s, objs, apply.DefaultOptions(), nil)); err != nil {
			t.Fatal(err)
		}
	}
	// Another repository's Sync, with the same path, is none of this change's.
	if err := c.Create(t.Context(), previewSync(e.ns, "b-elsewhere", "https://git.example.com/org/other")); err != nil {
		t.Fatal(err)
	}
	preview := func(t *testing.T, args ...string) (string, string, int) {
		t.Helper()
		var out, errOut bytes.Buffer
		err := run(t.Context(), append([]string{"preview", "--kubeconfig", e.kubeconfig, "--repo", repo.dir}, args...), &out, &errOut)
		return out.String(), errOut.String(), exitCode(err, &errOut)
	}

	head := repo.commit(t, map[string]string{"apps/b/cm.yaml": previewConfigMap("b", "two")}, "b says two")
	t.Run("a change to one app lists that Sync alone, with its diff, exit 1", func(t *testing.T) {
		out, errOut, code := preview(t, "--base", base, "--head", head)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
		}
		if !strings.Contains(out, "=== Sync "+e.ns+"/b (apps/b) changes") {
			t.Errorf("the touched Sync is not listed:\n%s", out)
		}
		for _, want := range []string{"diff ConfigMap/" + e.ns + "/b (configured)", "-  greeting: one\n+  greeting: two\n kind: ConfigMap\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "owned-by") {
			t.Errorf("the diff shows the Sync's own marks, which the cluster holds already:\n%s", out)
		}
		for _, untouched := range []string{"/a (apps/a) changes", "/c (apps/c) changes", "b-elsewhere"} {
			if strings.Contains(out, untouched) {
				t.Errorf("output lists %q, which the change does not touch:\n%s", untouched, out)
			}
		}
	})

	t.Run("markdown collapses each Sync, json says the same for a program", func(t *testing.T) {
		out, _, code := preview(t, "--base", base, "--head", head, "--output", "markdown")
		if code != 1 || !strings.Contains(out, "<details><summary>Sync "+e.ns+"/b (apps/b)</summary>") || !strings.Contains(out, "1 Sync(s) change, 2 untouched") {
			t.Errorf("exit %d, markdown:\n%s", code, out)
		}
		out, _, code = preview(t, "--base", base, "--head", head, "--output", "json")
		var report previewReport
		if err := json.Unmarshal([]byte(out), &report); err != nil || code != 1 {
			t.Fatalf("exit %d, json %v:\n%s", code, err, out)
		}
		changed := []string{}
		for _, p := range report.Syncs {
			if p.Changed {
				changed = append(changed, p.Name)
			}
		}
		if len(report.Syncs) != 3 || strings.Join(changed, ",") != "b" {
			t.Errorf("json lists %d Syncs, changed %v; want 3, [b]", len(report.Syncs), changed)
		}
	})

	docs := repo.commit(t, map[string]string{"README.md": "three apps, documented\n"}, "docs only")
	t.Run("a change outside every Sync's path exits 0", func(t *testing.T) {
		out, errOut, code := preview(t, "--base", head, "--head", docs)
		if code != 0 || strings.Contains(out, "changes") || !strings.Contains(errOut, "touches no Sync") {
			t.Errorf("exit %d, want 0 and nothing listed as changed\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("offline, the renders are compared without a cluster", func(t *testing.T) {
		out, errOut, code := previewOffline(t, repo, previewSync(e.ns, "b", repo.url), base, head)
		if code != 1 || !strings.Contains(out, "+  greeting: two") {
			t.Errorf("exit %d, want 1 and the render's diff\n%s\n%s", code, out, errOut)
		}
	})

	// A hook (generateName, as Argo CD repositories write them) is run by the agent,
	// not kept applied: the preview leaves it out of the diff, as tether diff does.
	hooked := repo.commit(t, map[string]string{"apps/c/migrate.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  generateName: migrate-\n  annotations: {argocd.argoproj.io/hook: PreSync}\n" +
		"spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: m, image: alpine:3.20}]\n"}, "c migrates first")
	t.Run("a hook added is left out of the diff with the cluster", func(t *testing.T) {
		out, errOut, code := preview(t, "--base", docs, "--head", hooked)
		if code == 2 || !strings.Contains(out, "=== Sync "+e.ns+"/c (apps/c) changes") || !strings.Contains(out, "the cluster already holds it") {
			t.Errorf("exit %d, want c listed, its render changed and the cluster holding what it keeps applied\n%s\n%s", code, out, errOut)
		}
	})
}

func TestRepositoryKey(t *testing.T) {
	same := []string{"https://git.example.com/org/repo.git", "ssh://git@git.example.com:22/org/repo", "git@git.example.com:org/repo.git", "https://user:pw@GIT.example.com/org/repo/"}
	for _, u := range same {
		if got := repositoryKey(u); got != "git.example.com/org/repo" {
			t.Errorf("repositoryKey(%q) = %q", u, got)
		}
	}
	if repositoryKey("file:///srv/git/repo.git") != repositoryKey("/srv/git/repo") {
		t.Error("a file URL and its path are not one repository")
	}
	if repositoryKey("https://git.example.com/org/repo") == repositoryKey("https://git.example.com/org/repo2") {
		t.Error("two repositories share a key")
	}
}

func TestPreviewMarkdownIsBoundedAndFenced(t *testing.T) {
	hostile := "```\n<script>alert(1)</script>\n" + strings.Repeat("x\n", maxMarkdown)
	md := previewMarkdown(&previewReport{Syncs: []syncPreview{
		{Namespace: "ns", Name: "a", Path: "<b>", Changed: true, Diff: hostile},
		{Namespace: "ns", Name: "b", Path: "b", Changed: true, Diff: hostile},
		{Namespace: "ns", Name: "c", Path: "c", Changed: true, Diff: hostile},
		{Namespace: "ns", Name: "d", Path: "d", Changed: true, Diff: hostile},
	}})
	if len(md) > maxMarkdown {
		t.Errorf("markdown of %d bytes, over %d", len(md), maxMarkdown)
	}
	if !strings.Contains(md, "````diff") || strings.Contains(md, "(<b>)") {
		t.Errorf("the diff's own fence or the path's HTML is not neutralised:\n%.500s", md)
	}
	if !strings.Contains(md, "Sync ns/d (d): diff left out") {
		t.Errorf("a Sync past the bound is not named:\n%.300s", md[len(md)-300:])
	}
}

// TestPreviewRendersAChartSyncAsTheAgentDoes: a Sync whose path is a Helm chart
// is rendered as a chart (its release name and spec.helm values), not read as
// plain YAML ("yaml: invalid map key" before).
func TestPreviewRendersAChartSyncAsTheAgentDoes(t *testing.T) {
	repo := newMonorepo(t, "https://git.example.com/org/charts")
	chart := map[string]string{
		"apps/web/Chart.yaml":          "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"apps/web/values.yaml":         "greeting: one\ncolour: red\n",
		"apps/web/templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\ndata:\n  greeting: {{ .Values.greeting | quote }}\n  colour: {{ .Values.colour | quote }}\n",
		"apps/web/templates/_help.tpl": "{{- define \"web.unused\" -}}{{- end -}}\n",
	}
	base := repo.commit(t, chart, "a chart")
	head := repo.commit(t, map[string]string{"apps/web/values.yaml": "greeting: two\ncolour: red\n"}, "greet twice")

	s := previewSync("tenant", "web", repo.url)
	s.Spec.Helm = &v1alpha1.HelmSpec{ReleaseName: "shop", Values: &apiextensionsv1.JSON{Raw: []byte(`{"colour":"blue"}`)}}
	out, errOut, code := previewOffline(t, repo, s, base, head)
	for _, want := range []string{"shop-settings", `+  greeting: two`, "colour: blue"} {
		if !strings.Contains(out, want) {
			t.Errorf("the diff does not say %q", want)
		}
	}
	if code != 1 || t.Failed() {
		t.Fatalf("exit %d, want 1 and the chart's diff with the Sync's release name and values\n%s\n%s", code, out, errOut)
	}
}

// TestPreviewRendersWhatTheAgentPutsOnTopOfTheRender: spec.source.directory,
// spec.kustomize and spec.postBuild change what the agent applies, so the
// preview renders with them too (it once rendered the bare path and showed a
// diff of objects the agent never applies).
func TestPreviewRendersWhatTheAgentPutsOnTopOfTheRender(t *testing.T) {
	repo := newMonorepo(t, "https://git.example.com/org/preview-on-top")
	app := func(greeting string) map[string]string {
		return map[string]string{
			"apps/d/cm.yaml":                      previewConfigMap("d", "${greeting:=unset}-"+greeting),
			"apps/d/draft.yaml":                   previewConfigMap("draft", greeting),
			"components/label/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonLabels: {tier: web-" + greeting + "}\n",
		}
	}
	base := repo.commit(t, app("one"), "d says one")
	head := repo.commit(t, app("two"), "d says two")

	s := previewSync("team", "d", repo.url)
	s.Spec.Source.Directory = &v1alpha1.DirectorySpec{Exclude: "draft.yaml"}
	s.Spec.Kustomize = &v1alpha1.Kustomize{NamePrefix: "pre-", Components: []string{"../../components/label"}}
	s.Spec.PostBuild = &v1alpha1.PostBuild{Substitute: map[string]string{"greeting": "hi"}}
	preview := func(t *testing.T, s *v1alpha1.Sync) (string, string, int) {
		t.Helper()
		return previewOffline(t, repo, s, base, head)
	}

	t.Run("the diff is of the objects the agent applies", func(t *testing.T) {
		out, errOut, code := preview(t, s)
		if code != 1 {
			t.Fatalf("exit %d, want 1\n%s\n%s", code, out, errOut)
		}
		for _, want := range []string{"diff ConfigMap/pre-d (configured)", "-  greeting: hi-one\n+  greeting: hi-two\n", "-    tier: web-one\n+    tier: web-two\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		for _, never := range []string{"draft", "${greeting", "ConfigMap/d "} {
			if strings.Contains(out, never) {
				t.Errorf("output shows %q, which the agent never applies:\n%s", never, out)
			}
		}
	})

	t.Run("offline, variables from the cluster fail the Sync's preview, saying so", func(t *testing.T) {
		from := s.DeepCopy()
		from.Spec.PostBuild.SubstituteFrom = []v1alpha1.SubstituteReference{{Kind: "ConfigMap", Name: "cluster-vars"}}
		out, errOut, code := preview(t, from)
		if code != 2 || !strings.Contains(out+errOut, "ConfigMap/cluster-vars") || !strings.Contains(out+errOut, "--offline") {
			t.Errorf("exit %d, want 2 naming ConfigMap/cluster-vars and --offline\n%s\n%s", code, out, errOut)
		}
	})
}
