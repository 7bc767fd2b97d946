package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/api/v1alpha1"
)

func TestGetTable(t *testing.T) {
	s := treeFixture()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	s.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Minute))
	s.Generation = 2
	s.Spec.Suspend = true
	s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, ObservedGeneration: 2, Reason: "Progressing", Message: "Waiting\nfor it"}}
	var out bytes.Buffer
	if err := printSyncTable(&out, []v1alpha1.Sync{*s}, true, now); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"NAMESPACE", "NAME", "REVISION", "SYNC", "HEALTH", "READY", "SUSPENDED", "PINNED", "RUN", "AGE", "MESSAGE"},
		{"tether-system", "web", "main@4f2c1a2", "Synced", "Degraded", "False", "true", "-", "-", "90m", "Waiting", "…"},
	}
	var got [][]string
	for _, l := range lines {
		got = append(got, strings.Fields(l))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s\n%s", diff, out.String())
	}
}

func TestGetShowsWhereTheRunStands(t *testing.T) {
	tests := []struct {
		name string
		run  *v1alpha1.RunStatus
		want string
	}{
		{name: "no run", want: "-"},
		{name: "a run in PreSync", run: &v1alpha1.RunStatus{Revision: "main@sha1:1", Phase: "PreSync", Wave: -1, State: v1alpha1.RunRunning}, want: "PreSync/-1"},
		{name: "a run at a wave of the Sync phase", run: &v1alpha1.RunStatus{Revision: "main@sha1:1", Phase: "Sync", Wave: 2, State: v1alpha1.RunRunning}, want: "Sync/2"},
		{name: "a run that failed", run: &v1alpha1.RunStatus{Revision: "main@sha1:1", Phase: "PostSync", State: v1alpha1.RunFailed}, want: "PostSync/0 failed"},
		{name: "a run that succeeded: nothing under way", run: &v1alpha1.RunStatus{Revision: "main@sha1:1", Phase: "PostSync", State: v1alpha1.RunSucceeded}, want: "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := treeFixture()
			s.Status.Run = tt.run
			var out bytes.Buffer
			if err := printSyncTable(&out, []v1alpha1.Sync{*s}, false, time.Now()); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			col := strings.Index(lines[0], "RUN")
			if got := strings.TrimSpace(lines[1][col:strings.Index(lines[0], "AGE")]); got != tt.want {
				t.Errorf("RUN = %q, want %q:\n%s", got, tt.want, out.String())
			}
		})
	}
}

func TestGetGroupsTheSyncsOfASyncSet(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	sync := func(name, set string) v1alpha1.Sync {
		s := treeFixture()
		s.Name, s.CreationTimestamp = name, metav1.NewTime(now)
		if set != "" {
			s.Labels = map[string]string{v1alpha1.SyncSetLabel: set}
		}
		return *s
	}
	var out bytes.Buffer
	if err := printSyncTable(&out, []v1alpha1.Sync{sync("web-prod", "web"), sync("hand", ""), sync("api-prod", "api"), sync("web-dev", "web")}, false, now); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, strings.Fields(l)[:2])
	}
	want := [][]string{{"SYNCSET", "NAME"}, {"-", "hand"}, {"api", "api-prod"}, {"web", "web-dev"}, {"web", "web-prod"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("table (-want +got):\n%s\n%s", diff, out.String())
	}
}

func TestGetNamesTheClusterWhenASyncAppliesToAnother(t *testing.T) {
	home, remote, registered := treeFixture(), treeFixture(), treeFixture()
	remote.Name, registered.Name = "web-eu", "web-us"
	remote.Spec.Destination.KubeConfig = &v1alpha1.KubeConfigReference{SecretRef: v1alpha1.SecretKeyReference{Name: "prod-eu"}}
	registered.Spec.Destination.Cluster = "prod-us"
	var out bytes.Buffer
	if err := printSyncTable(&out, []v1alpha1.Sync{*home, *remote, *registered}, false, time.Now()); err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		got = append(got, strings.Fields(l)[:2])
	}
	want := [][]string{{"NAME", "CLUSTER"}, {"web", "in-cluster"}, {"web-eu", "secret/prod-eu"}, {"web-us", "prod-us"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NAME and CLUSTER columns (-want +got):\n%s\n%s", diff, out.String())
	}
}

func TestGetSaysWhoSignedWhenASyncVerifies(t *testing.T) {
	plain, signed, refused := treeFixture(), treeFixture(), treeFixture()
	signed.Name, refused.Name = "web-signed", "web-new"
	for _, s := range []*v1alpha1.Sync{signed, refused} {
		s.Spec.Source.Verify = &v1alpha1.SourceVerify{SecretRef: v1alpha1.LocalObjectReference{Name: "trusted-keys"}}
	}
	signed.Status.LastAppliedSigner = "Alice Liddell <alice@example.com> (openpgp 0A1B2C3D4E5F60718293A4B5C6D7E8F901234567)"
	refused.Status.LastAppliedSigner = ""
	columns := func(syncs ...v1alpha1.Sync) []string {
		var out bytes.Buffer
		if err := printSyncTable(&out, syncs, false, time.Now()); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		at := strings.Index(lines[0], "SIGNED BY")
		if at < 0 {
			return nil
		}
		end := at + strings.Index(lines[0][at:], "SYNC")
		var got []string
		for _, l := range lines[1:] {
			got = append(got, strings.TrimSpace(l[at:end]))
		}
		return got
	}
	if got := columns(*plain); got != nil {
		t.Errorf("a SIGNED BY column without any Sync that verifies: %q", got)
	}
	// Sorted by name: web, web-new, web-signed; the column gives the identity alone.
	want := []string{"-", "-", "Alice Liddell <alice@example.com>"}
	if diff := cmp.Diff(want, columns(*plain, *refused, *signed)); diff != "" {
		t.Errorf("SIGNED BY (-want +got):\n%s", diff)
	}
	// An OCI artifact verified with cosign keys is shown as well.
	artifact := treeFixture()
	artifact.Name = "web-oci"
	artifact.Spec.Source = v1alpha1.SourceSpec{OCI: &v1alpha1.OCISource{URL: "oci://registry.example.com/org/web",
		Verify: &v1alpha1.OCIVerify{SecretRef: v1alpha1.LocalObjectReference{Name: "cosign-keys"}}}}
	artifact.Status.LastAppliedSigner = "cosign key ci.pub (SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU)"
	if diff := cmp.Diff([]string{"-", "cosign key ci.pub"}, columns(*plain, *artifact)); diff != "" {
		t.Errorf("SIGNED BY of an artifact verified with cosign (-want +got):\n%s", diff)
	}
}
