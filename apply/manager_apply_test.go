package apply_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/apply"
	"tether.dev/tether/test/controlplane"
)

func TestApplyAllConverges(t *testing.T) {
	e := newEnv(t)

	t.Run("creates a config map, a service and a deployment, owned by tether", func(t *testing.T) {
		cs, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
		if err != nil {
			t.Fatalf("ApplyAll: %v", err)
		}
		want := map[string]apply.Action{
			"ConfigMap/" + e.ns + "/web-config": apply.ActionCreated,
			"Service/" + e.ns + "/web":          apply.ActionCreated,
			"Deployment/" + e.ns + "/web":       apply.ActionCreated,
		}
		wantActions(t, cs, want)
		for _, obj := range load(t, "web.yaml") {
			live := e.get(t, obj)
			if managers := applyManagers(live); !contains(managers, "tether") {
				t.Errorf("%s is managed by %v through Apply, want tether among them", apply.RefOf(live), managers)
			}
		}
	})

	t.Run("applying the same objects again writes nothing", func(t *testing.T) {
		before := e.resourceVersions(t, load(t, "web.yaml"))
		cs, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
		if err != nil {
			t.Fatalf("ApplyAll: %v", err)
		}
		if got := cs.Count(apply.ActionUnchanged); got != 3 || cs.Changed() {
			t.Errorf("actions = %v, want all three unchanged", actions(cs))
		}
		if diff := cmp.Diff(before, e.resourceVersions(t, load(t, "web.yaml"))); diff != "" {
			t.Errorf("resourceVersions moved on a converged apply (-before +after):\n%s", diff)
		}
	})

	t.Run("a changed config map is the only object configured", func(t *testing.T) {
		objs := load(t, "web.yaml")
		if err := unstructured.SetNestedField(objs[0].Object, "bonjour", "data", "greeting"); err != nil {
			t.Fatal(err)
		}
		cs, err := e.m.ApplyAll(t.Context(), objs, e.opts)
		if err != nil {
			t.Fatalf("ApplyAll: %v", err)
		}
		want := map[string]apply.Action{
			"ConfigMap/" + e.ns + "/web-config": apply.ActionConfigured,
			"Service/" + e.ns + "/web":          apply.ActionUnchanged,
			"Deployment/" + e.ns + "/web":       apply.ActionUnchanged,
		}
		wantActions(t, cs, want)
		greeting, _, _ := unstructured.NestedString(e.get(t, objs[0]).Object, "data", "greeting")
		if greeting != "bonjour" {
			t.Errorf("live greeting = %q, want bonjour", greeting)
		}
	})
}

