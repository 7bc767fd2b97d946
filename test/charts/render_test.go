package charts

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// valuesFile is the name of the test's values file, written into the unpacked
// chart's directory: tether render reads values files from the chart's
// directory, as a Sync's spec.helm.valuesFiles; helm template is given the same
// file, and both see it among the chart's .Files.
const valuesFile = "conformance-values.yaml"

// commandTimeout bounds one helm or tether run: a guard against hangs, not a
// performance assertion (a render takes a few seconds at most on a loaded
// machine; tether render's own default deadline is 30 s).
const commandTimeout = 2 * time.Minute

// capabilities is what a chart sees of its cluster.
type capabilities struct {
	// kubeVersion is .Capabilities.KubeVersion ("v1.34.0").
	kubeVersion string
	// apiVersions are added to .Capabilities.APIVersions ("group/version" or
	// "group/version/Kind").
	apiVersions []string
}

// release is one rendering of a chart: its name, namespace, values and the
// capabilities it sees.
type release struct {
	name, namespace string
	values          string
	caps            capabilities
}

// chartCase is a public chart and how it is rendered.
type chartCase struct {
	// archive is the packaged chart in testdata/ (README.md says where from).
	archive string
	release release
	// objects is how many objects helm template renders: both sides rendering
	// fewer (an error swallowed, a chart unpacked empty) fails the test.
	objects int
}

// publicCharts are the charts the issue names, each with values that switch on
// more of it or that fix what it would otherwise draw at random (a generated
// password, which both sides would draw differently).
var publicCharts = map[string]chartCase{
	"kube-prometheus-stack with its subcharts (crds, kube-state-metrics, node and windows exporters, grafana)": {
		archive: "kube-prometheus-stack-88.5.3.tgz",
		release: release{name: "monitoring", namespace: "monitoring", values: "grafana:\n  adminPassword: conformance\n",
			caps: capabilities{kubeVersion: "v1.34.0"}},
		objects: 132,
	},
	"ingress-nginx with metrics, its ServiceMonitor and autoscaling": {
		archive: "ingress-nginx-4.15.1.tgz",
		release: release{name: "ingress", namespace: "ingress-nginx",
			values: "controller:\n  metrics:\n    enabled: true\n    serviceMonitor:\n      enabled: true\n  autoscaling:\n    enabled: true\n",
			caps:   capabilities{kubeVersion: "v1.31.2", apiVersions: []string{"monitoring.coreos.com/v1"}}},
		objects: 21,
	},
	"argo-cd with redis-ha": {
		archive: "argo-cd-10.1.1.tgz",
		release: release{name: "argocd", namespace: "argocd", values: "redis-ha:\n  enabled: true\n",
			caps: capabilities{kubeVersion: "v1.33.4"}},
		objects: 72,
	},
	"grafana": {
		archive: "grafana-12.11.1.tgz",
		release: release{name: "grafana", namespace: "grafana", values: "adminPassword: conformance\n",
			caps: capabilities{kubeVersion: "v1.34.0"}},
		objects: 7,
	},
	"traefik with its CRDs": {
		archive: "traefik-41.3.0.tgz",
		release: release{name: "traefik", namespace: "traefik", values: "{}\n",
			caps: capabilities{kubeVersion: "v1.34.0", apiVersions: []string{"monitoring.coreos.com/v1"}}},
		objects: 31,
	},
	"bitnami's redis with bitnami/common": {
		archive: "redis-23.1.1.tgz",
		release: release{name: "cache", namespace: "cache", values: "auth:\n  password: conformance\n",
			caps: capabilities{kubeVersion: "v1.34.0"}},
		objects: 14,
	},
}

