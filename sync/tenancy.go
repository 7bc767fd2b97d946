package sync

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	gosync "sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/apply"
)

// Identity is who a Sync's requests act as: the Applier that reads, dry-runs,
// applies, prunes and orphans its objects, and the reader of its secretRef.
type Identity struct {
	// User is the Kubernetes user the requests are made as
	// ("system:serviceaccount:<namespace>:<name>"); empty for the agent's own.
	User string
	// Applier acts on the Sync's objects as User. Each identity has its own, so that
	// what one identity verified (apply's cache of objects known to match) never
	// spares another identity a request.
	Applier Applier
	// Secrets reads the Sync's secretRef as User, straight from the API server.
	Secrets client.Reader
	// Finder lists, as User, the objects that carry the Sync's label, to rebuild a
	// lost inventory; nil leaves the inventory as it is.
	Finder Finder
	// Pods lists, as User, the pods of a workload that is not Healthy, so that its
	// health names the pod that holds it up; nil judges workloads by their own
	// status. What the account may not list, its Sync's health does not tell.
	Pods client.Reader
	// remote is the cluster the identity acts in when it is not the agent's own
	// (spec.destination); nil: the agent's own. secretsAs is then the user that
	// Secrets reads as in the hub.
	remote    *RemoteCluster
	secretsAs string
}

// IdentityFunc returns an Identity whose every request impersonates user. It is
// called once per user; the Tenancy keeps what it returns.
type IdentityFunc func(user string) (Identity, error)

// TenancyOptions say who Syncs act as and how far they may reach.
type TenancyOptions struct {
	// Impersonate builds the Identity of a service account. Nil means the agent
	// cannot act as anyone but itself: a Sync that names an account is Stalled.
	Impersonate IdentityFunc
	// Accounts reads ServiceAccounts, to tell a Sync whose account does not exist
	// (Stalled) from one whose account may not do something (Forbidden). The
	// manager's API reader: ServiceAccounts are neither cached nor watched.
	Accounts client.Reader
	// Mapper tells namespaced kinds from cluster-scoped ones when cross-namespace
	// objects are refused.
	Mapper meta.RESTMapper
	// DefaultServiceAccount is the account, in the Sync's own namespace, that a Sync
	// naming none acts as. Empty means such Syncs act as the agent.
	DefaultServiceAccount string
	// AllowCrossNamespace lets a Sync's revision hold objects outside the Sync's
	// own namespace (in other namespaces, or cluster-scoped), subject to what its
	// identity may do. False refuses such a revision whole, before any request.
	AllowCrossNamespace bool
}

// DefaultTenancyOptions returns the tenancy of an agent started without tenancy
// flags: Syncs that name no account act as the agent and may reach anywhere the
// agent may.
func DefaultTenancyOptions() TenancyOptions {
	return TenancyOptions{AllowCrossNamespace: true}
}

// Tenancy resolves the Identity each Sync acts as, and refuses revisions that reach
// beyond the Sync's namespace when that is not allowed. It keeps one Identity per
// service account for the agent's lifetime. It is safe for concurrent use.
type Tenancy struct {
	opts TenancyOptions

	mu         gosync.Mutex
	identities map[string]Identity
}

// NewTenancy returns a Tenancy with opts.
func NewTenancy(opts TenancyOptions) *Tenancy {
	return &Tenancy{opts: opts, identities: map[string]Identity{}}
}

// RefusedError is a Sync that Tether will not act on as it stands: its account
// does not exist, cannot be impersonated, or its revision reaches outside its
// namespace. It stalls the Sync until the Sync, its account or git changes.
type RefusedError struct {
	// Reason is one of the v1alpha1 reasons, for the Ready and Stalled conditions.
	Reason string
	Msg    string
}

func (e *RefusedError) Error() string { return e.Msg }

// ServiceAccountUser is the user name a service account authenticates as.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// accountOf returns the service account obj acts as, or "" for the agent.
func (t *Tenancy) accountOf(obj *v1alpha1.Sync) string {
	if obj.Spec.ServiceAccountName != "" {
		return obj.Spec.ServiceAccountName
	}
	if t == nil {
		return ""
	}
	return t.opts.DefaultServiceAccount
}

// identityOf returns the Identity obj acts as; agent when it names no account and
// the agent has no default.
func (t *Tenancy) identityOf(ctx context.Context, obj *v1alpha1.Sync, agent Identity) (Identity, error) {
	account := t.accountOf(obj)
	if account == "" {
		return agent, nil
	}
	if t == nil || t.opts.Impersonate == nil {
		return Identity{}, &RefusedError{Reason: v1alpha1.ReasonImpersonationUnavailable, Msg: fmt.Sprintf(
			"the Sync acts as ServiceAccount %s/%s, but this agent was started without impersonation", obj.Namespace, account)}
	}
	if err := t.accountExists(ctx, obj, account); err != nil {
		return Identity{}, err
	}
	user := ServiceAccountUser(obj.Namespace, account)
	t.mu.Lock()
	defer t.mu.Unlock()
	if id, ok := t.identities[user]; ok {
		return id, nil
	}
	id, err := t.opts.Impersonate(user)
	if err != nil {
		return Identity{}, fmt.Errorf("acting as %s: %w", user, err)
	}
	id.User = user
	t.identities[user] = id
	return id, nil
}

