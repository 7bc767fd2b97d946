package sync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/plan"
	"tether.dev/tether/source"
	"tether.dev/tether/source/oci"
)

// SecretWatch fields of spec.source.oci.
const (
	fieldOCISecret         = "spec.source.oci.secretRef"
	fieldOCIVerifySecret   = "spec.source.oci.verify.secretRef"
	fieldChartVerifySecret = "spec.source.chart.verify.secretRef"
)

// fetchArtifact reads the desired state of a Sync of an OCI artifact
// (spec.source.oci): its tag, range or digest resolved (a tag list and a
// tag's manifest shared with every Sync of the repository and credentials
// for an interval, listingAge), its signature checked when it verifies, and
// its path rendered as a commit's path is. The revision is
// "tag@sha256:<manifest digest>".
func (r *Reconciler) fetchArtifact(ctx context.Context, obj *v1alpha1.Sync, id Identity, dec *source.Decryption, st *plan.Status) (*source.Snapshot, error) {
	fetchStart := r.state.now()
	req, wait, err := r.artifactRequest(ctx, obj, id)
	if err != nil {
		return nil, err
	}
	if wait > 0 {
		st.RequestWaits(obj, wait)
	}
	rev, err := r.Agent.Source.FetchArtifact(ctx, req)
	r.Observers.Metrics.ObserveFetch(obj, r.state.now().Sub(fetchStart), err)
	if err != nil {
		return nil, err
	}
	st.Fetched(rev.String())
	snap, err := r.renderAgain(ctx, obj, id, dec, rev, obj.Spec.Source.PathOrDefault())
	if err != nil {
		return nil, err
	}
	st.Rendered(rev.String(), len(snap.Objects))
	return snap, nil
}

// artifactRequest builds what to fetch for a Sync of an OCI artifact: its
// repository and ref, the credentials and keys its Secrets hold (read as the
// Sync's identity, watched), and how old a shared answer may be.
func (r *Reconciler) artifactRequest(ctx context.Context, obj *v1alpha1.Sync, id Identity) (source.ArtifactRequest, time.Duration, error) {
	spec := obj.Spec.Source.OCI
	req := source.ArtifactRequest{URL: spec.URL, Ref: spec.Ref}
	var wait time.Duration
	req.MaxAge, wait = r.listingAge(obj, spec.URL)
	key := client.ObjectKeyFromObject(obj)
	fail := func(reason string, err error) (source.ArtifactRequest, time.Duration, error) {
		return req, wait, &source.FetchError{URL: spec.URL, Ref: req.Label(), Reason: reason, Err: err}
	}
	if spec.SecretRef == nil {
		r.Observers.SecretWatch.ForgetField(key, fieldOCISecret)
	} else {
		secret, err := r.readSecret(ctx, obj, id, fieldOCISecret, spec.SecretRef.Name)
		if err != nil {
			return fail(secretReason(err), fmt.Errorf("reading the Secret %s/%s of spec.source.oci: %w", obj.Namespace, spec.SecretRef.Name, err))
		}
		if req.Credentials, err = registryCredentials(secret, spec.URL); err != nil {
			return fail(v1alpha1.ReasonInvalidCredentials, err)
		}
	}
	var err error
	if req.Keys, err = r.cosignKeys(ctx, obj, id, fieldOCIVerifySecret, spec.Verify); err != nil {
		return fail(verificationReason(err), err)
	}
	return req, wait, nil
}

// cosignKeys reads the cosign public keys verify's Secret holds, as the
// Sync's identity, watched under field; nil when verify is nil. A failure
// names the Secret (verificationReason classes it), never a key.
func (r *Reconciler) cosignKeys(ctx context.Context, obj *v1alpha1.Sync, id Identity, field string, verify *v1alpha1.OCIVerify) (*source.CosignKeys, error) {
	if verify == nil {
		r.Observers.SecretWatch.ForgetField(client.ObjectKeyFromObject(obj), field)
		return nil, nil
	}
	name := verify.SecretRef.Name
	secret, err := r.readSecret(ctx, obj, id, field, name)
	if err != nil {
		return nil, fmt.Errorf("reading the Secret %s/%s of %s: %w", obj.Namespace, name, strings.TrimSuffix(field, ".secretRef"), err)
	}
	keys, err := source.ParseCosignKeys(secret.Data)
	if err != nil {
		return nil, &keysError{namespace: obj.Namespace, name: name, field: strings.TrimSuffix(field, ".secretRef"), err: err}
	}
	return keys, nil
}

