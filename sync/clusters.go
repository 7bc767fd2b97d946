package sync

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	gosync "sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan/fleet"
)

// Remote is what the agent acts with in one remote cluster, as one kubeconfig's
// user: ClustersOptions.Connect builds it, and its Stop ends its watches.
type Remote struct {
	// Agent acts as the kubeconfig's user: its Applier, Finder and Pods.
	Agent Identity
	// Impersonate builds, in that cluster, the Identity of a service account.
	Impersonate IdentityFunc
	// Accounts reads that cluster's ServiceAccounts, as the kubeconfig's user.
	Accounts client.Reader
	// Mapper is that cluster's: what its API server serves, which kinds are
	// cluster-scoped.
	Mapper meta.RESTMapper
	// Watcher watches the kinds the Syncs apply there, in caches of that
	// cluster's own, and queues their Syncs (Watcher.ForCache).
	Watcher *Watcher
	// Capabilities are what a chart rendered for that cluster sees of it.
	Capabilities Capabilities
	// Stop ends the watches and caches: the last Sync left.
	Stop func()
}

// ConnectFunc builds the Remote of one cluster (named for messages and metrics)
// over cfg, whose transport fails fast while the cluster is unreachable; its
// watches run until ctx ends or its Stop is called.
type ConnectFunc func(ctx context.Context, name string, cfg *rest.Config) (*Remote, error)

// ClustersOptions say how the agent reaches other clusters.
type ClustersOptions struct {
	// Connect builds a Remote. Nil: the agent serves no remote cluster, and a
	// Sync whose destination names one is Stalled.
	Connect ConnectFunc
	// Namespace is where clusters are registered (the agent's own); empty: no
	// cluster is.
	Namespace string
	// AllowExec lets a kubeconfig run a credential plugin (a program inside the
	// agent's container) (--allow-kubeconfig-exec).
	AllowExec bool
	// Tenancy is the agent's; a remote cluster's Syncs follow the same rules
	// there (the default service account only on registered clusters: a
	// tenant's own kubeconfig is an identity already).
	Tenancy TenancyOptions
}

// Clusters are the remote clusters Syncs apply to (spec.destination): one
// RemoteCluster per kubeconfig (its content, so a rotated Secret is a new one),
// shared by every Sync that uses the same, connected when the first Sync needs it
// and stopped when the last one leaves. It is safe for concurrent use.
type Clusters struct {
	opts ClustersOptions

	mu gosync.Mutex
	// ctx is the agent's, once Start runs: the remote clusters' watches live
	// within it.
	ctx    context.Context
	byKey  map[string]*RemoteCluster
	bySync map[types.NamespacedName]*RemoteCluster
	// read holds, by Sync, the kubeconfig it last read from a Secret of its
	// namespace, used again while that Secret's watch says it is unchanged.
	read map[types.NamespacedName]*kubeConfigOf
}

// NewClusters returns the Clusters of an agent.
func NewClusters(opts ClustersOptions) *Clusters {
	return &Clusters{opts: opts, byKey: map[string]*RemoteCluster{}, bySync: map[types.NamespacedName]*RemoteCluster{},
		read: map[types.NamespacedName]*kubeConfigOf{}}
}

// Start lets remote clusters be connected until ctx ends, then stops them all.
func (c *Clusters) Start(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	<-ctx.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, rc := range c.byKey {
		rc.remote.Stop()
		delete(c.byKey, key)
	}
	clear(c.bySync)
	clear(c.read)
	return nil
}

// NeedLeaderElection is true: remote clusters are reached where Syncs are reconciled.
func (c *Clusters) NeedLeaderElection() bool { return true }

// RemoteCluster is one connected remote cluster.
type RemoteCluster struct {
	name    string
	key     string
	remote  *Remote
	tenancy *Tenancy
	breaker *breaker
	users   map[types.NamespacedName]bool
}

// Name is the cluster's name, as status.cluster says it.
func (rc *RemoteCluster) Name() string { return rc.name }

// Unreachable returns the error that says the cluster does not answer, nil
// while it does.
func (rc *RemoteCluster) Unreachable() error { return rc.breaker.open() }

