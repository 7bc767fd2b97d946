package render

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"tether.dev/tether/source/result"
)

// metadataServer stands for a cloud metadata endpoint inside the cluster's
// network: it counts every request, answers /meta-data with a secret and never
// answers /hang.
type metadataServer struct {
	*httptest.Server
	requests atomic.Int64
}

func startMetadataServer(t *testing.T) *metadataServer {
	t.Helper()
	s := &metadataServer{}
	done := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		if r.URL.Path == "/hang" {
			<-done
			return
		}
		_, _ = w.Write([]byte("instance-secret"))
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(done) }) // runs first: releases hanging handlers
	return s
}

// renderWithin renders directory app of files, failing the test if it takes
// longer than ten seconds: a render that fetched a URL that never answers would
// never return.
func renderWithin(t *testing.T, files map[string]string) ([]*unstructured.Unstructured, error) {
	const dir, bound = "app", 10 * time.Second
	t.Helper()
	type result struct {
		objs []*unstructured.Unstructured
		err  error
	}
	done := make(chan result, 1)
	go func() {
		objs, err := render(t, files, dir)
		done <- result{objs, err}
	}()
	select {
	case r := <-done:
		return r.objs, r.err
	case <-time.After(bound):
		t.Fatalf("rendering %s did not return within %s", dir, bound)
		return nil, nil
	}
}