// readSecret reads Secret name of obj's namespace as the Sync's identity,
// straight from the API server (as readAuth does), and watches it (metadata
// only) under field, so that a rotation queues the Sync at once.
func (r *Reconciler) readSecret(ctx context.Context, obj *v1alpha1.Sync, id Identity, field, name string) (*corev1.Secret, error) {
	if id.Secrets == nil {
		return nil, errors.New("this agent reads no Secrets")
	}
	secret := &corev1.Secret{}
	err := id.Secrets.Get(ctx, client.ObjectKey{Namespace: obj.Namespace, Name: name}, secret)
	if err == nil || apierrors.IsNotFound(err) {
		r.Observers.SecretWatch.Track(client.ObjectKeyFromObject(obj), field, id.secretsUser(), id.Secrets, obj.Namespace, name, secret.ResourceVersion)
	}
	return secret, err
}

// registryCredentials reads a registry's credentials from a Secret: a
// kubernetes.io/dockerconfigjson Secret's entry for url's registry, else the
// keys of a git credentials Secret (username and password, or bearerToken;
// caFile either way). Errors name the Secret, never a value.
func registryCredentials(secret *corev1.Secret, url string) (source.RegistryCredentials, error) {
	repo, err := oci.ParseURL(url)
	if err != nil {
		return source.RegistryCredentials{}, err
	}
	var creds source.RegistryCredentials
	if data, ok := secret.Data[corev1.DockerConfigJsonKey]; ok {
		if creds, err = source.ParseDockerConfig(data, repo.Registry); err != nil {
			return creds, fmt.Errorf("the Secret %s/%s: %s: %w", secret.Namespace, secret.Name, corev1.DockerConfigJsonKey, err)
		}
	} else {
		creds = source.RegistryCredentials{Username: string(secret.Data[secretUsername]), Password: string(secret.Data[secretPassword]), AccessToken: string(secret.Data[secretBearerToken])}
		if creds.Username == "" && creds.Password == "" && creds.AccessToken == "" && len(secret.Data[secretCAFile]) == 0 {
			return creds, fmt.Errorf("the Secret %s/%s has none of the keys %s, %s, %s, %s", secret.Namespace, secret.Name, corev1.DockerConfigJsonKey, secretUsername, secretPassword, secretBearerToken)
		}
	}
	creds.CAFile = secret.Data[secretCAFile]
	return creds, nil
}

// ReadArtifactRequest builds what to fetch for s's spec.source.oci, its
// credentials and cosign keys read through secrets (a client acting as
// whoever should read them), for the CLI's diff: with useSecrets false,
// neither is read and skipped names what was not. Errors name the Secret
// and never hold its values.
func ReadArtifactRequest(ctx context.Context, secrets client.Reader, s *v1alpha1.Sync, useSecrets bool) (req source.ArtifactRequest, skipped []string, err error) {
	spec := s.Spec.Source.OCI
	req = source.ArtifactRequest{URL: spec.URL, Ref: spec.Ref}
	read := func(field, name string) (*corev1.Secret, error) {
		secret := &corev1.Secret{}
		if err := secrets.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: name}, secret); err != nil {
			return nil, fmt.Errorf("reading the Secret %s/%s of %s: %w", s.Namespace, name, field, err)
		}
		return secret, nil
	}
	if spec.SecretRef != nil {
		if !useSecrets {
			skipped = append(skipped, "spec.source.oci.secretRef")
		} else {
			secret, err := read("spec.source.oci.secretRef", spec.SecretRef.Name)
			if err != nil {
				return req, skipped, err
			}
			if req.Credentials, err = registryCredentials(secret, spec.URL); err != nil {
				return req, skipped, err
			}
		}
	}
	if spec.Verify != nil {
		secret, err := read("spec.source.oci.verify.secretRef", spec.Verify.SecretRef.Name)
		if err != nil {
			return req, skipped, err
		}
		if req.Keys, err = source.ParseCosignKeys(secret.Data); err != nil {
			return req, skipped, fmt.Errorf("the Secret %s/%s of spec.source.oci.verify: %w", s.Namespace, spec.Verify.SecretRef.Name, err)
		}
	}
	return req, skipped, nil
}
