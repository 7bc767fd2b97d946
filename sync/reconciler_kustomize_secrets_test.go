package sync

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestAnOverlayAddsNoSecretValueUnderRequireEncryption: under
// requireEncryption, the objects spec.kustomize returns may hold only Secret
// values the render gave (decrypted ones); a value a component or patch adds
// is refused, naming the Secret and key and never the value.
func TestAnOverlayAddsNoSecretValueUnderRequireEncryption(t *testing.T) {
	secret := func(name string, data, stringData map[string]any) *unstructured.Unstructured {
		o := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": "web"}}
		if data != nil {
			o["data"] = data
		}
		if stringData != nil {
			o["stringData"] = stringData
		}
		return &unstructured.Unstructured{Object: o}
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "plain"}}}
	given := secretValues([]*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk"}, nil), cm})
	if given["plain"] {
		t.Fatal("a ConfigMap's value counted as a Secret's")
	}

	for _, tc := range []struct {
		name string
		out  []*unstructured.Unstructured
		bad  string // the key named, "" when allowed
	}{
		{"the Secret as rendered, renamed", []*unstructured.Unstructured{secret("a-db", map[string]any{"password": "ZGVjcnlwdGVk"}, nil), cm}, ""},
		{"a decrypted value under another key", []*unstructured.Unstructured{secret("db", map[string]any{"pw": "ZGVjcnlwdGVk"}, nil)}, ""},
		{"a patch adding a key", []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk", "token": "c2VjcmV0LXRva2Vu"}, nil)}, "data.token"},
		{"a patch adding stringData", []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk"}, map[string]any{"extra": "secret-token"})}, "stringData.extra"},
		{"a component adding a Secret", []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk"}, nil), secret("new", map[string]any{"k": "c2VjcmV0LXRva2Vu"}, nil)}, "data.k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := onlyGivenSecretValues("apps", given, tc.out)
			switch {
			case tc.bad == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), "key "+tc.bad) || !strings.Contains(err.Error(), "apps")):
				t.Errorf("error %v; want it to name the path and key %s", err, tc.bad)
			case err != nil && (strings.Contains(err.Error(), "secret-token") || strings.Contains(err.Error(), "c2VjcmV0LXRva2Vu")):
				t.Errorf("the error quotes the value: %v", err)
			}
		})
	}
}