// kubeConfigOf is a Sync's kubeconfig: where it came from and its bytes.
type kubeConfigOf struct {
	name     string // status.cluster
	data     []byte
	what     string // "Secret web/prod-eu key value", for messages
	version  string // the Secret's resourceVersion
	register bool
	// from is the Secret it was read from, and key its key.
	from secretOf
	key  string
}

// secretOf names a Secret, and who reads it: "" for the agent.
type secretOf struct{ user, namespace, name string }

// Readers are who reads a Sync's kubeconfig: its identity on the hub (Sync),
// the Secret of its namespace it names, and the agent (Agent, User ""), a
// registered cluster's; and whether what was read last is known to be
// unchanged (SecretWatch.Holds), so that a converged Sync reads nothing.
type Readers struct {
	Sync      client.Reader
	User      string
	Agent     client.Reader
	Unchanged func(user, namespace, name, rv string) bool
}

// For returns the remote cluster obj's objects go to, connecting it if no Sync
// uses it yet, and the kubeconfig it was reached with (read through readers,
// or the one read last while its Secret is unchanged). obj stops using the
// cluster it used before, if another.
func (c *Clusters) For(ctx context.Context, obj *v1alpha1.Sync, readers Readers) (*RemoteCluster, *kubeConfigOf, error) {
	if c == nil || c.opts.Connect == nil {
		return nil, nil, &RefusedError{Reason: v1alpha1.ReasonKubeConfigInvalid, Msg: fmt.Sprintf(
			"spec.destination names cluster %s, but this agent applies to no other cluster than its own", obj.Spec.Destination.ClusterName())}
	}
	syncKey := types.NamespacedName{Namespace: obj.Namespace, Name: obj.Name}
	kc := c.readBefore(syncKey, obj, readers)
	if kc == nil {
		var err error
		if kc, err = c.readNow(ctx, obj, readers); err != nil {
			return nil, nil, err
		}
	}
	sum := sha256.Sum256(append([]byte(kc.name+"\x00"), kc.data...))
	key := hex.EncodeToString(sum[:])

	c.mu.Lock()
	defer c.mu.Unlock()
	c.read[syncKey] = kc
	rc, ok := c.byKey[key]
	if !ok {
		if c.ctx == nil {
			return nil, nil, errors.New("the agent does not reach other clusters yet: it is starting")
		}
		var err error
		if rc, err = c.connect(c.ctx, kc, key); err != nil {
			return nil, nil, err
		}
		c.byKey[key] = rc
	}
	if old := c.bySync[syncKey]; old != nil && old != rc {
		c.leave(ctx, old, syncKey)
	}
	rc.users[syncKey] = true
	c.bySync[syncKey] = rc
	if err := rc.Unreachable(); err != nil {
		return rc, kc, err
	}
	return rc, kc, nil
}

// connect builds the RemoteCluster of kc.
func (c *Clusters) connect(ctx context.Context, kc *kubeConfigOf, key string) (*RemoteCluster, error) {
	cfg, err := RESTConfigOf(kc.data, c.opts.AllowExec)
	if err != nil {
		return nil, &RefusedError{Reason: v1alpha1.ReasonKubeConfigInvalid, Msg: fmt.Sprintf("the kubeconfig in %s cannot be used: %v", kc.what, err)}
	}
	b := newBreaker(kc.name, cfg.Host)
	cfg.Wrap(b.wrap)
	var made atomic.Pointer[RemoteCluster] // the breaker may trip before it is made
	b.changed = func() { c.queueUsers(made.Load()) }
	remote, err := c.opts.Connect(ctx, kc.name, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to cluster %s: %w", kc.name, err)
	}
	topts := c.opts.Tenancy
	topts.Impersonate, topts.Accounts, topts.Mapper = remote.Impersonate, remote.Accounts, remote.Mapper
	if !kc.register {
		topts.DefaultServiceAccount = ""
	}
	rc := &RemoteCluster{name: kc.name, key: key, remote: remote, tenancy: NewTenancy(topts), breaker: b, users: map[types.NamespacedName]bool{}}
	made.Store(rc)
	return rc, nil
}

