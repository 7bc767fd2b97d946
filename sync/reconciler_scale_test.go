package sync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
)

// scaleEnv names the environment variable that sets how many objects
// TestASyncOfManyObjects applies; `make test-scale` sets 10,000. Unset, the test
// runs with 1,000, so that `make test` keeps the path honest.
const scaleEnv = "TETHER_SCALE_OBJECTS"

// statusLimit is the most a Sync's status may take: half of etcd's default request
// limit, leaving room for spec, metadata and managedFields.
const statusLimit = 768 << 10

func TestASyncOfManyObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("applies thousands of objects")
	}
	n := 1000
	if v := os.Getenv(scaleEnv); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s=%q: %v", scaleEnv, v, err)
		}
	}
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	served := denyingWebhook(t, a.Client, ns, 3000)
	repo := gitserver.NewLocalRepo(t, "many")
	denied := n / 20
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("apps/cm-%05d.yaml", i)] = labelledConfigMap(fmt.Sprintf("app-%05d-config", i), i < denied)
	}
	repo.Commit(t, files, fmt.Sprintf("%d config maps, %d of them denied by admission", n, denied))
	s := a.newSync(t, ns, repo.FileURL())

	t.Run(fmt.Sprintf("%d denied with 3 KB messages: nothing is written, and the status fits", denied), func(t *testing.T) {
		got := a.WaitFor(t, s, "Stalled", func(s *v1alpha1.Sync) bool {
			return apimeta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.StalledCondition)
		})
		if r := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition); r.Reason != v1alpha1.ReasonValidationFailed {
			t.Errorf("Ready reason = %s, want %s", r.Reason, v1alpha1.ReasonValidationFailed)
		}
		if managed := managedConfigMaps(t, a, s); managed != 0 {
			t.Errorf("%d config maps were written, want none", managed)
		}
		if got.Status.Summary == nil || got.Status.Summary.OutOfSync != int32(n) || len(got.Status.Resources)+int(got.Status.ResourcesOmitted) != n {
			t.Errorf("summary %+v, %d detailed + %d omitted; want all %d out of sync", got.Status.Summary, len(got.Status.Resources), got.Status.ResourcesOmitted, n)
		}
		assertStatusFits(t, got)
		t.Logf("the webhook answered %d admission reviews", served())
	})

	for i := 0; i < denied; i++ {
		files[fmt.Sprintf("apps/cm-%05d.yaml", i)] = labelledConfigMap(fmt.Sprintf("app-%05d-config", i), false)
	}
	fixed := repo.Commit(t, files, "nothing denied")
	a.Source.Refresh(repo.FileURL())
	a.Reconcile(t, s)

	t.Run(fmt.Sprintf("once fixed, %d objects converge with a status under 768 KiB", n), func(t *testing.T) {
		got := a.WaitApplied(t, s, fixed)
		if inv := len(plan.Inventory(got.Status)); inv != n || got.Status.Summary == nil || got.Status.Summary.Total != int32(n) {
			t.Errorf("inventory %d, summary %+v; want %d objects", inv, got.Status.Summary, n)
		}
		assertStatusFits(t, got)
	})

	t.Run("a tenth of them is pruned", func(t *testing.T) {
		removed := map[string]string{}
		for i := 0; i < n/10; i++ {
			removed[fmt.Sprintf("apps/cm-%05d.yaml", i)] = ""
		}
		second := repo.Commit(t, removed, "remove a tenth")
		a.Source.Refresh(repo.FileURL())
		a.Reconcile(t, s)
		got := a.WaitApplied(t, s, second)
		if inv := len(plan.Inventory(got.Status)); inv != n-n/10 {
			t.Errorf("inventory holds %d objects, want %d", inv, n-n/10)
		}
	})

	t.Run("deleting the Sync deletes the rest", func(t *testing.T) {
		harness.Must(t, a.Client.Delete(t.Context(), s))
		// A guard against hangs that grows with the work: 10 ms per object deleted.
		harness.Eventually(t, waitTimeout+time.Duration(n)*time.Millisecond*10, "the Sync is gone", func(ctx context.Context) (bool, error) {
			err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
		if managed := managedConfigMaps(t, a, s); managed != 0 {
			t.Errorf("%d config maps left after the Sync was deleted", managed)
		}
	})
}

func assertStatusFits(t *testing.T, s *v1alpha1.Sync) {
	t.Helper()
	b, err := json.Marshal(s.Status)
	harness.Must(t, err)
	if len(b) > statusLimit {
		t.Errorf("status takes %d KiB, more than %d KiB", len(b)>>10, statusLimit>>10)
		return
	}
	t.Logf("status of %d objects: %d KiB", s.Status.Summary.Total, len(b)>>10)
}

func labelledConfigMap(name string, deny bool) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, labels: {%q: %q}}\ndata: {owner: %s}\n", name, denyLabel, fmt.Sprint(deny), name)
}

// managedConfigMaps counts the ConfigMaps in the Sync's namespace that carry its label.
func managedConfigMaps(t *testing.T, a *agent, s *v1alpha1.Sync) int {
	t.Helper()
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	harness.Must(t, a.Client.List(t.Context(), list, client.InNamespace(s.Namespace), client.MatchingLabels{v1alpha1.SyncLabel: v1alpha1.SyncLabelValue(s.Namespace, s.Name)}))
	return len(list.Items)
}
