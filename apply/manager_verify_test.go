package apply_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	"tether.dev/tether/test/apicount"
	"tether.dev/tether/test/controlplane"
)

// apiVersions stands in for a watch cache: it reads resourceVersions through its own
// client, whose requests the counter does not see.
type apiVersions struct{ c client.Client }

func (v apiVersions) ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (string, bool) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := v.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, obj); err != nil {
		return "", apierrors.IsNotFound(err) // absent, as a synced watch cache says
	}
	return obj.GetResourceVersion(), true
}

// blindVersions stands in for a watch cache that lags: it has seen no object at all.
type blindVersions struct{}

func (blindVersions) ResourceVersion(context.Context, schema.GroupVersionKind, string, string) (string, bool) {
	return "", true
}

func TestObjectsTheWatchSaysAreAbsentAreNotRead(t *testing.T) {
	e := newEnv(t)
	counter := &apicount.Counter{}
	counted, err := client.New(counter.Wrap(controlplane.Shared(t).Config()), client.Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Run("new objects cost a dry-run and an apply each, no read", func(t *testing.T) {
		opts, err := apply.ManagerOptions{LiveVersions: apiVersions{c: e.c}}.WithClientsFor(counter.Wrap(controlplane.Shared(t).Config()))
		if err != nil {
			t.Fatal(err)
		}
		m := apply.NewManager(counted, opts)
		cs, err := m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
		if err != nil {
			t.Fatal(err)
		}
		if cs.Count(apply.ActionCreated) != 3 {
			t.Errorf("actions = %v, want all created", actions(cs))
		}
		// (The client's first requests also discover the API: lists of /api and /apis.)
		if got := counter.Snapshot(); got[apicount.Get] != 0 || got[apicount.DryRun] != 3 || got[apicount.Patch] != 3 {
			t.Errorf("requests = %v, want 3 dry-runs, 3 applies and no read", got)
		}
		// The dry-run of an object that is not there asks for its metadata only.
		if got := counter.Accepts(apicount.DryRun); !slices.Equal(got, []string{metadataOnly, metadataOnly, metadataOnly}) {
			t.Errorf("dry-runs accepted %q, want 3 answers of metadata only", got)
		}
	})

	t.Run("a new object the API server refuses names the cause", func(t *testing.T) {
		bad := load(t, "web.yaml")
		bad[2].Object["spec"].(map[string]any)["replicas"] = int64(-1)
		bad[2].SetName(bad[2].GetName() + "-bad")
		opts, err := apply.ManagerOptions{LiveVersions: apiVersions{c: e.c}}.WithClientsFor(counter.Wrap(controlplane.Shared(t).Config()))
		if err != nil {
			t.Fatal(err)
		}
		m := apply.NewManager(counted, opts)
		cs, err := m.ApplyAll(t.Context(), bad, e.opts)
		var invalid *apply.ValidationError
		if !errors.As(err, &invalid) || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
			t.Fatalf("err = %v, want the API server's refusal of spec.replicas, as a validation error", err)
		}
		if cs.Count(apply.ActionCreated)+cs.Count(apply.ActionConfigured) != 0 {
			t.Errorf("actions = %v, want nothing written", actions(cs))
		}
	})

	t.Run("an object the watch has not seen yet is read after all, and its owner is checked", func(t *testing.T) {
		claimed := load(t, "web.yaml")[:1]
		claimed[0].SetAnnotations(map[string]string{v1alpha1.OwnedByAnnotation: e.ns + "/other"})
		if _, err := e.m.ApplyAll(t.Context(), claimed, e.opts); err != nil {
			t.Fatal(err)
		}
		counter.Reset()
		m := apply.NewManager(counted, apply.ManagerOptions{LiveVersions: blindVersions{}})
		objs := load(t, "web.yaml")
		for _, o := range objs {
			o.SetAnnotations(map[string]string{v1alpha1.OwnedByAnnotation: e.ns + "/mine"})
		}
		_, err := m.ApplyAll(t.Context(), objs, e.opts)
		var claim *apply.ClaimedError
		if !errors.As(err, &claim) || claim.Owner != e.ns+"/other" {
			t.Errorf("err = %v, want the claim of %s/other", err, e.ns)
		}
		if got := counter.Snapshot()[apicount.Get]; got < 1 {
			t.Errorf("reads = %d, want the object the watch missed read", got)
		}
	})
}

