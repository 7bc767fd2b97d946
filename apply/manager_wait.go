package apply

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// crdTimeout bounds the wait for a CRD written in one stage to be served before
// the next stage, which may hold its custom resources, is mapped.
const crdTimeout = 30 * time.Second

// waitForCRDs waits until every CRD the stage created or configured is Established
// and each of its served versions maps, so that custom resources of it in a later
// stage of the same call can be applied. A mapper that caches discovery is reset
// while waiting, or it would keep answering "no match" for the new kinds.
func (m *Manager) waitForCRDs(ctx context.Context, stage []*step) {
	for _, st := range stage {
		written := st.change.Action == ActionCreated || st.change.Action == ActionConfigured
		if !isCRD(st.obj) || !written {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdTimeout, true, func(ctx context.Context) (bool, error) {
			return m.crdServed(ctx, st.obj)
		})
		if err != nil {
			st.fail("wait", fmt.Errorf("CRD not established: %w", err))
		}
	}
}

// crdServed reports whether crd is Established and all its served versions map.
func (m *Manager) crdServed(ctx context.Context, crd *unstructured.Unstructured) (bool, error) {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(crd.GroupVersionKind())
	if err := m.client.Get(ctx, client.ObjectKeyFromObject(crd), live); err != nil {
		return false, err
	}
	conditions, _, _ := unstructured.NestedSlice(live.Object, "status", "conditions")
	established := false
	for _, c := range conditions {
		cond, _ := c.(map[string]any)
		if cond["type"] == "Established" && cond["status"] == "True" {
			established = true
		}
	}
	if !established {
		return false, nil
	}
	if r, ok := m.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	m.scopes.forget()
	group, _, _ := unstructured.NestedString(live.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(live.Object, "spec", "names", "kind")
	versions, _, _ := unstructured.NestedSlice(live.Object, "spec", "versions")
	for _, v := range versions {
		version, _ := v.(map[string]any)
		name, _ := version["name"].(string)
		if served, _ := version["served"].(bool); !served {
			continue
		}
		_, err := m.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, name)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
	return true, nil
}
