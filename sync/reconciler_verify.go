package sync

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/source/verify"
)

// fieldVerifySecret is the SecretWatch field of spec.source.verify.
const fieldVerifySecret = "spec.source.verify.secretRef"

// verification reads the keys obj's spec.source.verify trusts, as the Sync's
// identity, straight from the API server (as readAuth reads credentials), and
// returns what Fetch checks revisions with; nil when the Sync verifies nothing.
// The Secret is watched (metadata only), so that adding or removing a key
// fetches again at once. A Secret that is missing, may not be read or holds
// no usable key is a *source.FetchError: the revision applied last stays
// applied and keeps healing. Errors name the Secret and the entry at fault,
// never a key.
func (r *Reconciler) verification(ctx context.Context, obj *v1alpha1.Sync, id Identity) (*source.Verification, error) {
	key := client.ObjectKeyFromObject(obj)
	spec := obj.Spec.Source.Verify
	if spec == nil || obj.Spec.Source.Chart != nil {
		r.Observers.SecretWatch.ForgetField(key, fieldVerifySecret)
		r.state.trusted.Delete(key)
		return nil, nil
	}
	name := spec.SecretRef.Name
	fail := func(reason string, err error) (*source.Verification, error) {
		return nil, &source.FetchError{URL: sourceURL(obj), Ref: sourceRefLabel(obj), Reason: reason, Err: err}
	}
	if id.Secrets == nil {
		return fail(v1alpha1.ReasonSecretUnreadable, fmt.Errorf("spec.source.verify names the Secret %s but this agent reads no Secrets", name))
	}
	secret := &corev1.Secret{}
	err := id.Secrets.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: name}, secret)
	if err == nil || apierrors.IsNotFound(err) {
		// Its creation, or a change of keys, queues the Sync at once.
		r.Observers.SecretWatch.Track(key, fieldVerifySecret, id.secretsUser(), id.Secrets, obj.Namespace, name, secret.ResourceVersion)
	}
	if err != nil {
		return fail(secretReason(err), readingTrustedKeys(obj.Namespace, name, err))
	}
	read := trustedKeys{uid: string(secret.UID), version: secret.ResourceVersion}
	if last, ok := r.state.trusted.Load(key); ok && last.(trustedKeys).uid == read.uid && last.(trustedKeys).version == read.version {
		read.keys = last.(trustedKeys).keys
	} else if read.keys, err = trustedKeysOf(secret); err != nil {
		r.state.trusted.Delete(key)
		return fail(verificationReason(err), err)
	}
	r.state.trusted.Store(key, read)
	return &source.Verification{Mode: spec.ModeOrDefault(), Keys: read.keys}, nil
}

// trustedKeys are the keys parsed from one version of a keys Secret.
type trustedKeys struct {
	uid, version string
	keys         *verify.Keys
}

// ReadVerification reads the keys s's spec.source.verify trusts through
// secrets (a client acting as whoever should read them), as the agent does,
// for the CLI's diff: nil when s verifies nothing. Errors name the Secret and
// the entry at fault, never a key.
func ReadVerification(ctx context.Context, secrets client.Reader, s *v1alpha1.Sync) (*source.Verification, error) {
	if s.Spec.Source.Verify == nil || s.Spec.Source.Chart != nil {
		return nil, nil
	}
	return readVerification(ctx, secrets, s.Namespace, s.Spec.Source.Verify)
}

// readVerification reads and parses spec's keys Secret of namespace through
// secrets, uncached (the reconciler keeps its own, per version): the CLI's
// diff and a SyncSet's git generator. verificationReason classes its errors.
func readVerification(ctx context.Context, secrets client.Reader, namespace string, spec *v1alpha1.SourceVerify) (*source.Verification, error) {
	secret := &corev1.Secret{}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: spec.SecretRef.Name}, secret); err != nil {
		return nil, readingTrustedKeys(namespace, spec.SecretRef.Name, err)
	}
	keys, err := trustedKeysOf(secret)
	if err != nil {
		return nil, err
	}
	return &source.Verification{Mode: spec.ModeOrDefault(), Keys: keys}, nil
}

// verificationReason is the condition's reason for a failure to read a keys
// Secret: VerificationKeysInvalid when it holds no usable key, else the
// Secret's (SecretNotFound, Forbidden, SecretUnreadable).
func verificationReason(err error) string {
	var invalid *keysError
	if errors.As(err, &invalid) {
		return v1alpha1.ReasonVerificationKeysInvalid
	}
	return secretReason(err)
}

func readingTrustedKeys(namespace, name string, err error) error {
	return fmt.Errorf("reading the Secret %s/%s of spec.source.verify: %w", namespace, name, err)
}

// trustedKeysOf parses a keys Secret; an error (a *keysError) names it and
// the entry at fault.
func trustedKeysOf(secret *corev1.Secret) (*verify.Keys, error) {
	keys, err := verify.ParseKeys(secret.Data)
	if err != nil {
		return nil, &keysError{namespace: secret.Namespace, name: secret.Name, err: err}
	}
	return keys, nil
}

// keysError is a keys Secret that holds no usable key.
type keysError struct {
	namespace, name string
	// field names the Secret's field; "" is spec.source.verify.
	field string
	err   error
}

func (e *keysError) Error() string {
	field := e.field
	if field == "" {
		field = "spec.source.verify"
	}
	return fmt.Sprintf("the Secret %s/%s of %s: %v", e.namespace, e.name, field, e.err)
}

func (e *keysError) Unwrap() error { return e.err }
