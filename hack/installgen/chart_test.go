package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/yaml"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// installObjects reads the objects of a generated install file, by identity.
func installObjects(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs := map[string]map[string]any{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var o map[string]any
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if o == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: o}
		objs[v1alpha1.NewObjectRef(u.GroupVersionKind(), u.GetNamespace(), u.GetName()).String()] = asJSON(t, o)
	}
	return objs
}

// asJSON is o as encoding/json reads it back, so that objects decoded by
// different readers compare by value.
func asJSON(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	data, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// renderChart renders dir as Tether renders a chart in a Sync's path.
func renderChart(t *testing.T, dir string, helm source.Helm) map[string]map[string]any {
	t.Helper()
	objs, err := source.RenderDirectory(t.Context(), dir, helm, source.DefaultOptions())
	if err != nil {
		t.Fatalf("render %s: %v", dir, err)
	}
	out := map[string]map[string]any{}
	for _, o := range objs {
		out[v1alpha1.NewObjectRef(o.GroupVersionKind(), o.GetNamespace(), o.GetName()).String()] = asJSON(t, o.Object)
	}
	return out
}

// TestTheChartRendersEachInstall renders deploy/chart with Tether's own Helm
// support, released into tether-system, at its default values and with each
// part turned on, lints it with those values (helm lint, in process), and
// finds the objects of the install files the values stand for, each equal, and
// no other: deploy/install.yaml at the defaults, with deploy/ui.yaml for the
// UI, deploy/monitoring's objects for the monitoring, deploy/namespaced.yaml
// for the namespaced install with its example tenants; but the Namespace (Helm
// installs into a namespace that exists). A change to deploy/ that `make
// generate` has not carried into the chart fails here, as does a template that
// drifts from the object it stands for.
func TestTheChartRendersEachInstall(t *testing.T) {
	install := installObjects(t, "../../deploy/install.yaml")
	namespaced := installObjects(t, "../../deploy/namespaced.yaml")
	ui := installObjects(t, "../../deploy/ui.yaml")
	monitoring := monitoringObjects(t)
	allMonitoring := `monitoring: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}, dashboard: {enabled: true}}`
	for _, tc := range []struct {
		name, values string
		want         []map[string]map[string]any
	}{
		{"the defaults", `{}`, []map[string]map[string]any{install}},
		{"the UI", `{ui: {enabled: true}}`, []map[string]map[string]any{install, ui}},
		{"the monitoring", "{" + allMonitoring + "}", []map[string]map[string]any{install, monitoring}},
		{"namespaced", `{namespaced: {enabled: true, tenants: [team-a, team-b]}}`, []map[string]map[string]any{namespaced}},
		{"namespaced, with the UI and the monitoring", `{namespaced: {enabled: true, tenants: [team-a, team-b]}, ui: {enabled: true}, ` + allMonitoring + `}`,
			[]map[string]map[string]any{namespaced, ui, monitoring}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[string]map[string]any{}
			for _, objs := range tc.want {
				maps.Copy(want, objs)
			}
			delete(want, "Namespace/"+installNamespace)
			if msgs := lintErrors(chartPath, valuesOf(t, tc.values)); len(msgs) > 0 {
				t.Errorf("helm lint: %s", strings.Join(msgs, "; "))
			}
			got := renderChart(t, chartPath, source.Helm{ReleaseName: "tether", Namespace: installNamespace, Values: jsonOf(t, tc.values)})
			for id, o := range want {
				if g, ok := got[id]; !ok {
					t.Errorf("the chart does not render %s", id)
				} else if !reflect.DeepEqual(g, o) {
					a, _ := yaml.Marshal(o)
					b, _ := yaml.Marshal(g)
					t.Errorf("the chart renders %s differently:\ninstall:\n%s\nchart:\n%s", id, a, b)
				}
			}
			for id := range got {
				if _, ok := want[id]; !ok {
					t.Errorf("the chart renders %s, which the install does not hold", id)
				}
			}
			if len(want) < 20 {
				t.Fatalf("the install holds %d objects besides the Namespace; expected the whole install", len(want))
			}
		})
	}
}

