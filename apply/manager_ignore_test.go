package apply_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
)

// deployment is a Deployment as git declares it.
func deployment(t *testing.T, replicas int, image string) *unstructured.Unstructured {
	t.Helper()
	return parse(t, fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: %q}]
`, replicas, image))
}

// scaleByHPA sets the replicas of Deployment web through the scale subresource
// under kube-controller-manager, the way the HPA controller does.
func (e *env) scaleByHPA(t *testing.T, n int32) {
	const manager = "kube-controller-manager"
	t.Helper()
	d := &appsv1.Deployment{}
	if err := e.c.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: "web"}, d); err != nil {
		t.Fatal(err)
	}
	s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	if err := e.c.SubResource("scale").Update(t.Context(), d, client.WithSubResourceBody(s), client.FieldOwner(manager)); err != nil {
		t.Fatalf("scaling web to %d as %s: %v", n, manager, err)
	}
}

// liveReplicas and liveImage read Deployment web.
func (e *env) liveReplicas(t *testing.T) int64 {
	t.Helper()
	n, _, _ := unstructured.NestedInt64(e.get(t, deployment(t, 0, "")).Object, "spec", "replicas")
	return n
}

func (e *env) liveImage(t *testing.T) string {
	t.Helper()
	containers, _, _ := unstructured.NestedSlice(e.get(t, deployment(t, 0, "")).Object, "spec", "template", "spec", "containers")
	image, _, _ := unstructured.NestedString(containers[0].(map[string]any), "image")
	return image
}

func (e *env) apply(t *testing.T, opts apply.Options, objs ...*unstructured.Unstructured) *apply.ChangeSet {
	t.Helper()
	cs, err := e.m.ApplyAll(t.Context(), objs, opts)
	if err != nil {
		t.Fatalf("ApplyAll: %v", err)
	}
	return cs
}

func replicasRule() v1alpha1.IgnoreRule {
	return v1alpha1.IgnoreRule{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}
}

func TestIgnoredReplicasAreLeftToTheirOwner(t *testing.T) {
	e := newEnv(t)
	e.opts.IgnoreScaledReplicas = false // only the rule counts here
	e.apply(t, e.opts, deployment(t, 3, "nginx:1"))
	e.scaleByHPA(t, 5)

	t.Run("without a rule, git's replicas win back", func(t *testing.T) {
		cs := e.apply(t, e.opts, deployment(t, 3, "nginx:1"))
		if diff := cmp.Diff([]string{"spec.replicas"}, cs.Changes[0].Diff); diff != "" {
			t.Errorf("diff (-want +got):\n%s", diff)
		}
		if got := e.liveReplicas(t); got != 3 {
			t.Errorf("replicas = %d, want 3", got)
		}
	})

	e.scaleByHPA(t, 6)
	opts := e.opts
	opts.Ignore = []v1alpha1.IgnoreRule{replicasRule()}

	t.Run("with a rule, replicas never make the object differ", func(t *testing.T) {
		cs := e.apply(t, opts, deployment(t, 3, "nginx:1"))
		if got := cs.Changes[0].Action; got != apply.ActionUnchanged {
			t.Errorf("action = %s (diff %v), want unchanged", got, cs.Changes[0].Diff)
		}
		want := []apply.IgnoredField{{Path: "spec.replicas", Manager: "kube-controller-manager"}}
		if diff := cmp.Diff(want, cs.Changes[0].Ignored); diff != "" {
			t.Errorf("ignored (-want +got):\n%s", diff)
		}
	})

	t.Run("a new image is applied and replicas stay at 6", func(t *testing.T) {
		cs := e.apply(t, opts, deployment(t, 3, "nginx:2"))
		if diff := cmp.Diff([]string{"spec.template.spec.containers"}, cs.Changes[0].Diff); diff != "" {
			t.Errorf("diff (-want +got):\n%s", diff)
		}
		if got, image := e.liveReplicas(t), e.liveImage(t); got != 6 || image != "nginx:2" {
			t.Errorf("replicas %d image %s, want 6 and nginx:2", got, image)
		}
	})
}

func TestIgnoredFieldOnlyTetherOwnsKeepsItsLiveValue(t *testing.T) {
	e := newEnv(t)
	e.apply(t, e.opts, deployment(t, 3, "nginx:1"))
	opts := e.opts
	opts.Ignore = []v1alpha1.IgnoreRule{{Kind: "*", JSONPointers: []string{"/spec/replicas"}}}

	// Leaving spec.replicas out would release it; with no other owner the API server
	// would drop it and default it to 1.
	cs := e.apply(t, opts, deployment(t, 5, "nginx:2"))
	if got, image := e.liveReplicas(t), e.liveImage(t); got != 3 || image != "nginx:2" {
		t.Errorf("replicas %d image %s, want 3 (adopted, neither 1 nor git's 5) and nginx:2", got, image)
	}
	want := []apply.IgnoredField{{Path: "spec.replicas"}}
	if diff := cmp.Diff(want, cs.Changes[0].Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

func TestManagersRuleLeavesAnotherManagersFields(t *testing.T) {
	e := newEnv(t)
	cm := func() *unstructured.Unstructured {
		return parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {greeting: hello, size: small}\n")
	}
	e.apply(t, e.opts, cm())
	// A webhook-like manager rewrites a field git declares and adds one of its own.
	live := e.get(t, cm())
	live.Object["data"] = map[string]any{"greeting": "injected", "size": "small", "sidecar": "on"}
	live.SetManagedFields(nil)
	if err := e.c.Update(t.Context(), live, client.FieldOwner("injector")); err != nil {
		t.Fatal(err)
	}

	opts := e.opts
	opts.Ignore = []v1alpha1.IgnoreRule{{Kind: "*", Managers: []string{"injector"}}}
	cs := e.apply(t, opts, cm())
	if got := cs.Changes[0].Action; got != apply.ActionUnchanged {
		t.Errorf("action = %s (diff %v), want unchanged", got, cs.Changes[0].Diff)
	}
	data, _, _ := unstructured.NestedStringMap(e.get(t, cm()).Object, "data")
	if diff := cmp.Diff(map[string]string{"greeting": "injected", "size": "small", "sidecar": "on"}, data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}

	t.Run("a rule for another kind leaves the object alone", func(t *testing.T) {
		opts.Ignore = []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", Managers: []string{"injector"}}}
		cs := e.apply(t, opts, cm())
		if diff := cmp.Diff([]string{"data.greeting"}, cs.Changes[0].Diff); diff != "" {
			t.Errorf("diff (-want +got):\n%s", diff)
		}
	})
}

func TestAutoscaledReplicasAreIgnoredByDefault(t *testing.T) {
	t.Run("replicas set through the scale subresource", func(t *testing.T) {
		e := newEnv(t)
		e.apply(t, e.opts, deployment(t, 3, "nginx:1"))
		e.scaleByHPA(t, 6)
		cs := e.apply(t, e.opts, deployment(t, 3, "nginx:2"))
		if got := e.liveReplicas(t); got != 6 {
			t.Errorf("replicas = %d, want 6", got)
		}
		want := []apply.IgnoredField{{Path: "spec.replicas", Manager: "kube-controller-manager"}}
		if diff := cmp.Diff(want, cs.Changes[0].Ignored); diff != "" {
			t.Errorf("ignored (-want +got):\n%s", diff)
		}
	})

	t.Run("a workload an HPA targets keeps its live replicas", func(t *testing.T) {
		e := newEnv(t)
		hpa := parse(t, `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`)
		e.apply(t, e.opts, deployment(t, 3, "nginx:1"), hpa)
		cs := e.apply(t, e.opts, deployment(t, 4, "nginx:1"), hpa)
		if got := e.liveReplicas(t); got != 3 {
			t.Errorf("replicas = %d, want 3: git's change is left to the HPA", got)
		}
		if got := actions(cs)["Deployment/"+e.ns+"/web"]; got != apply.ActionUnchanged {
			t.Errorf("action = %s, want unchanged", got)
		}
	})

	t.Run("turned off, git's replicas are applied", func(t *testing.T) {
		e := newEnv(t)
		e.apply(t, e.opts, deployment(t, 3, "nginx:1"))
		e.scaleByHPA(t, 6)
		e.opts.IgnoreScaledReplicas = false
		e.apply(t, e.opts, deployment(t, 3, "nginx:1"))
		if got := e.liveReplicas(t); got != 3 {
			t.Errorf("replicas = %d, want 3", got)
		}
	})
}