func TestApplyAllCreatesNamespacesAndCRDsFirst(t *testing.T) {
	e := newEnv(t)

	t.Run("a new namespace and the objects inside it apply in one call", func(t *testing.T) {
		target := e.ns + "-app"
		e.cleanup(t, "v1", "Namespace", target)
		objs := load(t, "web.yaml")
		for _, o := range objs {
			o.SetNamespace(target)
		}
		// The namespace comes last in git; it must still be applied first.
		objs = append(objs, object(t, "v1", "Namespace", "", target))
		cs, err := e.m.ApplyAll(t.Context(), objs, e.opts)
		if err != nil {
			t.Fatalf("ApplyAll: %v", err)
		}
		if got := cs.Changes[0].Object.String(); got != "Namespace/"+target {
			t.Errorf("first change is %s, want the namespace", got)
		}
		if got := cs.Count(apply.ActionCreated); got != 4 {
			t.Errorf("actions = %v, want four created", actions(cs))
		}
	})

	t.Run("a CRD and a custom resource of it apply in one call", func(t *testing.T) {
		group := e.ns + ".example.com"
		e.cleanup(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets."+group)
		objs := load(t, "widget-crd.yaml", "GROUP", group)
		createsWidgetCRDAndGear(t, e, group, objs, e.opts)
		size, _, _ := unstructured.NestedInt64(e.get(t, objs[1]).Object, "spec", "size")
		if size != 3 {
			t.Errorf("live widget size = %d, want 3", size)
		}
	})
}

func TestApplyAllPlacesObjectsByScope(t *testing.T) {
	e := newEnv(t)

	t.Run("a namespaced object naming no namespace goes to the default namespace", func(t *testing.T) {
		cm := object(t, "v1", "ConfigMap", "", "defaulted")
		if _, err := e.m.ApplyAll(t.Context(), []*unstructured.Unstructured{cm}, e.opts); err != nil {
			t.Fatalf("ApplyAll: %v", err)
		}
		if got := e.get(t, object(t, "v1", "ConfigMap", e.ns, "defaulted")).GetNamespace(); got != e.ns {
			t.Errorf("config map is in namespace %q, want %q", got, e.ns)
		}
	})

	t.Run("without a default namespace it fails, naming the object", func(t *testing.T) {
		opts := e.opts
		opts.DefaultNamespace = ""
		_, err := e.m.ApplyAll(t.Context(), []*unstructured.Unstructured{object(t, "v1", "ConfigMap", "", "homeless")}, opts)
		var oe *apply.ObjectError
		if !errors.As(err, &oe) {
			t.Fatalf("ApplyAll error = %v, want an *apply.ObjectError", err)
		}
		if got := oe.Object.String(); got != "ConfigMap/homeless" {
			t.Errorf("error names %s, want ConfigMap/homeless", got)
		}
		if !strings.HasPrefix(errString(err), "ConfigMap/homeless: ") || !apply.IsInvalid(err) {
			t.Errorf("error %q (invalid: %t), want it to start with the object and be invalid", err, apply.IsInvalid(err))
		}
	})

	t.Run("a cluster role with a stray namespace is applied cluster-scoped", func(t *testing.T) {
		name := e.ns + "-reader"
		e.cleanup(t, "rbac.authorization.k8s.io/v1", "ClusterRole", name)
		role := object(t, "rbac.authorization.k8s.io/v1", "ClusterRole", e.ns, name)
		cs, err := e.m.ApplyAll(t.Context(), []*unstructured.Unstructured{role}, e.opts)
		if err != nil {
			t.Fatalf("ApplyAll: %v", err)
		}
		want := map[string]apply.Action{"ClusterRole/" + name: apply.ActionCreated}
		wantActions(t, cs, want)
		e.get(t, object(t, "rbac.authorization.k8s.io/v1", "ClusterRole", "", name))
	})
}

func TestApplyAllWritesNothingWhenAnObjectFailsValidation(t *testing.T) {
	cases := []struct {
		name, bad string
		spoil     func(objs []*unstructured.Unstructured) error
	}{{
		name: "a service with an invalid port",
		bad:  "Service/%s/web",
		spoil: func(objs []*unstructured.Unstructured) error {
			return unstructured.SetNestedSlice(objs[1].Object, []any{map[string]any{"port": int64(70000)}}, "spec", "ports")
		},
	}, {
		name: "a deployment whose selector does not match its labels",
		bad:  "Deployment/%s/web",
		spoil: func(objs []*unstructured.Unstructured) error {
			return unstructured.SetNestedField(objs[2].Object, "other", "spec", "selector", "matchLabels", "app")
		},
	}, {
		// The API server answers a type error in a server-side apply patch with a 500
		// ("failed to create typed patch object"): still the object's fault.
		name: "a config map whose value is a list, not a string",
		bad:  "ConfigMap/%s/web-config",
		spoil: func(objs []*unstructured.Unstructured) error {
			return unstructured.SetNestedField(objs[0].Object, []any{int64(1), int64(2)}, "data", "key")
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name+" is reported by name and nothing is created", func(t *testing.T) {
			e := newEnv(t)
			bad := fmt.Sprintf(tc.bad, e.ns)
			objs := load(t, "web.yaml")
			if err := tc.spoil(objs); err != nil {
				t.Fatal(err)
			}
			cs, err := e.m.ApplyAll(t.Context(), objs, e.opts)
			var ve *apply.ValidationError
			if !errors.As(err, &ve) || len(ve.Errs) != 1 || !strings.HasPrefix(ve.Errs[0].Error(), bad+": dry-run failed") || !apply.IsInvalid(err) {
				t.Fatalf("ApplyAll error = %v (invalid: %t), want an invalid *apply.ValidationError naming only %s", err, apply.IsInvalid(err), bad)
			}
			want := map[string]apply.Action{
				"ConfigMap/" + e.ns + "/web-config": apply.ActionHeld,
				"Service/" + e.ns + "/web":          apply.ActionHeld,
				"Deployment/" + e.ns + "/web":       apply.ActionHeld,
			}
			want[bad] = apply.ActionFailed
			wantActions(t, cs, want)
			for _, obj := range objs {
				if e.exists(t, obj) {
					t.Errorf("%s was created; a revision that fails validation writes nothing", apply.RefOf(obj))
				}
			}
		})
	}

	t.Run("an unknown kind fails as invalid, naming the object", func(t *testing.T) {
		e := newEnv(t)
		nope := object(t, "example.com/v1", "Nope", e.ns, "ghost")
		_, err := e.m.ApplyAll(t.Context(), []*unstructured.Unstructured{nope}, e.opts)
		if !strings.HasPrefix(errString(err), "Nope/"+e.ns+"/ghost: ") || !apply.IsInvalid(err) {
			t.Errorf("ApplyAll error = %v (invalid: %t), want an invalid error naming Nope/%s/ghost", err, apply.IsInvalid(err), e.ns)
		}
	})
}

func TestApplyAllDryRunReportsDriftAndWritesNothing(t *testing.T) {
	e := newEnv(t)
	if _, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts); err != nil {
		t.Fatal(err)
	}
	cm := e.get(t, load(t, "web.yaml")[0])
	if err := unstructured.SetNestedField(cm.Object, "edited by hand", "data", "greeting"); err != nil {
		t.Fatal(err)
	}
	cm.SetLabels(map[string]string{"team": "ops"})
	if err := e.c.Update(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
	before := e.resourceVersions(t, load(t, "web.yaml"))

	opts := e.opts
	opts.DryRun = true
	cs, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), opts)
	if err != nil {
		t.Fatal(err)
	}
	var drifted *apply.Change
	for i := range cs.Changes {
		if cs.Changes[i].Action != apply.ActionUnchanged {
			drifted = &cs.Changes[i]
		}
	}
	if drifted == nil || drifted.Object.Kind != "ConfigMap" || drifted.Action != apply.ActionConfigured {
		t.Fatalf("actions = %v, want only the ConfigMap configured", actions(cs))
	}
	// The label git does not declare belongs to nobody Tether knows of, so it stays.
	if diff := cmp.Diff([]string{"data.greeting"}, drifted.Diff); diff != "" {
		t.Errorf("diff of the ConfigMap (-want +got):\n%s", diff)
	}
	if cs.Changed() || !cs.Differs() {
		t.Errorf("Changed() = %t, Differs() = %t; want a dry run that differs and wrote nothing", cs.Changed(), cs.Differs())
	}
	if diff := cmp.Diff(before, e.resourceVersions(t, load(t, "web.yaml"))); diff != "" {
		t.Errorf("a dry run wrote (-before +after):\n%s", diff)
	}
}