// TestPublicChartsRenderAsHelmTemplateRendersThem: each public chart, rendered
// by the shipped binary's `tether render` at its default limits and by the
// pinned `helm template` with the same release, values and capabilities, gives
// the same objects, field for field (Secrets' values masked on both sides, as
// tether render prints them; their contents still compared through the
// checksums the charts put on their workloads). helm template is asked for the
// chart's CRDs (--include-crds), which Tether applies as helm install does.
func TestPublicChartsRenderAsHelmTemplateRendersThem(t *testing.T) {
	helm := helmCLI(t)
	for name, c := range publicCharts {
		t.Run(name, func(t *testing.T) {
			chart := unpack(t, c.archive)
			want := helmTemplate(t, helm, chart, c.release)
			got := tetherRender(t, chart, c.release)
			if len(want) != c.objects {
				t.Errorf("helm template rendered %d objects, want %d (the vendored chart's)", len(want), c.objects)
			}
			if diffs := differences(want, got); len(diffs) > 0 {
				t.Errorf("tether render and helm template differ in %d of %d objects:\n%s", len(diffs), len(want), strings.Join(diffs, "\n"))
			}
		})
	}
}

// TestTheHelmCLIIsBuiltFromTheSDKTetherLinks: the comparison means something
// only while the helm CLI is the release of the Helm SDK go.mod requires.
func TestTheHelmCLIIsBuiltFromTheSDKTetherLinks(t *testing.T) {
	bin := helmCLI(t)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("reading the build information of %s: %v", bin, err)
	}
	goMod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for line := range strings.Lines(string(goMod)) {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "helm.sh/helm/v4" {
			want = f[1]
		}
	}
	if info.Main.Path != "helm.sh/helm/v4" || info.Main.Version != want {
		t.Errorf("%s is built from %s %s; go.mod requires helm.sh/helm/v4 %q: pin it in test/tools/k8s/go.mod", bin, info.Main.Path, info.Main.Version, want)
	}
}

// helmCLI returns the pinned helm CLI: $TETHER_HELM, which the Makefile sets,
// having built it (make helm).
func helmCLI(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TETHER_HELM")
	if _, err := os.Stat(bin); bin == "" || err != nil {
		if testing.Short() {
			t.Skip("the pinned helm CLI is not built, or TETHER_HELM does not name it; `make helm` builds it")
		}
		t.Fatalf("the pinned helm CLI TETHER_HELM=%q is missing: run `make helm` (make test builds it and sets TETHER_HELM)", bin)
	}
	return bin
}

// writeValues writes r's values into the chart's directory.
func writeValues(t testing.TB, chart string, r release) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(chart, valuesFile), []byte(r.values), 0o644); err != nil {
		t.Fatal(err)
	}
}

// helmTemplate runs `helm template` of the chart directory as release r, the
// chart's CRDs included, with a helm home of its own (no repositories, no
// registry credentials of the machine's user), and returns its objects, their
// Secrets' values masked.
func helmTemplate(t *testing.T, helm, chart string, r release) objects {
	t.Helper()
	writeValues(t, chart, r)
	args := []string{"template", r.name, chart, "--namespace", r.namespace, "--include-crds",
		"--kube-version", r.caps.kubeVersion, "--values", filepath.Join(chart, valuesFile)}
	for _, v := range r.caps.apiVersions {
		args = append(args, "--api-versions", v)
	}
	home := t.TempDir()
	env := append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	objs := run(t, env, helm, args...)
	maskSecrets(objs)
	return objs
}

// tetherRender runs the shipped binary's `tether render` of the chart directory
// as release r, at the default limits, and returns its objects.
func tetherRender(t *testing.T, chart string, r release) objects {
	t.Helper()
	writeValues(t, chart, r)
	args := []string{"render", chart, "--release-name", r.name, "--namespace", r.namespace,
		"--kube-version", r.caps.kubeVersion, "--values", valuesFile}
	for _, v := range r.caps.apiVersions {
		args = append(args, "--api-versions", v)
	}
	return run(t, os.Environ(), tetherBinary, args...)
}

// run runs bin with args and env, and returns the objects it prints; it logs
// how long the run took (go test -v shows it).
func run(t *testing.T, env []string, bin string, args ...string) objects {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	objs, err := parseStream(stdout.Bytes())
	if err != nil {
		t.Fatalf("%s %s: its output: %v", filepath.Base(bin), args[0], err)
	}
	t.Logf("%s %s: %d objects in %v", filepath.Base(bin), args[0], len(objs), time.Since(start).Round(time.Millisecond))
	return objs
}
