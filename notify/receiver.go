package notify

import (
	"context"
	"fmt"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
)

// Secret keys a Notifier's Secrets hold.
const (
	KeyAddress  = "address"
	KeyToken    = "token"
	KeyUsername = "username"
	KeyPassword = "password"
	KeyCA       = "ca.crt"
	KeyProxy    = "proxy"
)

// ResolveReceiver reads what a Notifier needs to send: its address (spec, or its
// Secret's address), token and basic credentials, and the CA of certSecretRef.
// secrets reads the Notifier's namespace only; the agent reads as itself, `tether
// notify test` as its user. Errors name the Secret and key, never a value.
func ResolveReceiver(ctx context.Context, secrets client.Reader, nf *v1alpha1.Notifier) (Receiver, []byte, error) {
	r := Receiver{Type: nf.Spec.Type, Address: nf.Spec.Address, Channel: nf.Spec.Channel, Username: nf.Spec.Username}
	if ref := nf.Spec.SecretRef; ref != nil {
		s, err := readSecret(ctx, secrets, nf.Namespace, ref.Name)
		if err != nil {
			return Receiver{}, nil, err
		}
		if a := string(s.Data[KeyAddress]); a != "" {
			r.Address = a
		}
		r.Token, r.BasicUser, r.Password = string(s.Data[KeyToken]), string(s.Data[KeyUsername]), string(s.Data[KeyPassword])
		if p := string(s.Data[KeyProxy]); p != "" {
			if u, err := url.Parse(p); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return Receiver{}, nil, fmt.Errorf("Secret %s/%s: the key %q is not an http(s) URL", nf.Namespace, ref.Name, KeyProxy)
			}
			r.Proxy = p
		}
	}
	if r.Address == "" {
		return Receiver{}, nil, fmt.Errorf("Notifier %s/%s has no address: set spec.address or the key %q of its Secret", nf.Namespace, nf.Name, KeyAddress)
	}
	if nf.Spec.Type.IsCommitStatus() {
		if _, err := RepositoryOf(nf.Spec.Type, r.Address); err != nil {
			return Receiver{}, nil, fmt.Errorf("Notifier %s/%s: %w", nf.Namespace, nf.Name, err)
		}
	}
	var ca []byte
	if ref := nf.Spec.CertSecretRef; ref != nil {
		s, err := readSecret(ctx, secrets, nf.Namespace, ref.Name)
		if err != nil {
			return Receiver{}, nil, err
		}
		if ca = s.Data[KeyCA]; len(ca) == 0 {
			return Receiver{}, nil, fmt.Errorf("Secret %s/%s has no key %q", nf.Namespace, ref.Name, KeyCA)
		}
	}
	return r, ca, nil
}

func readSecret(ctx context.Context, secrets client.Reader, namespace, name string) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		return nil, fmt.Errorf("reading Secret %s/%s: %w", namespace, name, err)
	}
	return s, nil
}

// TestRequest builds the request `tether notify test` sends through a Notifier:
// a test message, a pending commit status of the commit sha for a chat or a
// commit-status receiver, a resolved alert for Alertmanager.
func TestRequest(r Receiver, nf *v1alpha1.Notifier, sha string) (Request, error) {
	switch {
	case r.Type.IsCommitStatus():
		return CommitStatusRequest(r, nf.Namespace, "notify-test", Commit{SHA: sha, State: CommitPending, Description: "a test of Notifier " + nf.Name})
	case r.Type == v1alpha1.NotifierAlertmanager:
		return AlertRequest(r, nf.Namespace, "notify-test", Alert{}, time.Now())
	}
	return ChatRequest(r, Message{Events: []Event{{
		Namespace: nf.Namespace, Sync: nf.Name, Kind: EventTest, Severity: v1alpha1.SeverityInfo,
		Message: "a test message from Tether through Notifier " + nf.Namespace + "/" + nf.Name, Time: time.Now(),
	}}})
}
