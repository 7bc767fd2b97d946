package sync_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	gosync "sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
	tethersync "tether.dev/tether/sync"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// web is Deployment web as git declares it.
func web(replicas int, image string) map[string]string {
	return map[string]string{"apps/web.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: %q}]
`, replicas, image)}
}

// hpa is a HorizontalPodAutoscaler of Deployment web, as git would hold it.
const hpa = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics: [{type: Resource, resource: {name: cpu, target: {type: Utilization, averageUtilization: 80}}}]
`

// scaleByHPA sets the replicas of Deployment web through the scale subresource
// under kube-controller-manager, the way the HPA controller does.
func scaleByHPA(t *testing.T, c client.Client, ns string, n int32) {
	t.Helper()
	d := &appsv1.Deployment{}
	harness.Must(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, d))
	s := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: n}}
	harness.Must(t, c.SubResource("scale").Update(t.Context(), d, client.WithSubResourceBody(s), client.FieldOwner("kube-controller-manager")))
}

func image(ctx context.Context, c client.Client, ns, name string) string {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
		return ""
	}
	return d.Spec.Template.Spec.Containers[0].Image
}

// replicaHistory records every spec.replicas a Deployment takes, from a watch, so
// a test can show that no value other than the autoscaler's was ever set.
type replicaHistory struct {
	mu     gosync.Mutex
	values []int32
}

func watchReplicas(t *testing.T, ns, name string) *replicaHistory {
	t.Helper()
	c, err := client.NewWithWatch(controlplane.Shared(t).Config(), client.Options{})
	harness.Must(t, err)
	w, err := c.Watch(t.Context(), &appsv1.DeploymentList{}, client.InNamespace(ns))
	harness.Must(t, err)
	t.Cleanup(w.Stop)
	h := &replicaHistory{}
	go func() {
		for ev := range w.ResultChan() {
			if d, ok := ev.Object.(*appsv1.Deployment); ok && d.Name == name && d.Spec.Replicas != nil {
				h.mu.Lock()
				if len(h.values) == 0 || h.values[len(h.values)-1] != *d.Spec.Replicas {
					h.values = append(h.values, *d.Spec.Replicas)
				}
				h.mu.Unlock()
			}
		}
	}()
	return h
}

func (h *replicaHistory) get() []int32 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.values)
}

// push commits files and makes the agent apply them now, as a push webhook would.
func push(t *testing.T, a *agent, repo *gitserver.Repo, s *v1alpha1.Sync, files map[string]string, msg string) {
	t.Helper()
	commit := repo.Commit(t, files, msg)
	a.Source.Refresh(repo.FileURL())
	a.Reconcile(t, s)
	a.WaitApplied(t, s, commit)
}

func resourceMessage(s *v1alpha1.Sync, kind, name string) string {
	for _, r := range s.Status.Resources {
		if r.Kind == kind && r.Name == name {
			return r.Message
		}
	}
	return "(not in the inventory)"
}

func TestAnIgnoreRuleKeepsScaledReplicasAcrossAGitChange(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	commit := repo.Commit(t, web(3, "nginx:1"), "web at 3")
	s := a.newSync(t, ns, repo.FileURL(), func(s *v1alpha1.Sync) {
		s.Spec.IgnoreAutoscaledReplicas = ptr.To(false) // the rule alone must do it
		s.Spec.IgnoreDifferences = []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}}
	})
	a.WaitApplied(t, s, commit)

	scaleByHPA(t, a.Client, ns, 6)
	a.Reconcile(t, s)
	push(t, a, repo, s, web(3, "nginx:2"), "new image, replicas: 3 still in git")

	harness.Eventually(t, waitTimeout, "the new image is applied", func(ctx context.Context) (bool, error) {
		return image(ctx, a.Client, ns, "web") == "nginx:2", nil
	})
	if n := replicas(t.Context(), a.Client, ns, "web"); n != 6 {
		t.Errorf("replicas = %d, want 6", n)
	}
	got := a.WaitFor(t, s, "status names the owner of spec.replicas", func(s *v1alpha1.Sync) bool {
		return resourceMessage(s, "Deployment", "web") == "spec.replicas left to kube-controller-manager"
	})
	if got.Status.Sync != v1alpha1.SyncStatusSynced {
		t.Errorf("sync = %s, want Synced: ignored fields never make a Sync OutOfSync", got.Status.Sync)
	}
}

