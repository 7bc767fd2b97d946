package ui

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
)

func TestTheObjectPanelMasksASecretAndHidesManagedFields(t *testing.T) {
	const password = "hunter2-0815"
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{
			"name": "db", "namespace": "shop",
			"annotations":   map[string]any{plan.LastAppliedAnnotation: `{"stringData":{"password":"` + password + `"}}`, "team": "shop"},
			"managedFields": []any{map[string]any{"manager": "tether", "operation": "Apply"}},
		},
		"data":       map[string]any{"password": base64.StdEncoding.EncodeToString([]byte(password))},
		"stringData": map[string]any{"user": password},
	}}
	got, err := manifestOf(secret, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{password, base64.StdEncoding.EncodeToString([]byte(password)), "managedFields", "manager: tether"} {
		if strings.Contains(got, leak) {
			t.Errorf("the manifest holds %q:\n%s", leak, got)
		}
	}
	for _, want := range []string{"password: '" + plan.SecretMask + "'", "user: '" + plan.SecretMask + "'", "team: shop"} {
		if !strings.Contains(got, want) {
			t.Errorf("the manifest lacks %q:\n%s", want, got)
		}
	}
	if secret.Object["data"].(map[string]any)["password"] == plan.SecretMask {
		t.Error("masking changed the object read, not a copy")
	}
	p, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	var page bytes.Buffer
	view := objectView{View: "live", Ref: v1alpha1.ObjectRef{Version: "v1", Kind: "Secret", Namespace: "shop", Name: "db"}, Manifest: got, ManagedFieldsURL: "/syncs/shop/web/object?key=x&managedFields=show"}
	if err := p.byName["object"].ExecuteTemplate(&page, "layout", view); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "password: &#39;***&#39;") || strings.Contains(page.String(), password) {
		t.Errorf("the page does not show the masked manifest alone:\n%s", page.String())
	}
	withFields, err := manifestOf(secret, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(withFields, "manager: tether") || strings.Contains(withFields, password) {
		t.Errorf("managedFields shown: want them, and still no value:\n%s", withFields)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web"}, "data": map[string]any{"greeting": "hello"}}}
	if got, _ := manifestOf(cm, false); !strings.Contains(got, "greeting: hello") {
		t.Errorf("a ConfigMap's data is shown as it is:\n%s", got)
	}
}

func TestTheObjectPanelShowsOnlyTheSyncsObjects(t *testing.T) {
	sy := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}}
	sy.Status.Objects = []v1alpha1.InventoryGroup{
		{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "shop", Names: []string{"web"}},
		{Version: "v1", Kind: "ConfigMap", Namespace: "config", Names: []string{"settings"}},
	}
	for key, want := range map[string]bool{
		"apps/Deployment/shop/web":       true,  // in the inventory
		"/Pod/shop/web-5d8f-x7k2p":       true,  // a Pod in a namespace of its workloads
		"apps/ReplicaSet/shop/web-5d8f":  true,  // a ReplicaSet there
		"/Secret/shop/db":                false, // not its, not owned
		"/Pod/config/other":              false, // no workload of its in config
		"apps/Deployment/shop/other":     false,
		"/Pod/shop/":                     false,
		"/Pod/shop/web/extra":            false,
		"apps/ReplicaSet/kube-system/rs": false,
	} {
		if _, got := objectOf(sy, key); got != want {
			t.Errorf("objectOf(%q) found %v, want %v", key, got, want)
		}
	}
}
