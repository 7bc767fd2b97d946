package apply_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/apply"
)

// kubectlApplied creates ConfigMap cfg the way client-side `kubectl apply` does: a
// create under kubectl-client-side-apply, with the last-applied annotation.
func (e *env) kubectlApplied(t *testing.T) {
	t.Helper()
	cm := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {keep: a, drop: b}\n")
	cm.SetNamespace(e.ns)
	cm.SetAnnotations(map[string]string{apply.LastAppliedAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"keep":"a","drop":"b"}}`})
	if err := e.c.Create(t.Context(), cm, client.FieldOwner("kubectl-client-side-apply")); err != nil {
		t.Fatal(err)
	}
}

func TestKubectlAppliedObjectsAreTakenOver(t *testing.T) {
	inGit := func(data string) *unstructured.Unstructured {
		return parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: "+data+"\n")
	}
	data := func(e *env) map[string]string {
		d, _, _ := unstructured.NestedStringMap(e.get(t, inGit("{}")).Object, "data")
		return d
	}

	t.Run("a field deleted from git disappears after the first sync took the object over", func(t *testing.T) {
		e := newEnv(t)
		e.kubectlApplied(t)
		cs := e.apply(t, e.opts, inGit("{keep: a, drop: b}"))
		if !cs.Changes[0].TakenOver {
			t.Errorf("the first sync did not take the object over")
		}
		live := e.get(t, inGit("{}"))
		if _, ok := live.GetAnnotations()[apply.LastAppliedAnnotation]; ok {
			t.Errorf("the last-applied annotation is still there")
		}
		if managers := applyManagers(live); !cmp.Equal(managers, []string{"tether"}) {
			t.Errorf("Apply managers = %v, want [tether]", managers)
		}
		e.apply(t, e.opts, inGit("{keep: a}"))
		if diff := cmp.Diff(map[string]string{"keep": "a"}, data(e)); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
	})

	t.Run("a manager that is never taken over keeps its fields", func(t *testing.T) {
		e := newEnv(t)
		e.kubectlApplied(t)
		e.opts.NeverTakeOver = []string{"kubectl-client-side-apply"}
		if cs := e.apply(t, e.opts, inGit("{keep: a, drop: b}")); cs.Changes[0].TakenOver {
			t.Errorf("the object was taken over")
		}
		e.apply(t, e.opts, inGit("{keep: a}"))
		if diff := cmp.Diff(map[string]string{"keep": "a", "drop": "b"}, data(e)); diff != "" {
			t.Errorf("data (-want +got):\n%s", diff)
		}
	})
}
