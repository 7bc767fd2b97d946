package source

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
)

// TestAnOverlayAddsNoSecretValueUnderRequireEncryption: the objects
// spec.kustomize returns may hold only Secret values the render gave (decrypted
// ones); a value a component or patch adds is refused as UnencryptedSecret,
// naming the Secret and field and never the value.
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
	// "ZGVjcnlwdGVk" is "decrypted"; "c2VjcmV0LXRva2Vu" is "secret-token".
	before := []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk"}, nil), cm}

	for _, tc := range []struct {
		name  string
		after []*unstructured.Unstructured
		bad   string // the field named, "" when allowed
	}{
		{"the Secret as rendered, renamed", []*unstructured.Unstructured{secret("a-db", map[string]any{"password": "ZGVjcnlwdGVk"}, nil), cm}, ""},
		{"a decrypted value under another key, as stringData", []*unstructured.Unstructured{secret("db", nil, map[string]any{"pw": "decrypted"})}, ""},
		{"a ConfigMap's value moved into a Secret", []*unstructured.Unstructured{secret("db", nil, map[string]any{"k": "plain"})}, "stringData.k"},
		{"a patch adding a key", []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk", "token": "c2VjcmV0LXRva2Vu"}, nil)}, "data.token"},
		{"a patch adding stringData", []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk"}, map[string]any{"extra": "secret-token"})}, "stringData.extra"},
		{"a component adding a Secret", []*unstructured.Unstructured{secret("db", map[string]any{"password": "ZGVjcnlwdGVk"}, nil), secret("new", map[string]any{"k": "c2VjcmV0LXRva2Vu"}, nil)}, "data.k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckOverlaySecrets(before, tc.after, "apps")
			var re *RenderError
			switch {
			case tc.bad == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.bad != "" && (!errors.As(err, &re) || re.Reason != v1alpha1.ReasonUnencryptedSecret || !strings.Contains(err.Error(), tc.bad) || !strings.Contains(err.Error(), "spec.kustomize")):
				t.Errorf("error %v; want UnencryptedSecret naming spec.kustomize and %s", err, tc.bad)
			case err != nil && (strings.Contains(err.Error(), "secret-token") || strings.Contains(err.Error(), "c2VjcmV0LXRva2Vu")):
				t.Errorf("the error quotes the value: %v", err)
			}
		})
	}
}