// TestTheChartsPartsTakeTheirValues: the monitoring objects carry the labels
// a Prometheus selects by, the namespaced install serves the tenants given,
// and refuses to render without any.
func TestTheChartsPartsTakeTheirValues(t *testing.T) {
	got := renderChart(t, chartPath, source.Helm{ReleaseName: "tether", Namespace: "ops",
		Values: jsonOf(t, `{monitoring: {serviceMonitor: {enabled: true}, labels: {release: kube-prometheus-stack}}, namespaced: {enabled: true, tenants: [shop]}}`)})
	labels, _, _ := unstructured.NestedStringMap(got["ServiceMonitor/ops/tether"], "metadata", "labels")
	if labels["release"] != "kube-prometheus-stack" || labels["app.kubernetes.io/name"] != "tether" {
		t.Errorf("the ServiceMonitor's labels are %v, want release: kube-prometheus-stack beside its own", labels)
	}
	if _, ok := got["PrometheusRule/ops/tether"]; ok {
		t.Error("the PrometheusRule is rendered, though only the ServiceMonitor was turned on")
	}
	containers, _, _ := unstructured.NestedSlice(got["Deployment/ops/tether"], "spec", "template", "spec", "containers")
	if len(containers) == 0 || !slices.Contains(containers[0].(map[string]any)["args"].([]any), any("--watch-namespaces=shop")) {
		t.Errorf("the agent's containers are %v, want the argument --watch-namespaces=shop", containers)
	}
	if _, ok := got["RoleBinding/shop/tether-controller"]; !ok {
		t.Error("no RoleBinding tether-controller in the tenant namespace shop")
	}

	_, err := source.RenderDirectory(t.Context(), chartPath, source.Helm{ReleaseName: "tether", Namespace: "ops", Values: jsonOf(t, `{namespaced: {enabled: true}}`)}, source.DefaultOptions())
	if err == nil || !strings.Contains(err.Error(), "namespaced.tenants") {
		t.Errorf("the namespaced install without tenants rendered, error %v; want a refusal naming namespaced.tenants", err)
	}
}

// monitoringObjects renders deploy/monitoring as `kubectl apply -k` would.
func monitoringObjects(t *testing.T) map[string]map[string]any {
	t.Helper()
	m, _, err := render("../../deploy/monitoring", "", "")
	if err != nil {
		t.Fatal(err)
	}
	body, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "monitoring.yaml")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return installObjects(t, path)
}

