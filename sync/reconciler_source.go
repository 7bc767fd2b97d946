package sync

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
)

// jitterFraction spreads each Sync's polls over ±10% of its interval, so that the
// Syncs of a fleet (or of one agent after a restart) do not poll in lockstep.
const jitterFraction = 0.1

// jitter returns d moved at random by up to ±10%. The reconciler requeues a
// successful reconcile after jitter(interval).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return d
	}
	spread := 2 * jitterFraction * (rand.Float64() - 0.5)
	return d + time.Duration(spread*float64(d))
}

// maxAge is how long a resolution of a Sync's ref may be reused: a little less
// than the earliest a jittered requeue comes back, so that every poll of a Sync
// that has its repository to itself asks the remote, while Syncs sharing a
// repository and credentials share one ref listing per interval, and a
// reconcile triggered by drift in the cluster does not touch git.
func maxAge(interval time.Duration) time.Duration {
	return time.Duration(float64(interval) * (1 - jitterFraction))
}

// specChangedAt returns, for a Sync whose current generation no status has
// observed yet, the time by which its spec was last written: the latest of its
// creation and of the writes recorded in its managedFields (the status
// subresource's aside). The API server keeps those times in whole seconds, so
// the second after theirs is returned: a listing made from then on is surely
// newer than the write.
func specChangedAt(obj *v1alpha1.Sync) (time.Time, bool) {
	if obj.Status.ObservedGeneration == obj.Generation {
		return time.Time{}, false
	}
	at := obj.CreationTimestamp.Time
	for _, f := range obj.ManagedFields {
		if f.Subresource == "" && f.Time != nil && f.Time.After(at) {
			at = f.Time.Time
		}
	}
	return at.Add(time.Second), true
}

// Keys of a credentials Secret (spec.source.secretRef).
const (
	secretUsername    = "username"
	secretPassword    = "password"
	secretBearerToken = "bearerToken"
	secretCAFile      = "caFile"
	secretIdentity    = "identity"
	secretKnownHosts  = "known_hosts"
)

// sourceRequest builds what to fetch for a Sync: its URL and ref, the credentials
// its secretRef names, and how old a shared resolution may be. A request for a
// reconcile that must wait for the repository's minimum interval (see
// requestSpacing) comes back with how long.
func (r *Reconciler) sourceRequest(ctx context.Context, obj *v1alpha1.Sync, id Identity) (source.Request, time.Duration, error) {
	// The namespace is the tenant a git host's places are shared between.
	req := plan.RequestOf(obj)
	var wait time.Duration
	req.MaxAge, wait = r.listingAge(obj, req.URL)
	req, err := r.withAuth(ctx, obj, id, req)
	return req, wait, err
}

// listingAge is how old an answer of url (a ref listing, a chart repository's
// index) that obj's reconcile may reuse is, and, for a request for a reconcile
// that must wait for the repository's minimum interval (see requestSpacing),
// how long.
func (r *Reconciler) listingAge(obj *v1alpha1.Sync, url string) (time.Duration, time.Duration) {
	age := maxAge(r.interval(obj))
	if changed, ok := specChangedAt(obj); ok {
		// A spec the agent has not acted on yet (a new Sync, or a changed one)
		// comes with a push more often than not: it is answered by a listing
		// made after the change, never one cached before it.
		age = max(0, min(age, r.state.now().Sub(changed)))
	}
	if !reconcileRequested(obj) {
		return age, 0
	}
	// A request for a reconcile means "look at git now": whichever event
	// started this reconcile, the answer must not come from a listing older
	// than the request, and it forces one at most once per minimum interval.
	force, shared, after := r.state.requests.admit(client.ObjectKeyFromObject(obj), url,
		obj.GetAnnotations()[v1alpha1.ReconcileRequestedAnnotation], r.state.now(), r.state.minInterval)
	switch {
	case force:
		// What every caller learnt of the repository before the request is
		// stale, whatever credentials it was learnt with.
		r.Agent.Source.Refresh(url)
		return 0, 0
	case shared > 0:
		return min(shared, age), 0
	}
	return age, after
}