func TestApplyAllSkipsWhatWasVerified(t *testing.T) {
	e := newEnv(t)
	counter := &apicount.Counter{}
	counted, err := client.New(counter.Wrap(controlplane.Shared(t).Config()), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := apply.NewManager(counted, apply.ManagerOptions{LiveVersions: apiVersions{c: e.c}})
	if _, err := m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts); err != nil {
		t.Fatal(err)
	}

	t.Run("a converged apply sends no request at all", func(t *testing.T) {
		counter.Reset()
		cs, err := m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts)
		if err != nil {
			t.Fatal(err)
		}
		if cs.Count(apply.ActionUnchanged) != 3 {
			t.Errorf("actions = %v, want all unchanged", actions(cs))
		}
		for _, c := range cs.Changes {
			if c.Live == nil {
				t.Errorf("%s: no live object for health checks", c.Object)
			}
		}
		if got := counter.Snapshot(); len(got) != 0 {
			t.Errorf("requests = %v, want none", got)
		}
	})

	t.Run("one changed object is the only one read, dry-run and applied", func(t *testing.T) {
		counter.Reset()
		objs := load(t, "web.yaml", "greeting: hello", "greeting: bonjour")
		if _, err := m.ApplyAll(t.Context(), objs, e.opts); err != nil {
			t.Fatal(err)
		}
		path := "/api/v1/namespaces/" + e.ns + "/configmaps/web-config"
		want := map[string]map[string]int{apicount.Get: {path: 1}, apicount.DryRun: {path: 1}, apicount.Patch: {path: 1}}
		got := map[string]map[string]int{}
		for kind := range counter.Snapshot() {
			got[kind] = counter.Paths(kind)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("requests (-want +got):\n%s", diff)
		}
	})

	t.Run("an object edited in the cluster is compared again", func(t *testing.T) {
		objs := load(t, "web.yaml", "greeting: hello", "greeting: bonjour")
		cm := e.get(t, objs[0])
		cm.SetLabels(map[string]string{"edited": "yes"})
		if err := e.c.Update(t.Context(), cm); err != nil {
			t.Fatal(err)
		}
		counter.Reset()
		cs, err := m.ApplyAll(t.Context(), objs, e.opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := counter.Snapshot(); got[apicount.DryRun] != 1 || got.Writes() != 0 {
			t.Errorf("requests = %v, want one dry-run (the edited ConfigMap) and no write: the label is not git's", got)
		}
		if cs.Count(apply.ActionUnchanged) != 3 {
			t.Errorf("actions = %v, want all unchanged", actions(cs))
		}
	})
}

// metadataOnly is the Accept header of a request for an object's metadata only
// (client-go's metadata client).
const metadataOnly = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"

// TestUnknownFieldsAreRefused: a field the kind's schema does not declare fails
// the object's dry-run, whether the object is new (the metadata-only dry-run) or
// exists (the whole one), and nothing of the revision is written. The agent asks for
// fieldValidation=Ignore, which spares the API server its strict second parse of
// the body; server-side apply refuses undeclared fields by itself.
func TestUnknownFieldsAreRefused(t *testing.T) {
	e := newEnv(t)
	if _, err := e.m.ApplyAll(t.Context(), load(t, "web.yaml"), e.opts); err != nil {
		t.Fatal(err)
	}
	opts, err := apply.ManagerOptions{LiveVersions: apiVersions{c: e.c}}.WithClientsFor(controlplane.Shared(t).Config())
	if err != nil {
		t.Fatal(err)
	}
	m := apply.NewManager(e.c, opts)
	objs := load(t, "web.yaml")
	fresh := objs[0].DeepCopy() // a new ConfigMap, with a typo
	fresh.SetName("web-config-2")
	fresh.Object["dat"] = fresh.Object["data"]
	delete(fresh.Object, "data")
	containers, _, _ := unstructured.NestedSlice(objs[2].Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["imagePullPolicyy"] = "Always" // the existing Deployment, with a typo
	if err := unstructured.SetNestedSlice(objs[2].Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	objs[0].Object["data"] = map[string]any{"greeting": "changed"} // valid, and held
	cs, err := m.ApplyAll(t.Context(), append(objs, fresh), e.opts)
	var invalid *apply.ValidationError
	if !errors.As(err, &invalid) {
		t.Fatalf("err = %v, want a validation error", err)
	}
	for _, want := range []string{".dat: field not declared in schema", ".imagePullPolicyy: field not declared in schema"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
	if got := cs.Count(apply.ActionFailed); got != 2 {
		t.Errorf("actions = %v, want the two objects with a typo failed", actions(cs))
	}
	if live := e.get(t, objs[0]); live.Object["data"].(map[string]any)["greeting"] != "hello" || e.exists(t, fresh) {
		t.Errorf("something of the revision was written: %v, new ConfigMap there: %t", live.Object["data"], e.exists(t, fresh))
	}
}