func TestKustomizeNeverReachesTheNetwork(t *testing.T) {
	srv := startMetadataServer(t)
	url := srv.URL + "/meta-data"
	k := func(body string) string {
		return "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body
	}
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n"
	cases := []struct {
		field string            // what the case exercises
		files map[string]string // besides app/deploy.yaml
		file  string            // the file the error names
		names string            // the field path the error names
	}{
		{"configMapGenerator files", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: c\n  files: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"configMapGenerator files as key=URL", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: c\n  files: [\"creds=" + url + "\"]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"configMapGenerator envs", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: c\n  envs: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].envs[0]"},
		{"configMapGenerator env", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: c\n  env: \"" + url + "\"\n")},
			"app/kustomization.yaml", "configMapGenerator[0].env"},
		{"secretGenerator files", map[string]string{"app/kustomization.yaml": k("secretGenerator:\n- name: s\n  files: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "secretGenerator[0].files[0]"},
		{"secretGenerator envs", map[string]string{"app/kustomization.yaml": k("secretGenerator:\n- name: s\n  envs: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "secretGenerator[0].envs[0]"},
		{"patches path", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\npatches:\n- path: \"" + url + "\"\n")},
			"app/kustomization.yaml", "patches[0].path"},
		{"patchesStrategicMerge", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\npatchesStrategicMerge: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "patchesStrategicMerge[0]"},
		{"patchesJson6902 path", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\npatchesJson6902:\n- target: {group: apps, version: v1, kind: Deployment, name: web}\n  path: \"" + url + "\"\n")},
			"app/kustomization.yaml", "patchesJson6902[0].path"},
		{"replacements path", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\nreplacements:\n- path: \"" + url + "\"\n")},
			"app/kustomization.yaml", "replacements[0].path"},
		{"openapi path", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\nopenapi:\n  path: \"" + url + "\"\n")},
			"app/kustomization.yaml", "openapi.path"},
		{"configurations", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\nconfigurations: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "configurations[0]"},
		{"crds", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\ncrds: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "crds[0]"},
		{"resources naming a file by URL", map[string]string{"app/kustomization.yaml": k("resources: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "resources[0]"},
		{"components", map[string]string{"app/kustomization.yaml": k("components: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "components[0]"},
		{"generators naming a URL", map[string]string{"app/kustomization.yaml": k("generators: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "generators[0]"},
		{"transformers naming a URL", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "transformers[0]"},
		{"validators naming a URL", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\nvalidators: [\"" + url + "\"]\n")},
			"app/kustomization.yaml", "validators[0]"},
		{"an upper-case scheme", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: c\n  files: [\"HTTP" + strings.TrimPrefix(url, "http") + "\"]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"a builtin PatchTransformer file", map[string]string{
			"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [patch.yaml]\n"),
			"app/patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: \"" + url + "\"\n"},
			"app/patch.yaml", "path"},
		{"a builtin ConfigMapGenerator file", map[string]string{
			"app/kustomization.yaml": k("generators: [gen.yaml]\n"),
			"app/gen.yaml":           "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: c}\nfiles: [\"" + url + "\"]\n"},
			"app/gen.yaml", "files[0]"},
		{"a builtin ValueAddTransformer file", map[string]string{
			"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [add.yaml]\n"),
			"app/add.yaml":           "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata: {name: v}\nvalue: x\ntargets:\n- fieldPath: metadata/name\n  filePathPosition: 1\ntargetFilePath: \"" + url + "\"\n"},
			"app/add.yaml", "targetFilePath"},
		{"an inline builtin transformer", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers:\n- |\n  apiVersion: builtin\n  kind: PatchTransformer\n  metadata: {name: p}\n  path: \"" + url + "\"\n")},
			"app/kustomization.yaml", "transformers[0].path"},
		{"a builtin ReplacementTransformer that a transformers directory lists as a resource", map[string]string{
			"app/kustomization.yaml":              k("resources: [deploy.yaml]\ntransformers: [transformers]\n"),
			"app/transformers/kustomization.yaml": k("resources: [replace.yaml]\n"),
			"app/transformers/replace.yaml":       "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements:\n- path: \"" + url + "\"\n"},
			"app/transformers/replace.yaml", "replacements[0].path"},
		{"a generator in a base the overlay reaches", map[string]string{
			"app/kustomization.yaml":  k("resources: [../base]\n"),
			"base/kustomization.yaml": k("configMapGenerator:\n- name: c\n  files: [\"" + url + "\"]\n")},
			"base/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"a URL that never answers", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: c\n  files: [\"" + srv.URL + "/hang\"]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"secretGenerator env", map[string]string{"app/kustomization.yaml": k("secretGenerator:\n- name: s\n  env: \"" + url + "\"\n")},
			"app/kustomization.yaml", "secretGenerator[0].env"},
		{"bases (resources' deprecated name)", map[string]string{
			"app/kustomization.yaml":  k("bases: [../base]\n"),
			"base/kustomization.yaml": k("configMapGenerator:\n- name: c\n  files: [\"" + url + "\"]\n")},
			"base/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"helmCharts", map[string]string{"app/kustomization.yaml": k("helmCharts:\n- name: c\n  repo: \"" + url + "\"\n  valuesFile: \"" + url + "\"\n")},
			"app/kustomization.yaml", "helmCharts[0]"},
		{"helmGlobals", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\nhelmGlobals: {chartHome: \"" + url + "\"}\n")},
			"app/kustomization.yaml", "helmGlobals"},
		{"helmChartInflationGenerator (helmCharts' deprecated name)", map[string]string{"app/kustomization.yaml": k("helmChartInflationGenerator:\n- chartName: c\n  chartRepoUrl: \"" + url + "\"\n")},
			"app/kustomization.yaml", "helmChartInflationGenerator[0]"},

		// Spellings of the same fields that a check reading YAML otherwise than
		// kustomize would miss.
		{"a merge key that replaces a harmless configMapGenerator", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: harmless\n  literals: [a=b]\n" +
			"<<: {configMapGenerator: [{name: loot, files: [\"k=" + url + "\"]}]}\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"a !!binary scalar that decodes to a URL", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: loot\n  files: [!!binary " +
			base64.StdEncoding.EncodeToString([]byte("k="+url)) + "]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"Resources capitalised, naming a kustomization that holds a URL", map[string]string{
			"app/kustomization.yaml":     k("Resources: [sub]\n"),
			"app/sub/kustomization.yaml": k("configMapGenerator:\n- name: loot\n  files: [\"k=" + url + "\"]\n")},
			"app/sub/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"resources spelt with a long s, which Go's JSON decoder folds to s", map[string]string{
			"app/kustomization.yaml":     k("re\u017fources: [sub]\n"),
			"app/sub/kustomization.yaml": k("configMapGenerator:\n- name: loot\n  files: [\"k=" + url + "\"]\n")},
			"app/sub/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"a URL that never answers, behind a merge key", map[string]string{"app/kustomization.yaml": k("configMapGenerator:\n- name: harmless\n  literals: [a=b]\n" +
			"<<: {configMapGenerator: [{name: loot, files: [\"k=" + srv.URL + "/hang\"]}]}\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"CONFIGMAPGENERATOR and FILES in capitals", map[string]string{"app/kustomization.yaml": k("CONFIGMAPGENERATOR:\n- NAME: loot\n  FILES: [\"k=" + url + "\"]\n")},
			"app/kustomization.yaml", "configMapGenerator[0].files[0]"},
		{"a builtin configuration whose apiVersion is /builtin", map[string]string{
			"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [patch.yaml]\n"),
			"app/patch.yaml":         "apiVersion: /builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: \"" + url + "\"\n"},
			"app/patch.yaml", "path"},
		{"a builtin configuration whose apiVersion is escaped", map[string]string{
			"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [patch.yaml]\n"),
			"app/patch.yaml":         "apiVersion: \"\\x62uiltin\"\nkind: PatchTransformer\nmetadata: {name: p}\npath: \"" + url + "\"\n"},
			"app/patch.yaml", "path"},
		{"a builtin configuration with Path capitalised", map[string]string{
			"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [patch.yaml]\n"),
			"app/patch.yaml":         "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\nPath: \"" + url + "\"\n"},
			"app/patch.yaml", "Path"},
		{"a builtin configuration with a !!binary path", map[string]string{
			"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers: [patch.yaml]\n"),
			"app/patch.yaml": "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: !!binary " +
				base64.StdEncoding.EncodeToString([]byte(url)) + "\n"},
			"app/patch.yaml", "path"},
		{"an inline transformer on one line", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\ntransformers:\n- '{apiVersion: builtin, kind: PatchTransformer, metadata: {name: p}, path: \"" + url + "\"}'\n")},
			"app/kustomization.yaml", "transformers[0].path"},
		{"an inline generator on one line", map[string]string{"app/kustomization.yaml": k("generators:\n- '{apiVersion: builtin, kind: ConfigMapGenerator, metadata: {name: c}, files: [\"" + url + "\"]}'\n")},
			"app/kustomization.yaml", "generators[0].files[0]"},
		{"an inline validator", map[string]string{"app/kustomization.yaml": k("resources: [deploy.yaml]\nvalidators:\n- '{apiVersion: builtin, kind: PatchTransformer, metadata: {name: p}, path: \"" + url + "\"}'\n")},
			"app/kustomization.yaml", "validators[0].path"},
	}
	for _, tc := range cases {
		t.Run(tc.field+" is refused without a request", func(t *testing.T) {
			files := map[string]string{"app/deploy.yaml": deploy}
			for name, content := range tc.files {
				files[name] = content
			}
			before := srv.requests.Load()
			objs, err := renderWithin(t, files)
			if n := srv.requests.Load() - before; n != 0 {
				t.Errorf("rendering made %d requests; want none", n)
			}
			var re *result.RenderError
			if !errors.As(err, &re) || !errors.Is(err, ErrRemoteReference) {
				t.Fatalf("Dir() = %v, error %v; want a *result.RenderError wrapping ErrRemoteReference", ids(objs), err)
			}
			if re.File != tc.file || !strings.Contains(err.Error(), tc.names+": ") {
				t.Errorf("error %q names file %q; want it to name %s and the field %s", err, re.File, tc.file, tc.names)
			}
			if strings.Contains(err.Error(), "instance-secret") {
				t.Errorf("error %q holds the server's answer", err)
			}
		})
	}
}

