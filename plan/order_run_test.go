package plan_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

// object is a namespaced object of kind named name (or generated from
// generateName when name is empty and it ends in "-") with annotations as
// "key=value" pairs.
func object(kind, name string, annotations ...string) *unstructured.Unstructured {
	o := &unstructured.Unstructured{}
	o.SetAPIVersion("v1")
	if kind == "Deployment" {
		o.SetAPIVersion("apps/v1")
	}
	if kind == "Job" {
		o.SetAPIVersion("batch/v1")
	}
	o.SetKind(kind)
	o.SetNamespace("app")
	if strings.HasSuffix(name, "-") {
		o.SetGenerateName(name)
	} else {
		o.SetName(name)
	}
	if len(annotations) > 0 {
		a := map[string]string{}
		for _, kv := range annotations {
			k, v, _ := strings.Cut(kv, "=")
			a[k] = v
		}
		o.SetAnnotations(a)
	}
	return o
}

// describe writes a run as one line per step: "Phase wave: Kind/name ...".
func describe(steps []plan.Step) []string {
	var out []string
	for _, s := range steps {
		var names []string
		for _, o := range s.Resources {
			names = append(names, o.GetKind()+"/"+o.GetName())
		}
		for _, h := range s.Hooks {
			names = append(names, "hook "+h.Object.GetKind()+"/"+h.Object.GetName())
		}
		out = append(out, fmt.Sprintf("%s %d: %s", s.Phase, s.Wave, strings.Join(names, " ")))
	}
	return out
}

func TestOrderRunsPhasesThenWavesThenKindsThenNames(t *testing.T) {
	t.Parallel()
	const rev = "main@sha1:abc"
	objs := []*unstructured.Unstructured{
		object("Deployment", "web", "argocd.argoproj.io/sync-wave=1"),
		object("Service", "web", "argocd.argoproj.io/sync-wave=1"),
		object("ConfigMap", "b"),
		object("ConfigMap", "a"),
		object("Namespace", "app", "tether.dev/wave=-1"),
		object("Job", "migrate", "argocd.argoproj.io/hook=PreSync"),
		object("Job", "smoke-", "argocd.argoproj.io/hook=PostSync", "argocd.argoproj.io/hook-delete-policy=HookSucceeded"),
		object("Job", "seed", "tether.dev/hook=Sync", "tether.dev/wave=1"),
		object("Job", "early", "argocd.argoproj.io/hook=PreSync", "argocd.argoproj.io/sync-wave=-2"),
		object("Job", "notify", "argocd.argoproj.io/hook=SyncFail"),
		object("Pod", "test", "helm.sh/hook=test"),
	}
	run, err := plan.Order(objs, rev)
	if err != nil {
		t.Fatalf("Order(): %v", err)
	}
	smoke := plan.HookName(objs[6], rev, plan.PhasePostSync)
	want := []string{
		"PreSync -2: hook Job/early",
		"PreSync 0: hook Job/migrate",
		"Sync -1: Namespace/app",
		"Sync 0: ConfigMap/a ConfigMap/b",
		"Sync 1: Service/web Deployment/web hook Job/seed",
		"PostSync 0: hook Job/" + smoke,
	}
	if diff := cmp.Diff(want, describe(run.Steps)); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"SyncFail 0: hook Job/notify"}, describe(run.SyncFail)); diff != "" {
		t.Errorf("SyncFail steps (-want +got):\n%s", diff)
	}
	if len(run.Resources) != 5 || len(run.Hooks) != 5 {
		t.Errorf("%d resources and %d hooks, want 5 and 5", len(run.Resources), len(run.Hooks))
	}
	if diff := cmp.Diff([]v1alpha1.ObjectRef{{Version: "v1", Kind: "Pod", Namespace: "app", Name: "test"}}, run.Skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
	if !run.Ordered() {
		t.Error("a run with hooks and waves is not Ordered")
	}
	if objs[6].GetName() != "" {
		t.Error("Order named the rendered object instead of a copy of it")
	}
	if got := run.Steps[5].Hooks[0].Object.GetAnnotations()[plan.HookRunAnnotation]; got != rev+"/PostSync" {
		t.Errorf("hook-run annotation = %q, want %s/PostSync", got, rev)
	}
}