// withAuth completes req with the credentials the Sync's secretRef names, and
// the keys its spec.source.verify trusts: every fetch of the Sync's (its ref,
// a pin, a rollback) is verified so.
func (r *Reconciler) withAuth(ctx context.Context, obj *v1alpha1.Sync, id Identity, req source.Request) (source.Request, error) {
	auth, err := r.sourceAuth(ctx, obj, id)
	req.Auth = auth
	if err != nil {
		return req, err
	}
	req.Verify, err = r.verification(ctx, obj, id)
	return req, err
}

// sourceAuth reads the credentials the Sync's secretRef names (none without
// one), and follows the Secret so that a rotation queues the Sync.
func (r *Reconciler) sourceAuth(ctx context.Context, obj *v1alpha1.Sync, id Identity) (source.Auth, error) {
	spec := obj.Spec.Source
	if spec.SecretRef == nil {
		r.Observers.SecretWatch.ForgetField(client.ObjectKeyFromObject(obj), fieldSourceSecret)
		return source.Auth{}, nil
	}
	auth, version, err := readAuth(ctx, id, obj.Namespace, spec.SecretRef.Name)
	if err == nil || apierrors.IsNotFound(err) {
		// A rotation (or the Secret's creation) queues the Sync at once.
		r.Observers.SecretWatch.Track(client.ObjectKeyFromObject(obj), fieldSourceSecret, id.secretsUser(), id.Secrets, obj.Namespace, spec.SecretRef.Name, version)
	}
	if err != nil {
		return source.Auth{}, &source.FetchError{URL: sourceURL(obj), Ref: sourceRefLabel(obj), Reason: secretReason(err), Err: err}
	}
	return auth, nil
}

// reconcileRequested reports whether obj carries a request for a reconcile that
// no status has answered yet.
func reconcileRequested(obj *v1alpha1.Sync) bool {
	requested := obj.GetAnnotations()[v1alpha1.ReconcileRequestedAnnotation]
	return requested != "" && requested != obj.Status.LastHandledReconcileAt
}

// readAuth reads a credentials Secret straight from the API server, as the Sync's
// identity (id.Secrets: an impersonating client, or the manager's API reader): a
// cached client would start a cluster-wide watch of every Secret, which Tether has
// no right to and no need of. A Secret the identity may not read is never read by
// anyone else on its behalf. Errors name the Secret and never hold its values.
// It also returns the resourceVersion read.
func readAuth(ctx context.Context, id Identity, namespace, name string) (source.Auth, string, error) {
	if id.Secrets == nil {
		return source.Auth{}, "", errors.New("spec.source.secretRef is set but this agent reads no Secrets")
	}
	secret := &corev1.Secret{}
	if err := id.Secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return source.Auth{}, "", fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	auth := source.Auth{
		Username:    string(secret.Data[secretUsername]),
		Password:    string(secret.Data[secretPassword]),
		BearerToken: string(secret.Data[secretBearerToken]),
		CAFile:      secret.Data[secretCAFile],
		Identity:    secret.Data[secretIdentity],
		KnownHosts:  secret.Data[secretKnownHosts],
	}
	if auth.IsZero() {
		keys := []string{secretUsername, secretPassword, secretBearerToken, secretCAFile, secretIdentity, secretKnownHosts}
		return source.Auth{}, secret.ResourceVersion, fmt.Errorf("the Secret %s/%s has none of the keys %s", namespace, name, strings.Join(keys, ", "))
	}
	return auth, secret.ResourceVersion, nil
}

func secretReason(err error) string {
	switch {
	case apierrors.IsNotFound(err):
		return v1alpha1.ReasonSecretNotFound
	case apierrors.IsForbidden(err):
		return v1alpha1.ReasonForbidden
	}
	return v1alpha1.ReasonSecretUnreadable
}

