package sync_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
)

// holdFinalizer keeps a pruned object terminating until the test lets it go, as a
// controller cleaning up after its object would: the API server records when the
// delete came (deletionTimestamp) and keeps the object until then.
const holdFinalizer = "test.tether.dev/hold"

// TestPruneDeletesTheHighestWaveFirst removes objects of waves 1, 0 and -1 in one
// commit and shows, from the API server's deletionTimestamps, that each wave is
// deleted only once the wave above it is gone.
func TestPruneDeletesTheHighestWaveFirst(t *testing.T) {
	wave := func(name, w string) string { return configMap(name, "argocd.argoproj.io/sync-wave", w) }
	e := newPruneEnv(t, map[string]string{
		"apps/late.yaml": wave("late", "1"), "apps/mid.yaml": wave("mid", "0"), "apps/early.yaml": wave("early", "-1"),
		"apps/keep.yaml": configMap("keep"),
	}, func(s *v1alpha1.Sync) { s.Spec.PruneLimit = ptr.To(intstr.FromString("100%")) })
	for _, name := range []string{"late", "mid"} {
		e.hold(t, name, true)
	}
	// The revision has a hook, which runs once: not again at each reconcile that
	// goes on with the prune.
	e.push(t, map[string]string{"apps/late.yaml": "", "apps/mid.yaml": "", "apps/early.yaml": "",
		"apps/hook.yaml": configMap("announce", "argocd.argoproj.io/hook", "PreSync")})

	// Wave 1 is deleted and terminating: wave 0 must not be touched yet.
	e.waitPruneWaiting(t, "prune wave 1: waiting for ConfigMap/"+e.ns+"/late to be deleted before wave 0 is pruned")
	hook := e.configMap(t, "announce")
	if hook == nil {
		t.Fatal("the PreSync hook did not run")
	}
	late := e.configMap(t, "late")
	if late == nil || late.DeletionTimestamp == nil {
		t.Fatalf("late (wave 1) = %v, want it terminating", late)
	}
	if mid := e.configMap(t, "mid"); mid == nil || mid.DeletionTimestamp != nil {
		t.Fatalf("mid (wave 0) = %v, want it untouched while wave 1 terminates", mid)
	}
	if !e.exists(t, "early") {
		t.Fatal("early (wave -1) was deleted while wave 1 terminates")
	}
	if got := e.inventory(t); !slices.Contains(got, "ConfigMap/mid") || !slices.Contains(got, "ConfigMap/late") || !slices.Contains(got, "ConfigMap/early") {
		t.Errorf("inventory = %v, want the waves not yet gone kept", got)
	}

	// Wave 1 goes; then, and only then, wave 0 is deleted (and held), wave -1 waits.
	released := time.Now().Truncate(time.Second)
	e.hold(t, "late", false)
	e.waitPruneWaiting(t, "prune wave 0: waiting for ConfigMap/"+e.ns+"/mid to be deleted before wave -1 is pruned")
	if e.exists(t, "late") {
		t.Fatal("late (wave 1) still exists while wave 0 is pruned")
	}
	mid := e.configMap(t, "mid")
	if mid == nil || mid.DeletionTimestamp == nil {
		t.Fatalf("mid (wave 0) = %v, want it terminating", mid)
	}
	t.Logf("API server: late (wave 1) deleted at %s, let go at %s; mid (wave 0) deleted at %s",
		late.DeletionTimestamp.UTC().Format(time.TimeOnly), released.UTC().Format(time.TimeOnly), mid.DeletionTimestamp.UTC().Format(time.TimeOnly))
	if mid.DeletionTimestamp.Before(late.DeletionTimestamp) || mid.DeletionTimestamp.Time.Before(released) {
		t.Errorf("mid (wave 0) was deleted at %s, before late (wave 1) was gone at %s", mid.DeletionTimestamp, released)
	}
	if !e.exists(t, "early") {
		t.Fatal("early (wave -1) was deleted while wave 0 terminates")
	}

	e.hold(t, "mid", false)
	e.a.WaitFor(t, e.sync, "Ready with every wave pruned", rig.IsReady)
	if e.exists(t, "early") || e.exists(t, "mid") || !e.exists(t, "keep") {
		t.Errorf("after the prune: early %v, mid %v, keep %v; want only keep", e.exists(t, "early"), e.exists(t, "mid"), e.exists(t, "keep"))
	}
	if got := e.inventory(t); !slices.Equal(got, []string{"ConfigMap/keep"}) {
		t.Errorf("inventory = %v, want only keep", got)
	}
	if again := e.configMap(t, "announce"); again == nil || again.UID != hook.UID {
		t.Errorf("the PreSync hook's object is %v, want the one of the run (uid %s): the hook ran again", again, hook.UID)
	}
}

