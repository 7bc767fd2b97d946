package main

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// tether reconcile, suspend and resume each record an Event on the Sync naming
// the user as the API server knows them (the test cluster's admin), the action
// and the tool, as the UI does.
func TestEachActionIsRecordedInAnEventNamingTheUser(t *testing.T) {
	e := newDiffEnv(t)
	c := e.syncClient(t)
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"}}
	s.Spec.Source.URL = "https://git.example.com/org/deploy.git"
	s.Spec.Destination.Namespace = e.ns
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	user := whoAmI(t.Context(), c)
	if user == "" {
		t.Fatal("the API server says nothing of who the test's admin is")
	}
	for _, action := range []string{"reconcile", "suspend", "resume"} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), []string{action, "web", "-n", e.ns, "--kubeconfig", e.kubeconfig}, &out, &errOut); err != nil {
			t.Fatalf("tether %s: %v\n%s", action, err, errOut.String())
		}
		if strings.Contains(out.String(), "not recorded") {
			t.Errorf("tether %s: %s", action, out.String())
		}
	}
	events := &corev1.EventList{}
	if err := c.List(t.Context(), events, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range events.Items {
		if ev.Reason == v1alpha1.ReasonRequestedByUser && ev.InvolvedObject.Name == "web" && ev.InvolvedObject.Kind == "Sync" {
			got = append(got, ev.Message)
		}
	}
	for _, action := range []string{"reconcile", "suspend", "resume"} {
		want := user + " asked to " + action + " the Sync, through tether CLI"
		found := false
		for _, m := range got {
			found = found || m == want
		}
		if !found {
			t.Errorf("no Event %q among %q", want, got)
		}
	}
}

// tether rollback records the commit it pinned the Sync to, and --undo the
// pin's removal, in Events naming the user (plan.PinEvent, as the UI does).
func TestARollbackIsRecordedInAnEventNamingTheUser(t *testing.T) {
	e := newDiffEnv(t)
	c := e.syncClient(t)
	s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "web"}}
	s.Spec.Source.URL, s.Spec.Destination.Namespace = "https://git.example.com/org/deploy.git", e.ns
	if err := c.Create(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	older := strings.Repeat("a", 40)
	s.Status.History = []v1alpha1.HistoryEntry{
		{Revision: "main@sha1:" + strings.Repeat("b", 40), AppliedAt: metav1.Now(), Health: v1alpha1.HealthDegraded},
		{Revision: "main@sha1:" + older, AppliedAt: metav1.Now(), Health: v1alpha1.HealthHealthy},
	}
	if err := c.Status().Update(t.Context(), s); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--to", older[:7]}, {"--undo"}} {
		var out, errOut bytes.Buffer
		if err := run(t.Context(), append([]string{"rollback", "web", "-n", e.ns, "--wait=false", "--kubeconfig", e.kubeconfig}, args...), &out, &errOut); err != nil {
			t.Fatalf("tether rollback %v: %v\n%s", args, err, errOut.String())
		}
		if strings.Contains(out.String(), "not recorded") {
			t.Errorf("tether rollback %v: %s", args, out.String())
		}
	}
	events := &corev1.EventList{}
	if err := c.List(t.Context(), events, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	user := whoAmI(t.Context(), c)
	want := map[string]bool{
		user + " asked to roll back the Sync to " + older + ", through tether CLI": true,
		user + " asked to remove the pin of the Sync, through tether CLI":          true,
	}
	for _, ev := range events.Items {
		if ev.Reason == v1alpha1.ReasonRequestedByUser && ev.InvolvedObject.Name == "web" {
			delete(want, ev.Message)
		}
	}
	for m := range want {
		t.Errorf("no Event %q", m)
	}
}
