package sync

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// Capabilities reads what a Helm chart sees of the cluster (.Capabilities).
type Capabilities func(ctx context.Context) (source.Capabilities, error)

// helmFor says how obj's path renders if it holds a Helm chart, its valuesFrom
// read as its identity (id.Secrets reads straight from the API server, so no
// ConfigMap or Secret is cached).
func (r *Reconciler) helmFor(ctx context.Context, obj *v1alpha1.Sync, id Identity) (source.Helm, error) {
	return HelmFor(ctx, id.Secrets, obj, r.capabilitiesOf(id))
}

// HelmFor says how obj's path renders if it holds a Helm chart: spec.helm, the
// Sync's name as the default release name, its destination as the release's
// namespace, and its valuesFrom read through reader (whoever should read them:
// the Sync's identity in the agent, the user in the CLI). The cluster's
// capabilities are read through caps only when a chart renders. The agent and
// `tether diff` both call it, so that they render a chart alike.
func HelmFor(ctx context.Context, reader client.Reader, obj *v1alpha1.Sync, caps Capabilities) (source.Helm, error) {
	h := source.Helm{
		ReleaseName:  obj.HelmReleaseName(),
		Namespace:    obj.Spec.Destination.Namespace,
		Capabilities: caps,
	}
	spec := obj.Spec.Helm
	if spec == nil {
		return h, nil
	}
	h.ValuesFiles, h.SkipCRDs = spec.ValuesFiles, spec.SkipCRDs
	if spec.Values != nil {
		h.Values = spec.Values.Raw
	}
	for _, ref := range spec.ValuesFrom {
		v, err := readValues(ctx, reader, obj.Namespace, ref)
		if err != nil {
			return h, &source.FetchError{URL: sourceURL(obj), Ref: sourceRefLabel(obj), Reason: valuesReason(err), Err: err}
		}
		h.ValuesFrom = append(h.ValuesFrom, v)
	}
	return h, nil
}

// readValues reads one valuesFrom reference through reader. Errors name the object and
// the key, never what it holds.
func readValues(ctx context.Context, reader client.Reader, namespace string, ref v1alpha1.ValuesReference) (source.Values, error) {
	name := fmt.Sprintf("%s %s/%s key %s", ref.Kind, namespace, ref.Name, ref.KeyOrDefault())
	if reader == nil {
		return source.Values{}, fmt.Errorf("spec.helm.valuesFrom: this agent reads no ConfigMaps or Secrets: %w", errors.New(name))
	}
	key := client.ObjectKey{Namespace: namespace, Name: ref.Name}
	var data []byte
	var found bool
	switch ref.Kind {
	case "Secret":
		var s corev1.Secret
		if err := reader.Get(ctx, key, &s); err != nil {
			return source.Values{}, fmt.Errorf("spec.helm.valuesFrom: reading %s: %w", name, err)
		}
		data, found = s.Data[ref.KeyOrDefault()]
	default:
		var cm corev1.ConfigMap
		if err := reader.Get(ctx, key, &cm); err != nil {
			return source.Values{}, fmt.Errorf("spec.helm.valuesFrom: reading %s: %w", name, err)
		}
		var s string
		s, found = cm.Data[ref.KeyOrDefault()]
		data = []byte(s)
	}
	if !found {
		return source.Values{}, fmt.Errorf("spec.helm.valuesFrom: %s: %w", name, errNoSuchKey)
	}
	return source.Values{Name: name, YAML: data, Secret: ref.Kind == "Secret"}, nil
}

// valuesReason classes the failure to read a valuesFrom reference: Forbidden
// when the Sync's identity may not read it, else ValuesNotFound.
func valuesReason(err error) string {
	if apierrors.IsForbidden(err) {
		return v1alpha1.ReasonForbidden
	}
	return v1alpha1.ReasonValuesNotFound
}

// errNoSuchKey is the cause of a valuesFrom reference to a key its object
// lacks.
var errNoSuchKey = errors.New("the object has no such key")

// ClusterCapabilities reads the API server's version and the group versions and
// kinds it serves, as a chart's .Capabilities, through config. A group whose
// discovery fails is left out rather than failing the render.
func ClusterCapabilities(config *rest.Config) (Capabilities, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("creating a discovery client: %w", err)
	}
	return func(_ context.Context) (source.Capabilities, error) {
		version, err := dc.ServerVersion()
		if err != nil {
			return source.Capabilities{}, err
		}
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
			return source.Capabilities{}, err
		}
		return source.Capabilities{KubeVersion: version.GitVersion, APIVersions: apiVersions(lists)}, nil
	}, nil
}

// apiVersions lists each group version served and each of its kinds
// ("apps/v1", "apps/v1/Deployment"), as Helm's own client lists them.
func apiVersions(lists []*metav1.APIResourceList) []string {
	seen := map[string]bool{}
	for _, l := range lists {
		seen[l.GroupVersion] = true
		for _, r := range l.APIResources {
			seen[l.GroupVersion+"/"+r.Kind] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}