// queueUsers queues every Sync that uses rc: its cluster stopped or started
// answering.
func (c *Clusters) queueUsers(rc *RemoteCluster) {
	if rc == nil {
		return
	}
	c.mu.Lock()
	users := make([]types.NamespacedName, 0, len(rc.users))
	for k := range rc.users {
		users = append(users, k)
	}
	c.mu.Unlock()
	for _, k := range users {
		rc.remote.Watcher.Enqueue(k)
	}
}

// Leave records that the Sync key uses no remote cluster (it is gone, or
// applies to the agent's own cluster now).
func (c *Clusters) Leave(ctx context.Context, key types.NamespacedName) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.read, key)
	if rc := c.bySync[key]; rc != nil {
		c.leave(ctx, rc, key)
	}
}

// leave stops key's use of rc, and rc itself when nobody uses it any more.
func (c *Clusters) leave(ctx context.Context, rc *RemoteCluster, key types.NamespacedName) {
	delete(rc.users, key)
	delete(c.bySync, key)
	delete(c.read, key)
	rc.remote.Watcher.Forget(ctx, key)
	if len(rc.users) == 0 {
		delete(c.byKey, rc.key)
		rc.remote.Stop()
	}
}

// of is the remote cluster the Sync key uses, nil for none.
func (c *Clusters) of(key types.NamespacedName) *RemoteCluster {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bySync[key]
}

// Connected counts the remote clusters connected now (one per kubeconfig).
func (c *Clusters) Connected() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byKey)
}

// readBefore returns the kubeconfig obj read last, when its destination names
// the same Secret and key and that Secret is known to be unchanged since; nil
// otherwise. A converged remote Sync so reads no Secret at each reconcile.
func (c *Clusters) readBefore(key types.NamespacedName, obj *v1alpha1.Sync, readers Readers) *kubeConfigOf {
	if readers.Unchanged == nil {
		return nil
	}
	c.mu.Lock()
	kc := c.read[key]
	c.mu.Unlock()
	if kc == nil || kc.from != c.secretOf(obj, readers) || kc.key != kubeConfigKeyOf(obj) ||
		!readers.Unchanged(kc.from.user, kc.from.namespace, kc.from.name, kc.version) {
		return nil
	}
	return kc
}

// secretOf is the Secret obj's destination names, and who reads it.
func (c *Clusters) secretOf(obj *v1alpha1.Sync, readers Readers) secretOf {
	if dest := obj.Spec.Destination; dest.Cluster != "" {
		return secretOf{namespace: c.opts.Namespace, name: dest.Cluster}
	}
	return secretOf{user: readers.User, namespace: obj.Namespace, name: obj.Spec.Destination.KubeConfig.SecretRef.Name}
}

// kubeConfigKeyOf is the key of the kubeconfig obj's destination names ("" for Flux's).
func kubeConfigKeyOf(obj *v1alpha1.Sync) string {
	if ref := obj.Spec.Destination.KubeConfig; ref != nil {
		return ref.SecretRef.Key
	}
	return v1alpha1.ClusterKubeConfigKey
}

// readNow reads obj's kubeconfig: from the Secret of its namespace that
// spec.destination.kubeConfig names, or from the registered cluster that
// spec.destination.cluster names, when it allows obj's namespace.
func (c *Clusters) readNow(ctx context.Context, obj *v1alpha1.Sync, readers Readers) (*kubeConfigOf, error) {
	dest := obj.Spec.Destination
	if dest.Cluster != "" {
		return c.registered(ctx, obj, readers.Agent)
	}
	secrets := readers.Sync
	ref := dest.KubeConfig.SecretRef
	what := fmt.Sprintf("Secret %s/%s", obj.Namespace, ref.Name)
	secret := &corev1.Secret{}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &RefusedError{Reason: v1alpha1.ReasonKubeConfigNotFound, Msg: fmt.Sprintf(
				"%s, which spec.destination.kubeConfig names, does not exist", what)}
		}
		return nil, fmt.Errorf("reading the kubeconfig %s: %w", what, err)
	}
	keys := kubeConfigKeys(ref.Key)
	for _, k := range keys {
		if data, ok := secret.Data[k]; ok {
			return &kubeConfigOf{name: dest.ClusterName(), data: data, what: what + " key " + k, version: secret.ResourceVersion,
				from: c.secretOf(obj, readers), key: ref.Key}, nil
		}
	}
	return nil, &RefusedError{Reason: v1alpha1.ReasonKubeConfigNotFound, Msg: fmt.Sprintf(
		"%s has no key %s, which spec.destination.kubeConfig names", what, strings.Join(keys, " or "))}
}

