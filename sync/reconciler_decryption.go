package sync

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
)

// decryption reads the keys obj's spec.decryption names, as the Sync's identity,
// straight from the API server (as readAuth reads credentials), and returns how
// its render decrypts; nil when the Sync decrypts nothing. The keys Secret is
// watched (metadata only), so that creating or rotating it renders again at
// once. A Secret that is missing, holds no key or cannot be read stalls the
// Sync before anything is rendered or applied; errors name the Secret and the
// entry at fault, never a key.
func (r *Reconciler) decryption(ctx context.Context, obj *v1alpha1.Sync, id Identity) (*source.Decryption, error) {
	key := client.ObjectKeyFromObject(obj)
	spec := obj.Spec.Decryption
	if spec == nil || spec.SecretRef == nil {
		r.Observers.SecretWatch.ForgetField(key, fieldDecryptionSecret)
		r.keysInUse(key, "")
		if spec == nil {
			return nil, nil
		}
		// No keys: a SOPS file fails to open, and requireEncryption still holds.
		return &source.Decryption{RequireEncryption: spec.RequireEncryption}, nil
	}
	keys, version, err := readKeys(ctx, id, obj.Namespace, spec.SecretRef.Name)
	var refused *RefusedError
	if err == nil || (errors.As(err, &refused) && refused.Reason == v1alpha1.ReasonDecryptionKeysNotFound) {
		// Its creation, or a fix, queues the Sync at once.
		r.Observers.SecretWatch.Track(key, fieldDecryptionSecret, id.secretsUser(), id.Secrets, obj.Namespace, spec.SecretRef.Name, version)
	}
	if err != nil {
		return nil, err
	}
	r.keysInUse(key, keys.Digest())
	return &source.Decryption{Keys: keys, RequireEncryption: spec.RequireEncryption}, nil
}

// keysInUse records that the Sync key renders with the keys of digest now, and
// drops the renders of the keys it held before from the cache ("" for none).
func (r *Reconciler) keysInUse(key types.NamespacedName, digest string) {
	var old any
	var had bool
	if digest == "" {
		old, had = r.state.keys.LoadAndDelete(key)
	} else {
		old, had = r.state.keys.Swap(key, digest)
	}
	if had && old.(string) != digest {
		r.Agent.Source.ForgetKeys(old.(string))
	}
}

// readKeys reads and parses a keys Secret as id, and returns its
// resourceVersion ("" when it was not found). A Secret that is not there, may
// not be read or holds no usable key is a *RefusedError; other failures (the
// API server unreachable) are returned as they are, to be retried.
func readKeys(ctx context.Context, id Identity, namespace, name string) (*source.Keys, string, error) {
	if id.Secrets == nil {
		return nil, "", &RefusedError{Reason: v1alpha1.ReasonDecryptionKeysNotFound, Msg: "spec.decryption.secretRef is set but this agent reads no Secrets"}
	}
	secret := &corev1.Secret{}
	err := id.Secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		return nil, "", &RefusedError{Reason: v1alpha1.ReasonDecryptionKeysNotFound, Msg: fmt.Sprintf(
			"the keys Secret %s/%s that spec.decryption.secretRef names does not exist; nothing is decrypted or applied until it does", namespace, name)}
	case apierrors.IsForbidden(err):
		return nil, "", &RefusedError{Reason: v1alpha1.ReasonForbidden, Msg: fmt.Sprintf("reading the keys Secret %s/%s: %v", namespace, name, err)}
	case err != nil:
		return nil, "", fmt.Errorf("reading the keys Secret %s/%s: %w", namespace, name, err)
	}
	keys, err := source.ParseKeys(secret.Data)
	if err != nil {
		return nil, secret.ResourceVersion, &RefusedError{Reason: v1alpha1.ReasonDecryptionKeysNotFound, Msg: fmt.Sprintf(
			"the keys Secret %s/%s %v", namespace, name, keysCause(err))}
	}
	return keys, secret.ResourceVersion, nil
}

// keysCause words a ParseKeys failure after the Secret's name.
func keysCause(err error) string {
	if errors.Is(err, source.ErrNoKeys) {
		return err.Error()
	}
	return "holds a key that does not parse: " + err.Error()
}

// ReadDecryption reads the keys s's spec.decryption.secretRef names, through
// secrets (a client acting as whoever should read them), as the agent does, and
// returns how its renders decrypt; nil when s decrypts nothing. Errors name the
// Secret and never hold a key.
func ReadDecryption(ctx context.Context, secrets client.Reader, s *v1alpha1.Sync) (*source.Decryption, error) {
	spec := s.Spec.Decryption
	switch {
	case spec == nil:
		return nil, nil
	case spec.SecretRef == nil:
		return &source.Decryption{RequireEncryption: spec.RequireEncryption}, nil
	}
	keys, _, err := readKeys(ctx, Identity{Secrets: secrets}, s.Namespace, spec.SecretRef.Name)
	if err != nil {
		return nil, err
	}
	return &source.Decryption{Keys: keys, RequireEncryption: spec.RequireEncryption}, nil
}