func TestWithAnHPAReplicasAreOnlyEverSetByTheHPA(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "web")
	files := web(3, "nginx:1")
	files["apps/hpa.yaml"] = hpa
	commit := repo.Commit(t, files, "web and its HPA")
	s := a.newSync(t, ns, repo.FileURL()) // no rule: the default handles it
	a.WaitApplied(t, s, commit)
	history := watchReplicas(t, ns, "web")

	scaleByHPA(t, a.Client, ns, 6)
	a.Reconcile(t, s)
	push(t, a, repo, s, web(3, "nginx:2"), "new image")
	scaleByHPA(t, a.Client, ns, 4)
	a.Reconcile(t, s)
	push(t, a, repo, s, web(5, "nginx:3"), "new image, and replicas: 5 in git")
	scaleByHPA(t, a.Client, ns, 7)
	a.Reconcile(t, s)

	harness.Eventually(t, waitTimeout, "the last image is applied", func(ctx context.Context) (bool, error) {
		return image(ctx, a.Client, ns, "web") == "nginx:3", nil
	})
	harness.Eventually(t, waitTimeout, "the watch sees the last scale", func(context.Context) (bool, error) {
		h := history.get()
		return len(h) > 0 && h[len(h)-1] == 7, nil
	})
	if diff := cmp.Diff([]int32{3, 6, 4, 7}, history.get()); diff != "" {
		t.Errorf("replicas over time (-want +got):\n%s", diff)
	}
	got := a.WaitFor(t, s, "status names the owner of spec.replicas", func(s *v1alpha1.Sync) bool {
		return resourceMessage(s, "Deployment", "web") == "spec.replicas left to kube-controller-manager"
	})
	if got.Status.Sync != v1alpha1.SyncStatusSynced {
		t.Errorf("sync = %s, want Synced", got.Status.Sync)
	}
}

func TestAnObjectMadeByKubectlApplyLosesAFieldDeletedFromGit(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: ns, Annotations: map[string]string{
			apply.LastAppliedAnnotation: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cfg"},"data":{"keep":"a","drop":"b"}}`,
		}},
		Data: map[string]string{"keep": "a", "drop": "b"},
	}
	harness.Must(t, a.Client.Create(t.Context(), cm, client.FieldOwner("kubectl-client-side-apply")))

	repo := gitserver.NewLocalRepo(t, "cfg")
	configMap := func(data string) map[string]string {
		return map[string]string{"apps/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: " + data + "\n"}
	}
	commit := repo.Commit(t, configMap("{keep: a, drop: b}"), "the config map kubectl applied")
	s := a.newSync(t, ns, repo.FileURL())
	a.WaitApplied(t, s, commit)
	push(t, a, repo, s, configMap("{keep: a}"), "drop a key")

	harness.Eventually(t, waitTimeout, "the key deleted from git is gone", func(ctx context.Context) (bool, error) {
		got := &corev1.ConfigMap{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
			return false, err
		}
		if diff := cmp.Diff(map[string]string{"keep": "a"}, got.Data); diff != "" {
			return false, fmt.Errorf("data (-want +got):\n%s", diff)
		}
		if _, ok := got.Annotations[apply.LastAppliedAnnotation]; ok {
			return false, fmt.Errorf("the last-applied annotation is still there")
		}
		return true, nil
	})
}