// registered reads the registered cluster obj names, as the agent.
func (c *Clusters) registered(ctx context.Context, obj *v1alpha1.Sync, agent client.Reader) (*kubeConfigOf, error) {
	name := obj.Spec.Destination.Cluster
	notFound := &RefusedError{Reason: v1alpha1.ReasonClusterNotFound, Msg: fmt.Sprintf(
		"spec.destination.cluster %s: no cluster of that name is registered with this agent (a Secret of its namespace labelled %s=true)", name, v1alpha1.ClusterLabel)}
	if c.opts.Namespace == "" {
		return nil, notFound
	}
	secret := &corev1.Secret{}
	if err := agent.Get(ctx, client.ObjectKey{Namespace: c.opts.Namespace, Name: name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notFound
		}
		return nil, fmt.Errorf("reading registered cluster %s: %w", name, err)
	}
	if secret.Labels[v1alpha1.ClusterLabel] != "true" {
		return nil, notFound
	}
	if !allowsNamespace(secret.Annotations[v1alpha1.AllowedNamespacesAnnotation], obj.Namespace) {
		return nil, &RefusedError{Reason: v1alpha1.ReasonClusterNotAllowed, Msg: fmt.Sprintf(
			"cluster %s does not allow Syncs of namespace %s (its Secret's %s annotation)", name, obj.Namespace, v1alpha1.AllowedNamespacesAnnotation)}
	}
	data, ok := secret.Data[v1alpha1.ClusterKubeConfigKey]
	if !ok {
		return nil, &RefusedError{Reason: v1alpha1.ReasonKubeConfigNotFound, Msg: fmt.Sprintf(
			"registered cluster %s has no key %s", name, v1alpha1.ClusterKubeConfigKey)}
	}
	return &kubeConfigOf{name: name, data: data, what: "registered cluster " + name, version: secret.ResourceVersion, register: true,
		from: secretOf{namespace: c.opts.Namespace, name: name}, key: v1alpha1.ClusterKubeConfigKey}, nil
}

// allowsNamespace reports whether the allowed-namespaces annotation value list
// names ns, or "*".
func allowsNamespace(list, ns string) bool {
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n == "*" || n == ns {
			return true
		}
	}
	return false
}

// identity is who obj acts as in rc: the kubeconfig's user, or the service
// account it names impersonated there. Its Secrets are read in the hub as home
// reads them: as the Sync's identity there.
func (rc *RemoteCluster) identity(ctx context.Context, obj *v1alpha1.Sync, home Identity) (Identity, error) {
	id, err := rc.tenancy.identityOf(ctx, obj, rc.remote.Agent)
	if err != nil {
		var refused *RefusedError
		if errors.As(err, &refused) {
			refused.Msg = fmt.Sprintf("in cluster %s: %s", rc.name, refused.Msg)
		}
		return Identity{}, err
	}
	id.Secrets, id.secretsAs = home.Secrets, home.User
	id.remote = rc
	return id, nil
}

// Clusters of a Reconciler's Identity.

// watcherOf is the Watcher of the cluster id acts in.
func (r *Reconciler) watcherOf(id Identity) *Watcher {
	if id.remote != nil {
		return id.remote.remote.Watcher
	}
	return r.Observers.Watcher
}

// tenancyOf is the Tenancy of the cluster id acts in.
func (r *Reconciler) tenancyOf(id Identity) *Tenancy {
	if id.remote != nil {
		return id.remote.tenancy
	}
	return r.Agent.Tenancy
}