func TestOrderOfAPlainRevisionIsOneSet(t *testing.T) {
	t.Parallel()
	run, err := plan.Order([]*unstructured.Unstructured{object("ConfigMap", "a"), object("Deployment", "web")}, "r1")
	if err != nil {
		t.Fatalf("Order(): %v", err)
	}
	if run.Ordered() {
		t.Error("a revision without hooks or waves is Ordered: it would lose the one-set apply")
	}
}

func TestOrderRefusesAnUnreadableAnnotationNamingTheObject(t *testing.T) {
	t.Parallel()
	_, err := plan.Order([]*unstructured.Unstructured{object("ConfigMap", "a", "argocd.argoproj.io/sync-wave=one")}, "r1")
	var held *plan.HeldError
	if err == nil || !strings.Contains(err.Error(), "ConfigMap/app/a") || !strings.Contains(err.Error(), "argocd.argoproj.io/sync-wave") {
		t.Fatalf("Order() error = %v, want one naming ConfigMap/app/a and the annotation", err)
	}
	if !errors.As(err, &held) || held.Reason != v1alpha1.ReasonInvalidOrdering {
		t.Errorf("error %v is not a HeldError with reason InvalidOrdering", err)
	}
}

func TestHookNameIsStablePerRevisionAndPhase(t *testing.T) {
	t.Parallel()
	gen := object("Job", "migrate-")
	a, b := plan.HookName(gen, "r1", plan.PhasePreSync), plan.HookName(gen, "r1", plan.PhasePreSync)
	if a != b || !strings.HasPrefix(a, "migrate-") || len(a) != len("migrate-")+5 {
		t.Errorf("HookName = %q then %q, want one stable name: migrate- and 5 characters", a, b)
	}
	if plan.HookName(gen, "r2", plan.PhasePreSync) == a || plan.HookName(gen, "r1", plan.PhasePostSync) == a {
		t.Error("HookName is the same for another revision or phase: the hook would not run again")
	}
	if got := plan.HookName(object("Job", "fixed"), "r1", plan.PhasePreSync); got != "fixed" {
		t.Errorf("HookName of a named object = %q, want its name", got)
	}
	long := object("Job", strings.Repeat("x", 70)+"-")
	if got := plan.HookName(long, "r1", plan.PhasePreSync); len(got) != 63 {
		t.Errorf("HookName of a long generateName is %d long, want it cut to 58+5 as the API server does", len(got))
	}
}

func TestMarkHooksKeepsHooksOutOfTheInventoryLabel(t *testing.T) {
	t.Parallel()
	s := &v1alpha1.Sync{}
	s.Namespace, s.Name = "tether-system", "web"
	h := object("Job", "migrate")
	h.SetLabels(map[string]string{v1alpha1.SyncLabel: "forged"})
	plan.MarkHooks([]*unstructured.Unstructured{h}, s)
	if _, ok := h.GetLabels()[v1alpha1.SyncLabel]; ok {
		t.Error("a hook carries the tether.dev/sync label: a rebuilt inventory would take it in")
	}
	if h.GetLabels()[plan.HookLabel] == "" || h.GetAnnotations()[v1alpha1.OwnedByAnnotation] != "tether-system/web" {
		t.Errorf("hook marks: labels %v annotations %v", h.GetLabels(), h.GetAnnotations())
	}
}

func TestManagedObjectsLeaveHooksOut(t *testing.T) {
	t.Parallel()
	objs, err := plan.ManagedObjects([]*unstructured.Unstructured{
		object("ConfigMap", "a", "argocd.argoproj.io/sync-wave=2"),
		object("Job", "migrate-", "argocd.argoproj.io/hook=PreSync"),
		object("Pod", "test", "helm.sh/hook=test"),
	})
	if err != nil || len(objs) != 1 || objs[0].GetName() != "a" {
		t.Errorf("ManagedObjects() = %d objects, %v; want ConfigMap a alone", len(objs), err)
	}
}
