package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

const appConfig = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: %s
`

const appService = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {port: 80, targetPort: 8080}
`

const appDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: registry.k8s.io/pause:3.10
`

func TestSyncTakesCommitsIntoTheCluster(t *testing.T) {
	c := newClient(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	git := gitserver.Start(t, gitserver.Options{})
	repo := git.CreateRepo(t, "deploy")
	first := repo.Commit(t, map[string]string{
		"apps/web/config.yaml":     fmt.Sprintf(appConfig, "hello"),
		"apps/web/service.yaml":    appService,
		"apps/web/deployment.yaml": appDeployment,
		"README.md":                "# deploy\n",
	}, "add web")
	a := startAgent(t)

	sync := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				URL:      repo.URL(),
				Ref:      v1alpha1.GitRef{Branch: "main"},
				Path:     "apps/web",
				Interval: &metav1.Duration{Duration: 2 * time.Second},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	createSync(t, c, sync)

	t.Run("objects appear, applied by field manager tether", func(t *testing.T) {
		cm := &corev1.ConfigMap{}
		harness.Eventually(t, waitTimeout, "the ConfigMap exists", func(ctx context.Context) (bool, error) {
			return true, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm)
		})
		if got := cm.Data["greeting"]; got != "hello" {
			t.Errorf("greeting = %q, want hello", got)
		}
		if !appliedBy(cm.ManagedFields, "tether") {
			t.Errorf("managedFields = %+v, want an Apply entry of manager tether", cm.ManagedFields)
		}
		if got := cm.Annotations[v1alpha1.OwnedByAnnotation]; got != ns+"/web" {
			t.Errorf("owned-by annotation = %q, want %s/web", got, ns)
		}
		for _, obj := range []client.Object{&corev1.Service{}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}}} {
			if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, obj); err != nil {
				t.Errorf("%T web: %v", obj, err)
			}
		}
	})

	t.Run("status says Ready at the pushed commit", func(t *testing.T) {
		s := waitForSync(t, c, sync, "Ready at the first commit", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+first && isReady(s)
		})
		if s.Status.ObservedGeneration != s.Generation {
			t.Errorf("observedGeneration = %d, want %d", s.Status.ObservedGeneration, s.Generation)
		}
		if s.Status.SourceRevision != "main@sha1:"+first || s.Status.Sync != v1alpha1.SyncStatusSynced {
			t.Errorf("sourceRevision = %q, sync = %q; want main@sha1:%s, Synced", s.Status.SourceRevision, s.Status.Sync, first)
		}
		if inv := plan.Inventory(s.Status); len(inv) != 3 {
			t.Errorf("inventory = %v, want the ConfigMap, Service and Deployment", inv)
		}
	})

	t.Run("kubectl shows the printer columns and explains the fields", func(t *testing.T) {
		out := kubectl(t, "get", "syncs", "-A")
		header := strings.Fields(strings.SplitN(out, "\n", 2)[0])
		want := []string{"NAMESPACE", "NAME", "REVISION", "SYNC", "HEALTH", "READY", "SUSPENDED", "PINNED", "AGE"}
		if strings.Join(header, " ") != strings.Join(want, " ") {
			t.Errorf("kubectl get syncs -A header = %v, want %v\n%s", header, want, out)
		}
		if !strings.Contains(out, "main@sha1:"+first) || !strings.Contains(out, "Synced") {
			t.Errorf("kubectl get syncs -A does not show the revision and sync status:\n%s", out)
		}
		explain := kubectl(t, "explain", "sync.spec.source")
		for _, field := range []string{"url", "ref", "path", "interval", "secretRef"} {
			if !strings.Contains(explain, field) {
				t.Errorf("kubectl explain sync.spec.source does not document %s:\n%s", field, explain)
			}
		}
	})

	second := repo.Commit(t, map[string]string{"apps/web/config.yaml": fmt.Sprintf(appConfig, "bonjour")}, "greet in French")

	t.Run("a pushed change is applied within the interval", func(t *testing.T) {
		harness.Eventually(t, waitTimeout, "the ConfigMap says bonjour", func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{}
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-config"}, cm)
			return cm.Data["greeting"] == "bonjour", err
		})
		waitForSync(t, c, sync, "Ready at the second commit", func(s *v1alpha1.Sync) bool {
			return s.Status.LastAppliedRevision == "main@sha1:"+second && isReady(s)
		})
	})

	before := &corev1.ConfigMap{}
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web-config"}, before); err != nil {
		t.Fatal(err)
	}
	broken := repo.Commit(t, map[string]string{
		"apps/web/config.yaml": fmt.Sprintf(appConfig, "hola"),
		"apps/web/broken.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [oops\n",
	}, "break it")

	t.Run("broken YAML sets Ready=False naming the file and changes nothing", func(t *testing.T) {
		s := waitForSync(t, c, sync, "not Ready at the broken commit", func(s *v1alpha1.Sync) bool {
			return s.Status.SourceRevision == "main@sha1:"+broken && !isReady(s)
		})
		ready := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		if !strings.Contains(ready.Message, "apps/web/broken.yaml") || ready.Reason != "RenderFailed" {
			t.Errorf("Ready condition = %s: %q, want reason RenderFailed and a message naming apps/web/broken.yaml", ready.Reason, ready.Message)
		}
		if !apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition) {
			t.Errorf("conditions = %+v, want Stalled=True", s.Status.Conditions)
		}
		if s.Status.LastAppliedRevision != "main@sha1:"+second {
			t.Errorf("lastAppliedRevision = %q, want the last good commit %s", s.Status.LastAppliedRevision, second)
		}
		after := &corev1.ConfigMap{}
		if err := c.Get(t.Context(), client.ObjectKeyFromObject(before), after); err != nil {
			t.Fatal(err)
		}
		if after.Data["greeting"] != "bonjour" || after.ResourceVersion != before.ResourceVersion {
			t.Errorf("ConfigMap changed by a broken commit: greeting %q, resourceVersion %s → %s", after.Data["greeting"], before.ResourceVersion, after.ResourceVersion)
		}
	})

	t.Run("metrics report the Sync", func(t *testing.T) {
		page := a.metrics(t)
		want := fmt.Sprintf(`tether_sync_ready{name="web",namespace="%s"} 0`, ns)
		if !strings.Contains(page, want) {
			t.Errorf("metrics lack %s", want)
		}
		if !strings.Contains(page, fmt.Sprintf(`revision="main@sha1:%s"`, second)) {
			t.Errorf("tether_sync_info does not carry the last applied revision %s", second)
		}
	})
	a.running(t)
}

// waitForSync waits until the agent has brought sync where cond says.
func waitForSync(t *testing.T, c client.Client, sync *v1alpha1.Sync, what string, cond func(*v1alpha1.Sync) bool) *v1alpha1.Sync {
	t.Helper()
	return harness.WaitForSync(t, c, sync, waitTimeout, what, cond)
}

func isReady(s *v1alpha1.Sync) bool {
	return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ReadyCondition)
}

func appliedBy(fields []metav1.ManagedFieldsEntry, manager string) bool {
	for _, f := range fields {
		if f.Manager == manager && f.Operation == metav1.ManagedFieldsOperationApply {
			return true
		}
	}
	return false
}