// capabilitiesOf is what a chart sees of the cluster id acts in.
func (r *Reconciler) capabilitiesOf(id Identity) Capabilities {
	if id.remote != nil {
		return id.remote.remote.Capabilities
	}
	return r.Agent.Capabilities
}

// podUser keys id's pod watches: its user in its cluster.
func (id Identity) podUser() string {
	if id.remote != nil {
		return id.remote.key + "/" + id.User
	}
	return id.User
}

// secretsUser keys the watches of the Secrets id reads: who reads them in the
// hub.
func (id Identity) secretsUser() string {
	if id.remote != nil {
		return id.secretsAs
	}
	return id.User
}

// remoteIdentity resolves obj's identity in the remote cluster its destination
// names, and has the kubeconfig Secret watched, so that a rotation is used at
// once. Every Secret the Sync names (the kubeconfig, credentials, keys, values)
// is read in the hub as the Sync's identity there (home): its account, or the
// agent's default one, as for a Sync of the agent's own cluster; a Sync cannot
// have the agent read for it what its account may not.
func (r *Reconciler) remoteIdentity(ctx context.Context, obj *v1alpha1.Sync, home Identity) (Identity, error) {
	clusters := r.Agent.Clusters
	readers := Readers{Sync: home.Secrets, User: home.User, Agent: r.Cluster.Secrets,
		Unchanged: func(user, namespace, name, rv string) bool {
			return r.Observers.SecretWatch.Holds(user, namespace, name, rv)
		}}
	rc, kc, err := clusters.For(ctx, obj, readers)
	if clusters != nil {
		// The Secret is watched (metadata only) as who reads it, from the
		// version read ("" not found: its creation queues the Sync too).
		from, seen := clusters.secretOf(obj, readers), ""
		if kc != nil {
			seen = kc.version
		}
		reader := home.Secrets
		if from.user == "" && obj.Spec.Destination.Cluster != "" {
			reader = r.Cluster.Secrets
		}
		r.Observers.SecretWatch.Track(client.ObjectKeyFromObject(obj), fieldKubeConfigSecret, from.user, reader, from.namespace, from.name, seen)
	}
	if err != nil {
		return Identity{}, err
	}
	return rc.identity(ctx, obj, home)
}

// fieldKubeConfigSecret is the SecretWatch field of spec.destination: the
// kubeconfig Secret it names, or the registered cluster's.
const fieldKubeConfigSecret = "spec.destination.kubeConfig"

// unreachable returns err as the ClusterUnreachableError of obj's remote
// cluster when that cluster does not answer now, err itself otherwise.
func (r *Reconciler) unreachable(obj *v1alpha1.Sync, err error) error {
	var ue *ClusterUnreachableError
	if err == nil || errors.As(err, &ue) || !obj.Spec.Destination.IsRemote() || r.Agent.Clusters == nil {
		return err
	}
	rc := r.Agent.Clusters.of(client.ObjectKeyFromObject(obj))
	if rc == nil {
		return err
	}
	if open := rc.Unreachable(); open != nil {
		return errors.Join(open, err)
	}
	return err
}

// Registry lists the registered clusters, for the SyncSets' clusters
// generators: the Secrets of Namespace labelled tether.dev/cluster=true, read
// through Reader as the agent.
type Registry struct {
	Reader    client.Reader
	Namespace string
}

// Allowing returns the registered clusters whose allowed-namespaces annotation
// lists namespace (or "*"), each with its labels and its API server's URL.
func (r Registry) Allowing(ctx context.Context, namespace string) ([]fleet.Cluster, error) {
	list := &corev1.SecretList{}
	if err := r.Reader.List(ctx, list, client.InNamespace(r.Namespace), client.MatchingLabels{v1alpha1.ClusterLabel: "true"}); err != nil {
		return nil, err
	}
	var out []fleet.Cluster
	for i := range list.Items {
		s := &list.Items[i]
		if allowsNamespace(s.Annotations[v1alpha1.AllowedNamespacesAnnotation], namespace) {
			out = append(out, fleet.Cluster{Name: s.Name, Server: serverOf(s.Data[v1alpha1.ClusterKubeConfigKey]), Labels: s.Labels})
		}
	}
	return out, nil
}
