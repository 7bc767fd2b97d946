package main

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
)

// tether reconcile, suspend and resume each record an Event on the Sync naming
// the user as the API server knows them (the test cluster's admin), the action
// and the tool, as the UI does.
func TestEachActionIsRecordedInAnEventNamingTheUser(t *testing.T) {
	e := newDiffEnv(t)
	controlplane.InstallCRDs(t, controlplane.Shared(t).Config(), "../../deploy/base/crd")
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(controlplane.Shared(t).Config(), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
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