func TestApplyAllImmutableFields(t *testing.T) {
	e := newEnv(t)
	job := func(image string, force bool) []*unstructured.Unstructured {
		objs := load(t, "job.yaml", "IMAGE", image)
		if force {
			objs[0].SetAnnotations(map[string]string{"tether.dev/force": "true"})
		}
		return objs
	}
	if _, err := e.m.ApplyAll(t.Context(), job("registry.k8s.io/pause:3.9", false), e.opts); err != nil {
		t.Fatal(err)
	}
	uid := e.get(t, job("", false)[0]).GetUID()

	t.Run("a change to an immutable field fails, naming the object", func(t *testing.T) {
		_, err := e.m.ApplyAll(t.Context(), job("registry.k8s.io/pause:3.10", false), e.opts)
		if !apply.IsImmutable(err) || !strings.HasPrefix(errString(err), "Job/"+e.ns+"/migrate: ") {
			t.Fatalf("ApplyAll error = %v, want an immutable-field error naming Job/%s/migrate", err, e.ns)
		}
		if got := e.get(t, job("", false)[0]).GetUID(); got != uid {
			t.Errorf("the Job was replaced without tether.dev/force")
		}
	})

	t.Run("with tether.dev/force the object is deleted and recreated", func(t *testing.T) {
		cs, err := e.m.ApplyAll(t.Context(), job("registry.k8s.io/pause:3.10", true), e.opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Changes) != 1 || !cs.Changes[0].Recreated || cs.Changes[0].Action != apply.ActionConfigured {
			t.Errorf("changes = %+v, want one recreated Job", cs.Changes)
		}
		live := e.get(t, job("", false)[0])
		image, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
		if live.GetUID() == uid || !strings.Contains(fmt.Sprint(image), "pause:3.10") {
			t.Errorf("Job uid %s (was %s), containers %v; want a new Job with the new image", live.GetUID(), uid, image)
		}
	})
}

// env is what every test of ApplyAll needs: a Manager on the shared control plane, a
// client to look at the result with, and a namespace of its own as the default.
type env struct {
	c    client.Client
	m    *apply.Manager
	ns   string
	opts apply.Options
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := controlplane.Shared(t).Config()
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatalf("creating a client: %v", err)
	}
	e := &env{c: c, m: apply.NewManager(c, apply.ManagerOptions{}), ns: controlplane.NewNamespace(t, cfg), opts: apply.DefaultOptions()}
	e.opts.DefaultNamespace = e.ns
	return e
}

// get reads the live state of obj, defaulting its namespace like ApplyAll does.
func (e *env) get(t *testing.T, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	live, err := e.read(t, obj)
	if err != nil {
		t.Fatalf("reading %s: %v", apply.RefOf(obj), err)
	}
	return live
}

func (e *env) exists(t *testing.T, obj *unstructured.Unstructured) bool {
	t.Helper()
	_, err := e.read(t, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("reading %s: %v", apply.RefOf(obj), err)
	}
	return err == nil
}