// jsonOf is values, written as YAML, as JSON.
func jsonOf(t *testing.T, values string) []byte {
	t.Helper()
	raw, err := yaml.YAMLToJSON([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestTheChartsValuesReachTheAgent releases the chart into another namespace
// with its values set: every namespaced object and every subject moves there, and
// the agent's Deployment takes the image, replicas and resources given (merged
// into the defaults, as Helm merges values).
func TestTheChartsValuesReachTheAgent(t *testing.T) {
	values := []byte(`{"image":{"repository":"registry.example/tether","tag":"v9.9.9"},"replicaCount":1,"resources":{"limits":{"memory":"1Gi"}}}`)
	got := renderChart(t, "../../deploy/chart", source.Helm{ReleaseName: "t", Namespace: "ops", Values: values})
	agent, ok := got["Deployment/ops/tether"]
	if !ok {
		t.Fatalf("no Deployment/ops/tether among %d objects", len(got))
	}
	d := &unstructured.Unstructured{Object: agent}
	replicas, _, _ := unstructured.NestedFloat64(d.Object, "spec", "replicas")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if len(containers) == 0 {
		t.Fatal("the agent's Deployment has no containers")
	}
	c := containers[0].(map[string]any)
	limits, _, _ := unstructured.NestedStringMap(c, "resources", "limits")
	if replicas != 1 || c["image"] != "registry.example/tether:v9.9.9" || limits["memory"] != "1Gi" {
		t.Errorf("agent: replicas %v, image %v, limits %v; want 1, registry.example/tether:v9.9.9, memory 1Gi", replicas, c["image"], limits)
	}
	for id, o := range got {
		u := &unstructured.Unstructured{Object: o}
		if ns := u.GetNamespace(); ns != "" && ns != "ops" {
			t.Errorf("%s is in namespace %s, not the release's", id, ns)
		}
		subjects, _, _ := unstructured.NestedSlice(o, "subjects")
		for _, s := range subjects {
			if ns, _ := s.(map[string]any)["namespace"].(string); ns != "ops" {
				t.Errorf("%s binds a subject in namespace %q, not the release's", id, ns)
			}
		}
	}
}

// TestAReleasePublishesTheChartAsARepository packages the chart as make
// release does: the package loads with Helm's loader at the release's version,
// and index.yaml names it with its digest.
func TestAReleasePublishesTheChartAsARepository(t *testing.T) {
	m, parts, err := chartSources("../..", "v1.2.3", "")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := packageChart(m, parts, out, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(out, "tether-1.2.3.tgz")
	ch, err := loader.Load(pkg)
	if err != nil {
		t.Fatalf("load %s: %v", pkg, err)
	}
	if ch.Metadata.Version != "1.2.3" || ch.Metadata.AppVersion != "v1.2.3" || len(ch.CRDObjects()) != 3 {
		t.Errorf("chart %s %s (app %s) with %d CRDs; want tether 1.2.3 (app v1.2.3) with 3 (Sync, SyncSet, Notifier)", ch.Name(), ch.Metadata.Version, ch.Metadata.AppVersion, len(ch.CRDObjects()))
	}
	data, err := os.ReadFile(pkg)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, "index.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var index chartIndex
	if err := yaml.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	entries := index.Entries["tether"]
	if len(entries) != 1 || entries[0].Version != "1.2.3" || entries[0].URLs[0] != "tether-1.2.3.tgz" ||
		entries[0].Digest != fmt.Sprintf("%x", sha256.Sum256(data)) {
		t.Errorf("index.yaml:\n%s\nwant one entry of tether 1.2.3 at tether-1.2.3.tgz with the package's digest", raw)
	}
}

// TestAReleasePinnedByDigest is make release REGISTRY=...: every install file
// names the pushed image by its digest, and so does the chart, at its defaults.
func TestAReleasePinnedByDigest(t *testing.T) {
	pinned := "registry.example/org/tether@sha256:" + fmt.Sprintf("%064x", 7)
	out := t.TempDir()
	if err := run("../..", out, "v1.2.3", pinned); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"install.yaml", "namespaced.yaml", "ui.yaml"} {
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(data, []byte("image: "+pinned+"\n")) || bytes.Contains(data, []byte(agentImage)) {
			t.Errorf("%s does not name the agent's image %s alone", file, pinned)
		}
	}
	chart := t.TempDir()
	if err := loaderExtract(t, filepath.Join(out, "tether-1.2.3.tgz"), chart); err != nil {
		t.Fatal(err)
	}
	got := renderChart(t, filepath.Join(chart, "tether"), source.Helm{ReleaseName: "tether", Namespace: installNamespace})
	containers, _, _ := unstructured.NestedSlice(got["Deployment/"+installNamespace+"/tether"], "spec", "template", "spec", "containers")
	if len(containers) == 0 || containers[0].(map[string]any)["image"] != pinned {
		t.Errorf("the released chart's agent runs %v, want %s", containers, pinned)
	}
	if err := run("../..", t.TempDir(), "v1.2.3", "registry.example/org/tether:v1.2.3"); err == nil {
		t.Error("-image with a tag, not a digest, was taken")
	}
}

// loaderExtract writes the files of the chart package pkg into dir/tether.
func loaderExtract(t *testing.T, pkg, dir string) error {
	t.Helper()
	ch, err := loader.Load(pkg)
	if err != nil {
		return err
	}
	return chartutil.SaveDir(ch, dir)
}

// chartSources renders what the chart is made of: deploy/default and the parts
// its values turn on.
func chartSources(root, version, image string) (resmap.ResMap, chartParts, error) {
	var parts chartParts
	var install resmap.ResMap
	for _, d := range []struct {
		dir string
		m   *resmap.ResMap
	}{{"deploy/default", &install}, {uiDir, &parts.ui}, {monitoringDir, &parts.monitoring}, {namespacedDir, &parts.namespaced}} {
		m, _, err := render(filepath.Join(root, d.dir), version, image)
		if err != nil {
			return nil, parts, fmt.Errorf("%s: %w", d.dir, err)
		}
		*d.m = m
	}
	return install, parts, nil
}
