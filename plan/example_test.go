package plan_test

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply/contract"
	"tether.dev/tether/plan"
)

// A Sync and the objects its revision renders to become the options of one apply:
// the objects carry the Sync's marks, and the options its namespace and ignore
// rules. The agent and `tether diff` both go through ForApply.
func ExampleForApply() {
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Namespace: "tether-system", Name: "web"},
		Spec: v1alpha1.SyncSpec{
			Destination:       v1alpha1.DestinationSpec{Namespace: "web"},
			IgnoreDifferences: []v1alpha1.IgnoreRule{{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}},
		},
	}
	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("settings")

	opts := plan.ForApply(s, []*unstructured.Unstructured{cm}, contract.DefaultOptions(), nil)
	fmt.Println(opts.DefaultNamespace, len(opts.Ignore))
	fmt.Println(cm.GetAnnotations()[v1alpha1.OwnedByAnnotation], cm.GetLabels()[v1alpha1.SyncLabel])
	// Output:
	// web 1
	// tether-system/web tether-system.web
}

// What left git is what a sync would prune, unless a guard holds it back.
func ExamplePruneHeld() {
	s := &v1alpha1.Sync{}
	inventory := []v1alpha1.ObjectRef{
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "a"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "b"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "web", Name: "c"},
	}
	applied := &contract.ChangeSet{Changes: []contract.Change{{Object: inventory[0]}}}
	stale := plan.LeftGit(inventory, applied)
	fmt.Println(len(stale), "left git:", plan.PruneHeld(s, stale, len(inventory), false))
	// Output:
	// 2 left git: 2 of 3 objects left git, more than the prune limit of 50% (1); nothing was pruned. If this is intended, set spec.pruneLimit (for example "100%") and it will proceed
}