func TestKustomizeKeepsURLsInFreeText(t *testing.T) {
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"resources: [cm.yaml]\n" +
		"commonAnnotations: {docs: \"https://docs.example.com/web\"}\n" +
		"configMapGenerator:\n- name: links\n  literals: [\"home=https://example.com\"]\n" +
		"patches:\n- target: {kind: ConfigMap, name: settings}\n  patch: |\n    - {op: add, path: /data/url, value: \"https://example.com/api\"}\n"
	objs, err := render(t, map[string]string{
		"app/kustomization.yaml": k,
		"app/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {level: info}\n",
	}, "app")
	if err != nil {
		t.Fatalf("Dir() error = %v; URLs in annotations, literals and inline patches are values, not paths", err)
	}
	if len(objs) != 2 || objs[0].GetAnnotations()["docs"] != "https://docs.example.com/web" {
		t.Errorf("rendered %v; want two objects annotated with the docs URL", ids(objs))
	}
}

// countingRefusal stands in for the default transport while fuzzing: it refuses
// every request, as IsolateRendering's does, and counts them.
type countingRefusal struct{ requests atomic.Int64 }

func (c *countingRefusal) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	return refusingTransport{}.RoundTrip(r)
}

// FuzzKustomizeReachesNoURL: whatever a kustomization says, the check before
// kustomize runs refuses every URL kustomize would load and every base it would
// clone, so that kustomize never gets as far as asking. The process is isolated
// while it runs, so a miss is refused (and counted), never sent.
func FuzzKustomizeReachesNoURL(f *testing.F) {
	const url = "http://127.0.0.1:9/x"
	for _, seed := range []string{
		"configMapGenerator:\n- name: c\n  files: [\"" + url + "\"]\n",
		"configMapGenerator:\n- name: harmless\n  literals: [a=b]\n<<: {configMapGenerator: [{name: loot, files: [\"k=" + url + "\"]}]}\n",
		"configMapGenerator:\n- name: loot\n  files: [!!binary " + base64.StdEncoding.EncodeToString([]byte("k="+url)) + "]\n",
		"Resources: [sub]\n",
		"resources: [deploy.yaml]\ntransformers: [patch.yaml]\n",
		"resources: [deploy.yaml]\ntransformers:\n- '{apiVersion: builtin, kind: PatchTransformer, metadata: {name: p}, path: \"" + url + "\"}'\n",
		"resources: [deploy.yaml]\npatches:\n- path: \"" + url + "\"\n",
		"resources: [\"github.com:org/repo\"]\n",
	} {
		f.Add(seed, "apiVersion: /builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: \""+url+"\"\n")
	}
	restore := IsolateRendering()
	f.Cleanup(restore)
	refusal := &countingRefusal{}
	http.DefaultTransport = refusal
	f.Fuzz(func(t *testing.T, kustomization, patch string) {
		fs := memFS(t, map[string]string{
			"app/kustomization.yaml":     kustomization,
			"app/patch.yaml":             patch,
			"app/deploy.yaml":            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n",
			"app/sub/kustomization.yaml": "configMapGenerator:\n- name: loot\n  files: [\"k=" + url + "\"]\n",
		})
		before := refusal.requests.Load()
		_, err := Dir(fs, "/", "/app", DirOptions{MaxObjects: 100, MaxBytes: 1 << 20})
		if n := refusal.requests.Load() - before; n != 0 {
			t.Fatalf("kustomize asked for %d URLs the check let through; error %v", n, err)
		}
		if err != nil && (strings.Contains(err.Error(), "' not allowed") || strings.Contains(err.Error(), "failed to run '")) {
			t.Fatalf("kustomize ran git on a base the check let through: %v", err)
		}
	})
}

func TestKustomizeRefusesAnAliasBombInAnInlineConfiguration(t *testing.T) {
	bomb := "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\na: &a [x,x,x,x,x,x,x,x,x,x]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h"} {
		bomb += name + ": &" + name + " [" + strings.Repeat("*"+prev+",", 9) + "*" + prev + "]\n"
		prev = name
	}
	inline := "  " + strings.ReplaceAll(strings.TrimSuffix(bomb, "\n"), "\n", "\n  ") + "\n"
	// Expanded, the bomb takes kustomize's parser minutes and gigabytes; refused, it
	// costs the budget's million values.
	_, err := renderWithin(t, map[string]string{
		"app/kustomization.yaml": "transformers:\n- |\n" + inline,
	})
	if !result.IsRenderError(err) || !errors.Is(err, errYAMLTooLarge) || !strings.Contains(err.Error(), "transformers[0]: ") {
		t.Errorf("Dir() error = %v; want transformers[0] refused as too large", err)
	}
}
