package apply

import (
	"bytes"
	"context"
	"fmt"
	gosync "sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Autoscaled replicas: spec.replicas of a workload that an autoscaler (an HPA, or
// another manager of the field) scales is left to it.

// replicasPath is spec.replicas, which autoscalers own.
var replicasPath = fieldpath.MakePathOrDie("spec", "replicas")

// scaleTargets knows, per namespace, which objects a HorizontalPodAutoscaler
// targets: the ones in the cluster (listed once per ApplyAll, and only when an
// object declaring spec.replicas needs it) and the ones being applied.
type scaleTargets struct {
	c       client.Client
	mu      gosync.Mutex
	byNS    map[string]map[string]bool // namespace → "Kind/name"
	desired map[string]bool            // "namespace/Kind/name"
}

func newScaleTargets(c client.Client, objs []*unstructured.Unstructured, defaultNamespace string) *scaleTargets {
	t := &scaleTargets{c: c, byNS: map[string]map[string]bool{}, desired: map[string]bool{}}
	for _, o := range objs {
		if o.GroupVersionKind().Group != "autoscaling" || o.GetKind() != "HorizontalPodAutoscaler" {
			continue
		}
		ns := o.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(o.Object, "spec", "scaleTargetRef", "name")
		t.desired[ns+"/"+kind+"/"+name] = true
	}
	return t
}

// targeted reports whether an HPA targets obj.
func (t *scaleTargets) targeted(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	ns, key := obj.GetNamespace(), obj.GetKind()+"/"+obj.GetName()
	if t.desired[ns+"/"+key] {
		return true, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if set, ok := t.byNS[ns]; ok {
		return set[key], nil
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("autoscaling/v2")
	list.SetKind("HorizontalPodAutoscalerList")
	set := map[string]bool{}
	err := t.c.List(ctx, list, client.InNamespace(ns))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) && !meta.IsNoMatchError(err) {
		return false, fmt.Errorf("listing HorizontalPodAutoscalers: %w", err)
	}
	for _, hpa := range list.Items {
		kind, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "kind")
		name, _, _ := unstructured.NestedString(hpa.Object, "spec", "scaleTargetRef", "name")
		set[kind+"/"+name] = true
	}
	t.byNS[ns] = set
	return set[key], nil
}

// scaledByOther reports whether another manager set spec.replicas of live through
// the scale subresource, the way the HPA controller (and kubectl scale) does.
func scaledByOther(live *unstructured.Unstructured, self string) bool {
	for _, e := range live.GetManagedFields() {
		if e.Subresource != "scale" || e.Manager == self || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) == nil && set.Has(replicasPath) {
			return true
		}
	}
	return false
}

// autoscaled reports whether spec.replicas of obj is left to an autoscaler.
func (t *scaleTargets) autoscaled(ctx context.Context, obj, live *unstructured.Unstructured, opts Options) (bool, error) {
	if !opts.IgnoreScaledReplicas {
		return false, nil
	}
	if _, declared, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "replicas"); !declared {
		return false, nil
	}
	if scaledByOther(live, opts.FieldManager) {
		return true, nil
	}
	return t.targeted(ctx, obj)
}