// hold adds or removes the test's finalizer on a ConfigMap.
func (e *pruneEnv) hold(t *testing.T, name string, on bool) {
	t.Helper()
	finalizers := "null"
	if on {
		finalizers = fmt.Sprintf("[%q]", holdFinalizer)
	}
	cm := &corev1.ConfigMap{}
	cm.Namespace, cm.Name = e.ns, name
	patch := fmt.Sprintf(`{"metadata":{"finalizers":%s}}`, finalizers)
	harness.Must(t, e.a.Client.Patch(t.Context(), cm, client.RawPatch(types.MergePatchType, []byte(patch))))
}

// configMap reads a ConfigMap, nil when it does not exist.
func (e *pruneEnv) configMap(t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := e.a.Client.Get(t.Context(), client.ObjectKey{Namespace: e.ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	harness.Must(t, err)
	return cm
}

// waitPruneWaiting waits until the Sync says its prune waits with msg; it fails at
// once when the Sync is Ready instead (every wave pruned together).
func (e *pruneEnv) waitPruneWaiting(t *testing.T, msg string) {
	t.Helper()
	harness.Eventually(t, waitTimeout, "the prune to wait: "+msg, func(ctx context.Context) (bool, error) {
		s := &v1alpha1.Sync{}
		if err := e.a.Client.Get(ctx, client.ObjectKeyFromObject(e.sync), s); err != nil {
			return false, err
		}
		c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
		switch {
		case c != nil && strings.Contains(c.Message, msg):
			return true, nil
		case rig.IsReady(s) && strings.Contains(s.Status.LastAppliedRevision, e.repo.Head(t)):
			t.Fatalf("the Sync is Ready without waiting for the prune: %s", harness.Describe(s))
		}
		return false, fmt.Errorf("status: %s", harness.Describe(s))
	})
}

// TestPruneIsDoneBeforePostSyncHooks: as in Argo CD, what left git is pruned in
// the Sync phase, once the last wave is Healthy, and is gone before the PostSync
// hooks run.
func TestPruneIsDoneBeforePostSyncHooks(t *testing.T) {
	e := newPruneEnv(t, map[string]string{"apps/keep.yaml": configMap("keep"), "apps/old.yaml": configMap("old")},
		func(s *v1alpha1.Sync) { s.Spec.PruneLimit = ptr.To(intstr.FromString("100%")) })
	e.hold(t, "old", true)
	e.push(t, map[string]string{"apps/old.yaml": "", "apps/after.yaml": configMap("after", "argocd.argoproj.io/hook", "PostSync")})

	e.waitPruneWaiting(t, "prune wave 0: waiting for ConfigMap/"+e.ns+"/old to be deleted before the PostSync phase")
	if old := e.configMap(t, "old"); old == nil || old.DeletionTimestamp == nil {
		t.Fatalf("old = %v, want it terminating", old)
	}
	if e.exists(t, "after") {
		t.Fatal("the PostSync hook ran while the pruned object was still there")
	}
	released := time.Now().Truncate(time.Second)
	e.hold(t, "old", false)
	e.a.WaitFor(t, e.sync, "Ready after the PostSync hook", rig.IsReady)
	after := e.configMap(t, "after")
	if after == nil || e.exists(t, "old") {
		t.Fatalf("after %v, old still there %v; want the hook run and old gone", after, e.exists(t, "old"))
	}
	t.Logf("API server: old let go at %s, PostSync hook created at %s", released.UTC().Format(time.TimeOnly), after.CreationTimestamp.UTC().Format(time.TimeOnly))
	if after.CreationTimestamp.Time.Before(released) {
		t.Errorf("the PostSync hook was created at %s, before the pruned object was gone at %s", after.CreationTimestamp, released)
	}
	if got := e.inventory(t); !slices.Equal(got, []string{"ConfigMap/keep"}) {
		t.Errorf("inventory = %v, want keep alone (no hook, nothing pruned left)", got)
	}
}

// TestWithPruneOffARemovalRunsNoHook: what left git stays when prune is off, so a
// revision that only removes objects changes nothing in the cluster and runs no
// hook, as a commit outside the path does not.
func TestWithPruneOffARemovalRunsNoHook(t *testing.T) {
	hook := configMap("announce", "argocd.argoproj.io/hook", "PreSync")
	e := newPruneEnv(t, map[string]string{"apps/keep.yaml": configMap("keep"), "apps/old.yaml": configMap("old"), "apps/hook.yaml": hook},
		func(s *v1alpha1.Sync) { s.Spec.Prune = ptr.To(false) })
	ran := e.configMap(t, "announce")
	if ran == nil {
		t.Fatal("the PreSync hook did not run for the first revision")
	}
	e.push(t, map[string]string{"apps/old.yaml": ""})
	e.a.WaitFor(t, e.sync, "Ready at the revision without old", func(s *v1alpha1.Sync) bool {
		return rig.IsReady(s) && strings.Contains(s.Status.LastAppliedRevision, e.repo.Head(t))
	})
	if !e.exists(t, "old") {
		t.Error("old was pruned with prune off")
	}
	if again := e.configMap(t, "announce"); again == nil || again.UID != ran.UID {
		t.Errorf("the hook's object is %v, want the first run's (uid %s): a revision that changed nothing ran it", again, ran.UID)
	}
}
