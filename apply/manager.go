package apply

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Manager applies objects to one cluster. It is safe for concurrent use.
type Manager struct {
	client    client.Client
	mapper    meta.RESTMapper
	live      LiveVersions
	discovery discovery.ServerResourcesInterface
	verified  *verifiedCache
	scopes    *scopes // which kinds are namespaced, remembered across calls
	metadata  metadata.Interface
	raw       rest.Interface
}

// LiveVersions reports the resourceVersion of a live object as a watch cache last saw
// it, without a request to the API server. ok is false when the cache does not watch
// that kind (yet) or has not synced; the Manager then reads from the API server. An
// object the synced cache does not hold is reported as rv "" and ok true: absent, so
// the Manager does not read it (and checks the dry-run's answer instead, in case the
// cache lags).
type LiveVersions interface {
	ResourceVersion(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (rv string, ok bool)
}

// ManagerOptions configure a Manager for its lifetime.
type ManagerOptions struct {
	// LiveVersions, when set, lets the Manager skip the read and the dry-run of an
	// object whose desired state and live resourceVersion are both unchanged since
	// they were last verified to match: a converged resync then costs no requests.
	LiveVersions LiveVersions
	// VerifiedCacheBytes bounds the live objects kept for that (as JSON);
	// 0 means DefaultVerifiedCacheBytes.
	VerifiedCacheBytes int64
	// Discovery, when set, lets FindOwned enumerate the kinds the cluster serves.
	Discovery discovery.ServerResourcesInterface
	// Metadata, when set, is a metadata-only client acting as the same identity as
	// the Manager's client: the dry-run of an object that is not there asks through
	// it for the answer's metadata only.
	Metadata metadata.Interface
	// Raw, when set, is a client whose answers the Manager reads as bytes, acting as
	// the same identity as the Manager's client: a write keeps the JSON of its
	// answer as it came, less managedFields (liveJSON), instead of decoding it into
	// maps and encoding it again.
	Raw rest.Interface
}

// WithClientsFor returns opts with Metadata and Raw built from cfg, which must act
// as the same identity as the Manager's client.
func (opts ManagerOptions) WithClientsFor(cfg *rest.Config) (ManagerOptions, error) {
	var err error
	if opts.Metadata, err = metadata.NewForConfig(cfg); err != nil {
		return opts, fmt.Errorf("creating a metadata client: %w", err)
	}
	raw := rest.CopyConfig(cfg)
	raw.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	raw.ContentType, raw.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	if opts.Raw, err = rest.UnversionedRESTClientFor(raw); err != nil {
		return opts, fmt.Errorf("creating a client for raw answers: %w", err)
	}
	return opts, nil
}

// NewManager returns a Manager that reads and writes through c. c must read from the
// API server, not from a cache, because comparisons need the current live object.
func NewManager(c client.Client, opts ManagerOptions) *Manager {
	return &Manager{client: c, mapper: c.RESTMapper(), live: opts.LiveVersions, discovery: opts.Discovery,
		verified: newVerifiedCache(opts.VerifiedCacheBytes), scopes: newScopes(c.RESTMapper()), metadata: opts.Metadata, raw: opts.Raw}
}
