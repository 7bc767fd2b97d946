package render

import (
	"encoding/base64"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestRequireEncryptionDecidesOnTheRenderedSecrets(t *testing.T) {
	secret := func(section, value string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": "db", "namespace": "web"},
			section:    map[string]any{"password": value},
		}}
	}
	decrypted := map[string]bool{"s3cret-from-sops": true}
	for _, c := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string // in the error; "" for none
	}{
		{"a decrypted value in data passes", secret("data", base64.StdEncoding.EncodeToString([]byte("s3cret-from-sops"))), ""},
		{"a decrypted value in stringData passes", secret("stringData", "s3cret-from-sops"), ""},
		{"an empty value passes", secret("stringData", ""), ""},
		{"a value no SOPS file gave is refused", secret("stringData", "added-by-a-patch"), "Secret web/db: stringData.password"},
		{"the same in data is refused", secret("data", base64.StdEncoding.EncodeToString([]byte("plain"))), "Secret web/db: data.password"},
		{"data that is no base64 is refused", secret("data", "%%%"), "data.password"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckRenderedSecrets([]*unstructured.Unstructured{c.obj}, decrypted, "app")
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v; want one naming %q", err, c.want)
			}
		})
	}
}
