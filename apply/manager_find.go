package apply

import (
	"context"
	"errors"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// FindOwned lists, kind by kind, every object in the cluster that carries the label
// and owner annotation opts names: how a lost inventory is rebuilt. It uses
// metadata-only lists (labels filtered by the API server, no object bodies) of
// every kind discovery reports as listable, in its preferred version. Kinds the
// caller may not list are skipped: it cannot have applied objects of them. It
// needs ManagerOptions.Discovery.
func (m *Manager) FindOwned(ctx context.Context, opts FindOptions) ([]v1alpha1.ObjectRef, error) {
	if m.discovery == nil {
		return nil, errors.New("finding owned objects needs discovery (ManagerOptions.Discovery)")
	}
	lists, err := m.discovery.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	var refs []v1alpha1.ObjectRef
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !hasVerb(res.Verbs, "list") || opts.Namespace != "" && !res.Namespaced {
				continue
			}
			found, err := m.findOfKind(ctx, gv.WithKind(res.Kind), opts)
			if err != nil {
				return nil, err
			}
			refs = append(refs, found...)
		}
	}
	return refs, nil
}

func (m *Manager) findOfKind(ctx context.Context, gvk schema.GroupVersionKind, opts FindOptions) ([]v1alpha1.ObjectRef, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	err := retryTransient(ctx, func() error {
		return m.client.List(ctx, list, client.MatchingLabels{opts.Label: opts.Value}, client.InNamespace(opts.Namespace))
	})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
		return nil, nil
	case err != nil:
		return nil, &ObjectError{Object: v1alpha1.NewObjectRef(gvk, "", ""), Op: "list", Err: err}
	}
	var refs []v1alpha1.ObjectRef
	for _, item := range list.Items {
		if item.GetAnnotations()[v1alpha1.OwnedByAnnotation] != opts.Owner {
			continue
		}
		refs = append(refs, v1alpha1.NewObjectRef(gvk, item.Namespace, item.Name))
	}
	return refs, nil
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}
