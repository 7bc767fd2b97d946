package source_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
)

// overlayInput is a small app as a path renders it: a Deployment that mounts
// a ConfigMap, and a Service.
const overlayInput = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: web, image: "ghcr.io/acme/web:1.0"}
      - {name: proxy, image: "envoyproxy/envoy:v1.30"}
      volumes:
      - {name: config, configMap: {name: web-config}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web-config}
data: {color: red}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec: {selector: {app: web}, ports: [{port: 80}]}
`

func overlaySnapshot(t *testing.T) *source.Snapshot {
	t.Helper()
	objs, err := source.DecodeManifests([]byte(overlayInput))
	if err != nil {
		t.Fatal(err)
	}
	return &source.Snapshot{Path: "apps/web", Objects: objs}
}

// objectNamed finds the object of kind named name among objs.
func objectNamed(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	var have []string
	for _, o := range objs {
		have = append(have, o.GetKind()+"/"+o.GetName())
	}
	t.Fatalf("no %s/%s among %v", kind, name, have)
	return nil
}

func images(o *unstructured.Unstructured) []string {
	cs, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
	var out []string
	for _, c := range cs {
		out = append(out, c.(map[string]any)["image"].(string))
	}
	return out
}

// TestOverlayPutsEachFieldOnTheRender: each field of spec.kustomize, put on
// objects a path rendered, in a render worker, as kustomize would.
func TestOverlayPutsEachFieldOnTheRender(t *testing.T) {
	t.Run("namePrefix and nameSuffix rename the objects and what refers to them", func(t *testing.T) {
		got := overlay(t, &v1alpha1.Kustomize{NamePrefix: "prod-", NameSuffix: "-eu"})
		d := objectNamed(t, got, "Deployment", "prod-web-eu")
		objectNamed(t, got, "ConfigMap", "prod-web-config-eu")
		objectNamed(t, got, "Service", "prod-web-eu")
		vols, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "volumes")
		if name := vols[0].(map[string]any)["configMap"].(map[string]any)["name"]; name != "prod-web-config-eu" {
			t.Errorf("the Deployment mounts ConfigMap %v; want the renamed prod-web-config-eu", name)
		}
	})
	t.Run("namespace sets every namespaced object's, as Flux's targetNamespace", func(t *testing.T) {
		snap := overlaySnapshot(t)
		snap.Objects[1].SetNamespace("elsewhere")
		got, err := source.Overlay(snap, &v1alpha1.Kustomize{Namespace: "shop"}, source.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range got.Objects {
			if o.GetNamespace() != "shop" {
				t.Errorf("%s/%s is in namespace %q; want shop", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		}
	})
	t.Run("commonLabels go on metadata, not on selectors or pod templates", func(t *testing.T) {
		got := overlay(t, &v1alpha1.Kustomize{CommonLabels: map[string]string{"team": "shop"}})
		d := objectNamed(t, got, "Deployment", "web")
		if diff := cmp.Diff(map[string]string{"app": "web", "team": "shop"}, d.GetLabels()); diff != "" {
			t.Errorf("the Deployment's labels (-want +got):\n%s", diff)
		}
		sel, _, _ := unstructured.NestedStringMap(d.Object, "spec", "selector", "matchLabels")
		tpl, _, _ := unstructured.NestedStringMap(d.Object, "spec", "template", "metadata", "labels")
		if diff := cmp.Diff(map[string]string{"app": "web"}, sel); diff != "" {
			t.Errorf("the Deployment's selector, immutable, changed (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(map[string]string{"app": "web"}, tpl); diff != "" {
			t.Errorf("the pod template's labels changed (-want +got):\n%s", diff)
		}
		if got := objectNamed(t, got, "ConfigMap", "web-config").GetLabels()["team"]; got != "shop" {
			t.Errorf("the ConfigMap's team label = %q; want shop", got)
		}
	})
	t.Run("commonAnnotations go on every object", func(t *testing.T) {
		got := overlay(t, &v1alpha1.Kustomize{CommonAnnotations: map[string]string{"owner": "shop@example.com"}})
		for _, o := range got {
			if o.GetAnnotations()["owner"] != "shop@example.com" {
				t.Errorf("%s/%s has annotations %v; want owner", o.GetKind(), o.GetName(), o.GetAnnotations())
			}
		}
	})
	t.Run("images override name, tag and digest", func(t *testing.T) {
		got := overlay(t, &v1alpha1.Kustomize{Images: []v1alpha1.KustomizeImage{
			{Name: "ghcr.io/acme/web", NewName: "registry.example.com/web", NewTag: "2.0"},
			{Name: "envoyproxy/envoy", Digest: "sha256:" + strings.Repeat("a", 64)},
		}})
		want := []string{"registry.example.com/web:2.0", "envoyproxy/envoy@sha256:" + strings.Repeat("a", 64)}
		if diff := cmp.Diff(want, images(objectNamed(t, got, "Deployment", "web"))); diff != "" {
			t.Errorf("images (-want +got):\n%s", diff)
		}
	})
	t.Run("patches apply to the object they name or the objects their target selects", func(t *testing.T) {
		got := overlay(t, &v1alpha1.Kustomize{NamePrefix: "p-", Patches: []v1alpha1.KustomizePatch{
			{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {color: blue}\n"},
			{Patch: `[{"op": "add", "path": "/spec/replicas", "value": 3}]`, Target: &v1alpha1.KustomizeSelector{Kind: "Deployment", LabelSelector: "app=web"}},
		}})
		if color, _, _ := unstructured.NestedString(objectNamed(t, got, "ConfigMap", "p-web-config").Object, "data", "color"); color != "blue" {
			t.Errorf("the ConfigMap's color = %q; want the patch's blue", color)
		}
		if n, _, _ := unstructured.NestedInt64(objectNamed(t, got, "Deployment", "p-web").Object, "spec", "replicas"); n != 3 {
			t.Errorf("the Deployment's replicas = %d; want the JSON patch's 3", n)
		}
	})
}

// overlay puts k on overlayInput and checks that the snapshot given is left
// as it was.
func overlay(t *testing.T, k *v1alpha1.Kustomize) []*unstructured.Unstructured {
	t.Helper()
	snap := overlaySnapshot(t)
	got, err := source.Overlay(snap, k, source.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(overlaySnapshot(t).Objects, snap.Objects); diff != "" {
		t.Errorf("the snapshot given was changed (-want +got):\n%s", diff)
	}
	if got.Path != "apps/web" || len(got.Objects) != len(snap.Objects) {
		t.Errorf("got %d objects of %q; want %d of apps/web", len(got.Objects), got.Path, len(snap.Objects))
	}
	return got.Objects
}

// TestOverlayOnAHelmRender: spec.kustomize on what a chart renders, as on
// plain YAML.
func TestOverlayOnAHelmRender(t *testing.T) {
	dir := writeChart(t, "charts/web", map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: web\nversion: 0.1.0\n",
		"values.yaml": "image: ghcr.io/acme/web:1.0\n",
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata: {name: {{ .Release.Name }}-web, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: {{ .Values.image | quote }}}]}
`,
	})
	objs, err := source.RenderDirectory(t.Context(), dir, source.Helm{ReleaseName: "shop"}, source.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, err := source.Overlay(&source.Snapshot{Path: "charts/web", Objects: objs}, &v1alpha1.Kustomize{
		NameSuffix: "-eu",
		Images:     []v1alpha1.KustomizeImage{{Name: "ghcr.io/acme/web", NewTag: "1.1"}},
		Patches: []v1alpha1.KustomizePatch{{
			Patch:  "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: any}\nspec: {replicas: 2}\n",
			Target: &v1alpha1.KustomizeSelector{Kind: "Deployment", Name: "shop-.*"},
		}},
	}, source.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	d := objectNamed(t, got.Objects, "Deployment", "shop-web-eu")
	if diff := cmp.Diff([]string{"ghcr.io/acme/web:1.1"}, images(d)); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
	if n, _, _ := unstructured.NestedInt64(d.Object, "spec", "replicas"); n != 2 {
		t.Errorf("replicas = %d; want the patch's 2 (its target a regular expression)", n)
	}
}

// TestOverlayFailuresNameSpecKustomize: a patch that does not apply, a bad
// target, and a result over the render's budget fail as a RenderError of the
// Sync's path naming spec.kustomize and the cause.
func TestOverlayFailuresNameSpecKustomize(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	for name, c := range map[string]struct {
		k      *v1alpha1.Kustomize
		big    bool
		opts   func(*source.Options)
		reason string
		says   []string
	}{
		"a patch naming an object that is not there": {
			k:    &v1alpha1.Kustomize{Patches: []v1alpha1.KustomizePatch{{Patch: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: gone}\ndata: {a: b}\n"}}},
			says: []string{"gone"},
		},
		"a JSON patch whose path is not there": {
			k: &v1alpha1.Kustomize{Patches: []v1alpha1.KustomizePatch{{
				Patch:  `[{"op": "replace", "path": "/spec/nothing/here", "value": 1}]`,
				Target: &v1alpha1.KustomizeSelector{Kind: "Service"},
			}}},
			says: []string{"/spec/nothing/here"},
		},
		"a target with a bad label selector": {
			k: &v1alpha1.Kustomize{Patches: []v1alpha1.KustomizePatch{{
				Patch:  "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: NodePort}\n",
				Target: &v1alpha1.KustomizeSelector{LabelSelector: "app in (web"},
			}}},
			says: []string{"app in (web"},
		},
		"a patch that makes the render larger than its budget": {
			k: &v1alpha1.Kustomize{Patches: []v1alpha1.KustomizePatch{{
				Patch:  `[{"op": "copy", "from": "/data/big", "path": "/data/copy"}]`,
				Target: &v1alpha1.KustomizeSelector{Kind: "ConfigMap", Name: "big"},
			}}},
			big:    true,
			opts:   func(o *source.Options) { o.MaxRenderedBytes = 100 << 10 },
			reason: v1alpha1.ReasonRenderLimitExceeded,
		},
		"a kustomization larger than the render's budget": {
			k: &v1alpha1.Kustomize{Patches: []v1alpha1.KustomizePatch{{
				Patch:  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web-config}\ndata: {big: " + big + "}\n",
				Target: &v1alpha1.KustomizeSelector{Kind: "ConfigMap"},
			}}},
			opts:   func(o *source.Options) { o.MaxRenderedBytes = 32 << 10 },
			reason: v1alpha1.ReasonRenderLimitExceeded,
		},
	} {
		t.Run(name, func(t *testing.T) {
			opts := source.DefaultOptions()
			if c.opts != nil {
				c.opts(&opts)
			}
			snap := overlaySnapshot(t)
			if c.big {
				snap.Objects = append(snap.Objects, &unstructured.Unstructured{Object: map[string]any{
					"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "big"}, "data": map[string]any{"big": big},
				}})
			}
			_, err := source.Overlay(snap, c.k, opts)
			var re *source.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("got %v; want a RenderError", err)
			}
			if re.File != "apps/web" || re.Reason != c.reason || !strings.Contains(err.Error(), "spec.kustomize") {
				t.Errorf("got %q (file %q, reason %q); want apps/web, reason %q, naming spec.kustomize", err, re.File, re.Reason, c.reason)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("got %q; want it to say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), big) {
				t.Error("the error quotes the whole patch")
			}
		})
	}
}

// TestOverlayOfNothingIsNoWork: a Sync without spec.kustomize, or with an
// empty one, gets its snapshot back without a worker.
func TestOverlayOfNothingIsNoWork(t *testing.T) {
	opts := source.DefaultOptions()
	opts.RenderWorkerPath = t.TempDir() + "/no-worker"
	snap := overlaySnapshot(t)
	for _, k := range []*v1alpha1.Kustomize{nil, {}} {
		got, err := source.Overlay(snap, k, opts)
		if err != nil || got != snap {
			t.Errorf("Overlay(%v) = %p, %v; want the snapshot itself", k, got, err)
		}
	}
	if _, err := source.Overlay(snap, &v1alpha1.Kustomize{NamePrefix: "p-"}, opts); err == nil || !strings.Contains(err.Error(), "render worker") {
		t.Errorf("an overlay without its worker: %v; want it to fail starting the worker", err)
	}
}

// TestOverlayComponentsFromTheRepository: spec.kustomize.components are read
// from the Sync's revision, relative to its path, as hostile as the path
// itself: a component that reaches for a URL, or a path out of the
// repository, fails naming it.
func TestOverlayComponentsFromTheRepository(t *testing.T) {
	repo := gitserver.NewLocalRepo(t, "components")
	head := pushTree(t, repo, map[string]string{
		"apps/web/cm.yaml": configMap("web", "hello"),
		"components/french/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [extra.yaml]\n" +
			"patches:\n- patch: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: web}\n    data: {greeting: bonjour}\n",
		"components/french/extra.yaml":         configMap("extra", "salut"),
		"components/remote/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources: [https://example.com/x.yaml]\n",
	}, nil)
	src := newSource(t, source.Options{})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})
	snap, err := src.Render(t.Context(), rev, "apps/web", source.Helm{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("a component's resources and patches, before the prefix", func(t *testing.T) {
		got, err := src.Overlay(snap, &v1alpha1.Kustomize{NamePrefix: "fr-", Components: []string{"../../components/french"}})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"ConfigMap/fr-web greeting=bonjour", "ConfigMap/fr-extra greeting=salut"}
		if diff := cmp.Diff(want, describe(got.Objects)); diff != "" {
			t.Errorf("objects (-want +got):\n%s", diff)
		}
	})
	for _, c := range []struct{ step, component, says string }{
		{"a component that names a URL fails naming its kustomization", "../../components/remote", "components/remote/kustomization.yaml"},
		{"a component out of the repository fails naming it", "../../../etc", "leaves the repository"},
		{"a component that is not there fails naming it", "../../components/gone", "components/gone"},
	} {
		t.Run(c.step, func(t *testing.T) {
			_, err := src.Overlay(snap, &v1alpha1.Kustomize{Components: []string{c.component}})
			if !source.IsRenderError(err) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("got %v; want a RenderError saying %q", err, c.says)
			}
		})
	}
	t.Run("a packaged chart has no repository to read components from", func(t *testing.T) {
		chart := &source.Snapshot{Revision: source.Revision{Package: "web@1.0.0"}, Path: "web@1.0.0", Objects: snap.Objects}
		_, err := src.Overlay(chart, &v1alpha1.Kustomize{Components: []string{"components/french"}})
		if !source.IsRenderError(err) || !strings.Contains(err.Error(), "spec.kustomize.components") {
			t.Errorf("got %v; want a RenderError naming spec.kustomize.components", err)
		}
	})
}
