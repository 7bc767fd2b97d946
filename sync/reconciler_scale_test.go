package sync_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
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
	repo := gitserver.NewLocalRepo(t, "many")
	files := map[string]string{}
	for i := 0; i < n; i++ {
		files[fmt.Sprintf("apps/cm-%05d.yaml", i)] = configMap(fmt.Sprintf("app-%05d-config", i))
	}
	first := repo.Commit(t, files, fmt.Sprintf("%d config maps", n))
	s := a.newSync(t, ns, repo.FileURL())

	t.Run(fmt.Sprintf("%d objects converge with a status under 768 KiB", n), func(t *testing.T) {
		got := a.waitApplied(t, s, first)
		if len(got.Status.Inventory) != n || got.Status.Summary == nil || got.Status.Summary.Total != int32(n) {
			t.Errorf("inventory %d, summary %+v; want %d objects", len(got.Status.Inventory), got.Status.Summary, n)
		}
		if size := statusSize(t, got); size > statusLimit {
			t.Errorf("status takes %d KiB, more than %d KiB", size>>10, statusLimit>>10)
		} else {
			t.Logf("status of %d objects: %d KiB", n, size>>10)
		}
	})

	t.Run("a tenth of them is pruned", func(t *testing.T) {
		removed := map[string]string{}
		for i := 0; i < n/10; i++ {
			removed[fmt.Sprintf("apps/cm-%05d.yaml", i)] = ""
		}
		second := repo.Commit(t, removed, "remove a tenth")
		a.src.Refresh(repo.FileURL())
		a.reconcile(t, s)
		got := a.waitApplied(t, s, second)
		if len(got.Status.Inventory) != n-n/10 {
			t.Errorf("inventory holds %d objects, want %d", len(got.Status.Inventory), n-n/10)
		}
	})

	t.Run("deleting the Sync deletes the rest", func(t *testing.T) {
		must(t, a.c.Delete(t.Context(), s))
		eventually(t, "the Sync is gone", func(ctx context.Context) (bool, error) {
			err := a.c.Get(ctx, client.ObjectKeyFromObject(s), &v1alpha1.Sync{})
			return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
		})
	})
}

func statusSize(t *testing.T, s *v1alpha1.Sync) int {
	t.Helper()
	b, err := json.Marshal(s.Status)
	must(t, err)
	return len(b)
}
