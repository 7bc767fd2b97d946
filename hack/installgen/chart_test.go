package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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

// TestTheChartRendersTheInstall renders deploy/chart with Tether's own Helm
// support at its default values, released into tether-system, and finds the
// objects of deploy/install.yaml, each equal, but the Namespace (Helm installs
// into a namespace that exists). A change to deploy/ that `make generate` has
// not carried into the chart fails here, as does a template that drifts from
// the object it stands for.
func TestTheChartRendersTheInstall(t *testing.T) {
	want := installObjects(t, "../../deploy/install.yaml")
	delete(want, "Namespace/"+installNamespace)
	got := renderChart(t, "../../deploy/chart", source.Helm{ReleaseName: "tether", Namespace: installNamespace})
	for id, o := range want {
		if g, ok := got[id]; !ok {
			t.Errorf("the chart does not render %s", id)
		} else if !reflect.DeepEqual(g, o) {
			a, _ := yaml.Marshal(o)
			b, _ := yaml.Marshal(g)
			t.Errorf("the chart renders %s differently:\ninstall.yaml:\n%s\nchart:\n%s", id, a, b)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("the chart renders %s, which install.yaml does not hold", id)
		}
	}
	if len(want) < 20 {
		t.Fatalf("install.yaml holds %d objects besides the Namespace; expected the whole install", len(want))
	}
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
	m, _, err := render("../../deploy/default", "v1.2.3", "")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := packageChart(m, out, "v1.2.3"); err != nil {
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
