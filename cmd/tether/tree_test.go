package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

// treeFixture is a Sync whose status details one Deployment that is not healthy;
// the rest of its inventory is Synced and Healthy, as status.summary counts it.
func treeFixture() *v1alpha1.Sync {
	return &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"},
		Status: v1alpha1.SyncStatus{
			LastAppliedRevision: "main@sha1:4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b",
			Sync:                v1alpha1.SyncStatusSynced,
			Health:              v1alpha1.HealthDegraded,
			Objects: []v1alpha1.InventoryGroup{
				{Version: "v1", Kind: "Namespace", Names: []string{"web"}},
				{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Names: []string{"api"}},
				{Version: "v1", Kind: "Service", Namespace: "web", Names: []string{"api"}},
				{Version: "v1", Kind: "ConfigMap", Namespace: "web", Names: []string{"web-config"}},
			},
			Resources: []v1alpha1.ResourceStatus{{
				ObjectRef: v1alpha1.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: "api"},
				Sync:      v1alpha1.SyncStatusSynced, Health: v1alpha1.HealthDegraded, Message: "ProgressDeadlineExceeded\nsecond line",
			}},
		},
	}
}

func TestTreeGroupsTheInventoryByNamespaceAndKind(t *testing.T) {
	var out bytes.Buffer
	p := &treePrinter{w: &out}
	p.print(treeFixture())
	want := `Sync/tether-system/web  main@4f2c1a2  Synced  Degraded
├── (cluster-scoped)
│   └── Namespace
│       └── web  Synced  Healthy
└── web
    ├── ConfigMap
    │   └── web-config  Synced  Healthy
    ├── Deployment.apps
    │   └── api  Synced  Degraded  ProgressDeadlineExceeded …
    └── Service
        └── api  Synced  Healthy
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

func TestTreeOfASuspendedSyncComparesNothing(t *testing.T) {
	s := treeFixture()
	s.Spec.Suspend = true
	var out bytes.Buffer
	p := &treePrinter{w: &out}
	p.print(s)
	want := `Sync/tether-system/web  main@4f2c1a2  Synced  Degraded  Suspended: not compared with git until resumed
├── (cluster-scoped)
│   └── Namespace
│       └── web  Unknown  Healthy
└── web
    ├── ConfigMap
    │   └── web-config  Unknown  Healthy
    ├── Deployment.apps
    │   └── api  Unknown  Degraded  ProgressDeadlineExceeded …
    └── Service
        └── api  Unknown  Healthy
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

func TestTreeColoursWhatIsNotWell(t *testing.T) {
	var out bytes.Buffer
	p := &treePrinter{w: &out, color: true}
	p.print(treeFixture())
	for _, want := range []string{"api  " + green + "Synced" + reset + "  " + red + "Degraded" + reset, "web-config  " + green + "Synced" + reset + "  " + green + "Healthy" + reset} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tree lacks %q:\n%s", want, out.String())
		}
	}
	if useColor("auto", &out) {
		t.Error("--color auto colours a buffer, which is no terminal")
	}
}

func TestTreeOfASyncSetShowsItsSyncsAndWhatHoldsThem(t *testing.T) {
	const first, second = "4f2c1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b", "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807"
	ss := &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "web"},
		Status: v1alpha1.SyncSetStatus{Syncs: 3, ReadySyncs: 2,
			Rollout:    &v1alpha1.RolloutStatus{Revision: second, Step: 1, Steps: 2},
			Conditions: []metav1.Condition{{Type: v1alpha1.RolloutCondition, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRolloutRolledBack}},
		},
	}
	member := func(name, applied string, health v1alpha1.HealthStatusCode, annotations map[string]string, suspend bool) v1alpha1.Sync {
		s := v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: name, Annotations: annotations}}
		s.Spec.Suspend = suspend
		s.Status.LastAppliedRevision, s.Status.Sync, s.Status.Health = applied, v1alpha1.SyncStatusSynced, health
		return s
	}
	syncs := []v1alpha1.Sync{
		member("web-prod", "main@sha1:"+first, v1alpha1.HealthHealthy, map[string]string{v1alpha1.PinRevisionAnnotation: first}, false),
		member("web-staging", "main@sha1:"+first, v1alpha1.HealthHealthy,
			map[string]string{v1alpha1.PinRevisionAnnotation: first, v1alpha1.RolledBackAnnotation: second}, false),
		member("web-new", "", "", nil, true),
	}
	var out bytes.Buffer
	p := &treePrinter{w: &out}
	p.printSyncSet(ss, syncs)
	want := `SyncSet/platform/web  3 Syncs, 2 Ready
rollout of 9e8d7c6: step 1 of 2  RolloutRolledBack
├── Sync/web-new  -  Synced  -  (Suspended)
├── Sync/web-prod  main@4f2c1a2  Synced  Healthy  (pinned to 4f2c1a2)
└── Sync/web-staging  main@4f2c1a2  Synced  Healthy  (pinned to 4f2c1a2, rolled back from 9e8d7c6)
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
}

func TestTreeOfAGeneratedSyncNamesItsSyncSet(t *testing.T) {
	s := treeFixture()
	s.Labels = map[string]string{v1alpha1.SyncSetLabel: "services"}
	var out bytes.Buffer
	p := &treePrinter{w: &out}
	p.print(s)
	if head, _, _ := strings.Cut(out.String(), "\n"); head != "Sync/tether-system/web  main@4f2c1a2  Synced  Degraded  (SyncSet services)" {
		t.Errorf("head %q; want the SyncSet named", head)
	}
}

func TestTreeOfARemoteSyncNamesItsCluster(t *testing.T) {
	s := treeFixture()
	s.Spec.Destination.Cluster = "prod-eu"
	var out bytes.Buffer
	p := &treePrinter{w: &out}
	p.print(s)
	if head, _, _ := strings.Cut(out.String(), "\n"); head != "Sync/tether-system/web  main@4f2c1a2  Synced  Degraded  in cluster prod-eu" {
		t.Errorf("head %q; want the cluster named", head)
	}
}