func (e *env) read(t *testing.T, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	key := client.ObjectKeyFromObject(obj)
	namespaced, err := e.c.IsObjectNamespaced(obj)
	if err != nil {
		return nil, err
	}
	if namespaced && key.Namespace == "" {
		key.Namespace = e.ns
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	return live, e.c.Get(t.Context(), key, live)
}

// resourceVersions maps each object to its live resourceVersion.
func (e *env) resourceVersions(t *testing.T, objs []*unstructured.Unstructured) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		out[apply.RefOf(o).String()] = e.get(t, o).GetResourceVersion()
	}
	return out
}

// cleanup deletes a cluster-scoped object a test creates when the test ends.
func (e *env) cleanup(t *testing.T, apiVersion, kind, name string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 30*time.Second)
		defer cancel()
		err := e.c.Delete(ctx, object(t, apiVersion, kind, "", name))
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting %s/%s: %v", kind, name, err)
		}
	})
}

// load reads the objects of a testdata file, replacing old with new strings in pairs.
func load(t *testing.T, file string, oldnew ...string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.NewReplacer(oldnew...).Replace(string(data)))
	dec := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			return objs
		} else if err != nil {
			t.Fatalf("testdata/%s: %v", file, err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

func object(t *testing.T, apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	t.Helper()
	o := &unstructured.Unstructured{}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(namespace)
	o.SetName(name)
	return o
}

// actions maps "Kind/namespace/name" to what ApplyAll did with it.
func actions(cs *apply.ChangeSet) map[string]apply.Action {
	out := map[string]apply.Action{}
	for _, c := range cs.Changes {
		out[c.Object.String()] = c.Action
	}
	return out
}

// wantActions fails t unless cs's actions, by object, are want.
func wantActions(t *testing.T, cs *apply.ChangeSet, want map[string]apply.Action) {
	t.Helper()
	if diff := cmp.Diff(want, actions(cs)); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

// applyManagers lists the field managers holding fields of obj through Apply.
func applyManagers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if mf.Operation == "Apply" {
			out = append(out, mf.Manager)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// errString is the message of the first object error in err, or of err itself.
func errString(err error) string {
	if errs := apply.ObjectErrors(err); len(errs) > 0 {
		return errs[0].Error()
	}
	if err == nil {
		return ""
	}
	return err.Error()
}

// A caller that gives its objects up (Options.Release) gets each back empty once
// it is written or found unchanged; the change set still names it and keeps its
// live state. One that does not keeps them whole.
func TestApplyAllReleasesTheObjectsItIsDoneWith(t *testing.T) {
	e := newEnv(t)
	released := e.opts
	released.Release = true

	t.Run("written and unchanged objects are let go of", func(t *testing.T) {
		kept := load(t, "web.yaml")
		if _, err := e.m.ApplyAll(t.Context(), kept, e.opts); err != nil {
			t.Fatal(err)
		}
		for i, obj := range kept {
			if obj.Object == nil {
				t.Errorf("object %d of web.yaml: emptied by an apply without Release", i)
			}
		}
		objs := load(t, "web.yaml", "greeting: hello", "greeting: bonjour")
		cs, err := e.m.ApplyAll(t.Context(), objs, released)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]apply.Action{
			"ConfigMap/" + e.ns + "/web-config": apply.ActionConfigured,
			"Service/" + e.ns + "/web":          apply.ActionUnchanged,
			"Deployment/" + e.ns + "/web":       apply.ActionUnchanged,
		}
		wantActions(t, cs, want)
		for i, obj := range objs {
			if obj.Object != nil {
				t.Errorf("object %d of web.yaml: still held after the apply was done with it", i)
			}
		}
		for _, c := range cs.Changes {
			if c.Live == nil {
				t.Errorf("%s: the change set lost its live state", c.Object)
			}
		}
	})

	t.Run("a CRD is let go of only once it is established", func(t *testing.T) {
		group := e.ns + ".example.com"
		e.cleanup(t, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "widgets."+group)
		createsWidgetCRDAndGear(t, e, group, load(t, "widget-crd.yaml", "GROUP", group), released)
	})
}

// createsWidgetCRDAndGear applies objs (widget-crd.yaml: the CRD of widgets in
// group, and a widget named gear) with opts, and fails t unless both were created.
func createsWidgetCRDAndGear(t *testing.T, e *env, group string, objs []*unstructured.Unstructured, opts apply.Options) {
	t.Helper()
	cs, err := e.m.ApplyAll(t.Context(), objs, opts)
	if err != nil {
		t.Fatalf("ApplyAll: %v", err)
	}
	want := map[string]apply.Action{
		"CustomResourceDefinition/widgets." + group: apply.ActionCreated,
		"Widget/" + e.ns + "/gear":                  apply.ActionCreated,
	}
	wantActions(t, cs, want)
}