// accountExists reads the account with the agent's own identity: an impersonated
// request for a missing account is merely Forbidden, which would hide the mistake.
func (t *Tenancy) accountExists(ctx context.Context, obj *v1alpha1.Sync, account string) error {
	if t.opts.Accounts == nil {
		return nil
	}
	err := t.opts.Accounts.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: account}, &corev1.ServiceAccount{})
	switch {
	case apierrors.IsNotFound(err):
		field := "spec.serviceAccountName"
		if obj.Spec.ServiceAccountName == "" {
			field = "the agent's --default-service-account"
		}
		return &RefusedError{Reason: v1alpha1.ReasonServiceAccountNotFound, Msg: fmt.Sprintf(
			"ServiceAccount %s/%s does not exist: the Sync acts as it (%s); create it, or name another account", obj.Namespace, account, field)}
	case err != nil:
		return fmt.Errorf("reading ServiceAccount %s/%s: %w", obj.Namespace, account, err)
	}
	return nil
}

// checkReach refuses, when cross-namespace objects are not allowed, a revision
// that holds any object outside obj's namespace: namespaced objects of another
// namespace (named in git, or through spec.destination.namespace) and
// cluster-scoped objects. It makes no request, so nothing of the revision is
// written; every such object is named.
func (t *Tenancy) checkReach(obj *v1alpha1.Sync, objs []*unstructured.Unstructured) error {
	if t == nil || t.opts.AllowCrossNamespace {
		return nil
	}
	var outside []string
	dest := obj.Spec.Destination.Namespace
	if dest != "" && dest != obj.Namespace {
		outside = append(outside, fmt.Sprintf("spec.destination.namespace %s", dest))
	}
	for _, o := range objs {
		ref := apply.RefOf(o)
		ns := o.GetNamespace()
		if ns == "" {
			ns = dest
		}
		switch {
		case t.clusterScoped(o):
			ref.Namespace = ""
			outside = append(outside, ref.String()+" (cluster-scoped)")
		case ns != "" && ns != obj.Namespace:
			ref.Namespace = ns
			outside = append(outside, ref.String())
		}
	}
	if len(outside) == 0 {
		return nil
	}
	sort.Strings(outside)
	return &RefusedError{Reason: v1alpha1.ReasonCrossNamespace, Msg: fmt.Sprintf(
		"the revision reaches outside namespace %s, which this agent allows no Sync to do (--allow-cross-namespace=false); nothing was applied: %s",
		obj.Namespace, strings.Join(outside, ", "))}
}

// clusterScoped reports whether o's kind is known to be cluster-scoped. A kind the
// mapper does not know (yet) is judged by its namespace alone; the account's
// rights still bound what applying it can do.
func (t *Tenancy) clusterScoped(o *unstructured.Unstructured) bool {
	gvk := o.GroupVersionKind()
	if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" || gvk.Group == "" && gvk.Kind == "Namespace" {
		return true
	}
	if t.opts.Mapper == nil {
		return false
	}
	m, err := t.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	return err == nil && m.Scope.Name() != meta.RESTScopeNameNamespace
}

// identity returns who obj's requests act as.
func (r *Reconciler) identity(ctx context.Context, obj *v1alpha1.Sync) (Identity, error) {
	key := client.ObjectKeyFromObject(obj)
	home, err := r.Agent.Tenancy.identityOf(ctx, obj, Identity{Applier: r.Agent.Applier, Secrets: r.Cluster.Secrets, Finder: r.Agent.Finder, Pods: r.Cluster.Pods})
	if err != nil || !obj.Spec.Destination.IsRemote() {
		r.Agent.Clusters.Leave(ctx, key)
		r.Observers.SecretWatch.ForgetField(key, fieldKubeConfigSecret)
		return home, err
	}
	return r.remoteIdentity(ctx, obj, home)
}

// isForbidden reports whether any object of err failed because its identity may
// not do what the revision needs: the API server's authorizer said no. An
// admission webhook's denial is also a 403, but it judges the object, not who
// sends it, and stays a validation failure.
func isForbidden(err error) bool {
	for _, oe := range apply.ObjectErrors(err) {
		if isUnauthorized(oe.Err) {
			return true
		}
	}
	return false
}

// isUnauthorized tells an authorization denial, whose message the API server
// writes as `<resource> "<name>" is forbidden: User "<user>" cannot <verb> ...`,
// from other 403s.
func isUnauthorized(err error) bool {
	var status apierrors.APIStatus
	return apierrors.IsForbidden(err) && errors.As(err, &status) &&
		strings.Contains(status.Status().Message, `is forbidden: User "`)
}

// searchNamespace is where a lost inventory of obj is looked for: its own namespace
// when it acts as an account that may not reach beyond it, else everywhere ("").
func (t *Tenancy) searchNamespace(obj *v1alpha1.Sync, id Identity) string {
	if t == nil || id.User == "" || t.opts.AllowCrossNamespace {
		return ""
	}
	return obj.Namespace
}