// sourceURL is where obj's desired state comes from: its git repository, or
// its chart repository.
func sourceURL(obj *v1alpha1.Sync) string {
	if c := obj.Spec.Source.Chart; c != nil {
		return c.Repository
	}
	if o := obj.Spec.Source.OCI; o != nil {
		return o.URL
	}
	return obj.Spec.Source.URL
}

// sourceRefLabel names what of sourceURL obj follows in messages: a ref, or a
// chart and its version range.
func sourceRefLabel(obj *v1alpha1.Sync) string {
	if c := obj.Spec.Source.Chart; c != nil {
		return strings.TrimSpace(c.Name + " " + c.Version)
	}
	if o := obj.Spec.Source.OCI; o != nil {
		return source.ArtifactRequest{Ref: o.Ref}.Label()
	}
	return refLabel(obj.Spec.Source.Ref)
}

// refLabel names a ref in messages, a pinned commit included.
func refLabel(ref v1alpha1.GitRef) string {
	if s := ref.String(); s != "" {
		return s
	}
	return ref.Commit
}

// ReadSourceAuth reads the credentials that s's spec.source.secretRef names,
// through secrets (a client acting as whoever should read them), as the agent
// does. Errors name the Secret and never hold its values.
func ReadSourceAuth(ctx context.Context, secrets client.Reader, s *v1alpha1.Sync) (source.Auth, error) {
	if s.Spec.Source.SecretRef == nil {
		return source.Auth{}, nil
	}
	auth, _, err := readAuth(ctx, Identity{Secrets: secrets}, s.Namespace, s.Spec.Source.SecretRef.Name)
	return auth, err
}

// WithAuthAs completes req with the credentials of Secret name in as's
// namespace, read as the identity as acts as (its serviceAccountName, else the
// agent's default account, else the agent itself), as a Sync reads its
// spec.source.secretRef: straight from the API server, never for an identity
// that may not read it. A SyncSet's git generator reads its credentials so, as
// the Syncs it makes would. A failure is a *source.FetchError of req with the
// Secret's reason (SecretNotFound, Forbidden, SecretUnreadable); it names the
// Secret and never holds its values.
func (r *Reconciler) WithAuthAs(ctx context.Context, as *v1alpha1.Sync, name string, req source.Request) (source.Request, error) {
	id, err := r.identity(ctx, as)
	if err != nil {
		return req, err
	}
	auth, _, err := readAuth(ctx, id, as.Namespace, name)
	if err != nil {
		return req, &source.FetchError{URL: req.URL, Ref: refLabel(req.Ref), Reason: secretReason(err), Err: err}
	}
	req.Auth = auth
	return req, nil
}

// WithVerificationAs completes req with the keys that verify's Secret, of
// as's namespace, trusts, read as the identity as acts as (see WithAuthAs): a
// SyncSet's git generator verifies what it reads so. A failure is a
// *source.FetchError of req with the Secret's reason (SecretNotFound,
// Forbidden, SecretUnreadable) or VerificationKeysInvalid.
func (r *Reconciler) WithVerificationAs(ctx context.Context, as *v1alpha1.Sync, verify *v1alpha1.SourceVerify, req source.Request) (source.Request, error) {
	id, err := r.identity(ctx, as)
	if err != nil {
		return req, err
	}
	fail := func(reason string, err error) (source.Request, error) {
		return req, &source.FetchError{URL: req.URL, Ref: refLabel(req.Ref), Reason: reason, Err: err}
	}
	if id.Secrets == nil {
		return fail(v1alpha1.ReasonSecretUnreadable, fmt.Errorf("verify names the Secret %s but this agent reads no Secrets", verify.SecretRef.Name))
	}
	if req.Verify, err = readVerification(ctx, id.Secrets, as.Namespace, verify); err != nil {
		return fail(verificationReason(err), err)
	}
	return req, nil
}
