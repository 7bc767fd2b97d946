package plan

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func secretWith(data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "db"}, "stringData": data,
	}}
}

func TestRevisionDiff(t *testing.T) {
	cm := func(v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web"}, "data": map[string]any{"greeting": v},
		}}
	}
	t.Run("a changed object shows its lines, labelled by revision", func(t *testing.T) {
		got, err := RevisionDiff(cm("one"), cm("two"), "main@aaaaaaa", "main@bbbbbbb")
		if err != nil || !strings.Contains(got, "--- main@aaaaaaa") || !strings.Contains(got, "-  greeting: one") || !strings.Contains(got, "+  greeting: two") {
			t.Errorf("RevisionDiff = %q, %v; want the changed line, labelled", got, err)
		}
	})
	t.Run("the same object is no diff", func(t *testing.T) {
		if got, err := RevisionDiff(cm("one"), cm("one"), "a", "b"); got != "" || err != nil {
			t.Errorf("RevisionDiff = %q, %v; want none", got, err)
		}
	})
	t.Run("an added object is all added lines", func(t *testing.T) {
		got, err := RevisionDiff(nil, cm("one"), "a", "b")
		if err != nil || !strings.Contains(got, "+kind: ConfigMap") || strings.Contains(got, "\n-") {
			t.Errorf("RevisionDiff = %q, %v; want only added lines", got, err)
		}
	})
	t.Run("a Secret's values are masked on both sides", func(t *testing.T) {
		from := secretWith(map[string]any{"password": "hunter2", "user": "admin"})
		to := secretWith(map[string]any{"password": "s3cret", "user": "admin", "token": "t0ken"})
		got, err := RevisionDiff(from, to, "a", "b")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"hunter2", "s3cret", "admin", "t0ken"} {
			if strings.Contains(got, v) {
				t.Errorf("the diff shows the value %q:\n%s", v, got)
			}
		}
		if !strings.Contains(got, SecretMaskChanged) || !strings.Contains(got, SecretMaskAdded) {
			t.Errorf("the diff does not say which values changed and were added:\n%s", got)
		}
		if from.Object["stringData"].(map[string]any)["password"] != "hunter2" {
			t.Error("RevisionDiff masked the caller's object, not a copy")
		}
	})
	t.Run("a Secret removed is masked too", func(t *testing.T) {
		got, err := RevisionDiff(secretWith(map[string]any{"password": "hunter2"}), nil, "a", "b")
		if err != nil || strings.Contains(got, "hunter2") || !strings.Contains(got, SecretMaskRemoved) {
			t.Errorf("RevisionDiff = %q, %v; want the value masked as removed", got, err)
		}
	})
}