func TestAFightEndsInAFieldConflict(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "cfg")
	commit := repo.Commit(t, map[string]string{"apps/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {greeting: hello}\n"}, "cfg")
	s := a.newSync(t, ns, repo.FileURL())
	a.WaitApplied(t, s, commit)
	a.events()

	key := client.ObjectKey{Namespace: ns, Name: "cfg"}
	greeting := func(ctx context.Context) string {
		cm := &corev1.ConfigMap{}
		if err := a.Client.Get(ctx, key, cm); err != nil {
			return ""
		}
		return cm.Data["greeting"]
	}
	// fight is another controller setting the field its way, as an Update.
	fight := func() {
		cm := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), key, cm))
		cm.Data["greeting"] = "fight"
		harness.Must(t, a.Client.Update(t.Context(), cm, client.FieldOwner("fighter")))
	}
	conflict := func(ctx context.Context) *metav1.Condition {
		got := &v1alpha1.Sync{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), got); err != nil {
			return nil
		}
		return apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.FieldConflictCondition)
	}

	corrections := 0
	for round := 0; round < 10 && conflict(t.Context()) == nil; round++ {
		fight()
		harness.Eventually(t, waitTimeout, "Tether corrects the field or gives it up", func(ctx context.Context) (bool, error) {
			return greeting(ctx) == "hello" || conflict(ctx) != nil, nil
		})
		if greeting(t.Context()) == "hello" {
			corrections++
		}
		harness.Eventually(t, waitTimeout, "the status is written", func(ctx context.Context) (bool, error) {
			got := &v1alpha1.Sync{}
			err := a.Reconciler.Cluster.Syncs.Get(ctx, client.ObjectKeyFromObject(s), got)
			return err == nil && got.Status.ObservedGeneration == got.Generation, err
		})
	}
	harness.Eventually(t, waitTimeout, "a FieldConflict condition", func(ctx context.Context) (bool, error) { return conflict(ctx) != nil, nil })
	if want := tethersync.DefaultFightOptions().Threshold; corrections != want {
		t.Errorf("corrections = %d, want %d before Tether gives up", corrections, want)
	}
	c := conflict(t.Context())
	for _, want := range []string{"ConfigMap/" + ns + "/cfg data.greeting", "fighter", "jsonPointers: [/data/greeting]"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("FieldConflict message %q does not name %q", c.Message, want)
		}
	}
	if events := strings.Join(a.events(), "\n"); !strings.Contains(events, "Warning FieldConflict") {
		t.Errorf("events = %q, want a FieldConflict warning", events)
	}
	got := &v1alpha1.Sync{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), got))
	wantGivenUp := []v1alpha1.GivenUpField{{ObjectRef: v1alpha1.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "cfg"}, JSONPointer: "/data/greeting", Manager: "fighter"}}
	if diff := cmp.Diff(wantGivenUp, got.Status.FieldsGivenUp); diff != "" {
		t.Errorf("status.fieldsGivenUp, which tether diff reads (-want +got):\n%s", diff)
	}
	if got := counterValue(t, a, "tether_field_fights_total"); got != 1 {
		t.Errorf("tether_field_fights_total = %v, want 1", got)
	}

	t.Run("the field is left to the other manager from then on", func(t *testing.T) {
		fight()
		a.Reconcile(t, s)
		if got := greeting(t.Context()); got != "fight" {
			t.Errorf("greeting = %q, want the other manager's %q", got, "fight")
		}
	})
}

func TestAManagersRuleLeavesAWebhooksFieldsAlone(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "cfg")
	commit := repo.Commit(t, map[string]string{"apps/cfg.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {greeting: hello}\n"}, "cfg")
	s := a.newSync(t, ns, repo.FileURL(), func(s *v1alpha1.Sync) {
		s.Spec.IgnoreDifferences = []v1alpha1.IgnoreRule{{Kind: "*", Managers: []string{"injector"}}}
	})
	a.WaitApplied(t, s, commit)
	a.events()

	// A mutating-webhook-like manager rewrites a field git declares and adds its own.
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cfg"}, cm))
	cm.Data = map[string]string{"greeting": "injected", "sidecar": "on"}
	harness.Must(t, a.Client.Update(t.Context(), cm, client.FieldOwner("injector")))
	got := a.WaitFor(t, s, "status names the injector", func(s *v1alpha1.Sync) bool {
		return resourceMessage(s, "ConfigMap", "cfg") == "data.greeting left to injector"
	})
	a.Reconcile(t, s)

	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cfg"}, cm))
	if diff := cmp.Diff(map[string]string{"greeting": "injected", "sidecar": "on"}, cm.Data); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}
	if got.Status.Sync != v1alpha1.SyncStatusSynced {
		t.Errorf("sync = %s, want Synced", got.Status.Sync)
	}
	if events := strings.Join(a.events(), "\n"); strings.Contains(events, "DriftCorrected") {
		t.Errorf("events = %q, want no drift correction", events)
	}
}
