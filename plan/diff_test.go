package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMaskSecret(t *testing.T) {
	live := &unstructured.Unstructured{Object: map[string]any{
		"data": map[string]any{"same": "c2FtZQ==", "changed": "b2xk", "removed": "Z29uZQ=="},
		"metadata": map[string]any{"annotations": map[string]any{
			LastAppliedAnnotation: `{"data":{"changed":"b2xk"}}`, "team": "web",
		}},
	}}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"data": map[string]any{"same": "c2FtZQ==", "changed": "bmV3", "added": "bmV3"},
		"metadata": map[string]any{"annotations": map[string]any{
			LastAppliedAnnotation: `{"data":{"changed":"bmV3"}}`, "team": "web",
		}},
	}}
	MaskSecret(live, desired)

	wantLive := map[string]any{
		"data": map[string]any{"same": "***", "changed": "***", "removed": "*** (removed)"},
		"metadata": map[string]any{"annotations": map[string]any{
			LastAppliedAnnotation: "***", "team": "web",
		}},
	}
	wantDesired := map[string]any{
		"data": map[string]any{"same": "***", "changed": "*** (changed)", "added": "*** (added)"},
		"metadata": map[string]any{"annotations": map[string]any{
			LastAppliedAnnotation: "*** (changed)", "team": "web",
		}},
	}
	if diff := cmp.Diff(wantLive, live.Object); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantDesired, desired.Object); diff != "" {
		t.Errorf("desired (-want +got):\n%s", diff)
	}

	created := &unstructured.Unstructured{Object: map[string]any{"stringData": map[string]any{"token": "abc"}}}
	MaskSecret(nil, created)
	if diff := cmp.Diff(map[string]any{"stringData": map[string]any{"token": "*** (added)"}}, created.Object); diff != "" {
		t.Errorf("a Secret not in the cluster yet (-want +got):\n%s", diff)
	}
}
