package sync_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// denyLabel marks the objects the test's admission webhook rejects.
const denyLabel = "test.tether.dev/deny"

// denyingWebhook registers a validating admission webhook, served on loopback by the
// test, that rejects every ConfigMap in namespace ns labelled denyLabel with a message
// of msgBytes, the way a policy engine with long explanations does. It returns how many
// requests the webhook has answered so far.
func denyingWebhook(t *testing.T, c client.Client, ns string, msgBytes int) func() int {
	t.Helper()
	served := make(chan struct{}, 1<<16)
	msg := strings.Repeat("policy require-approved-config forbids this ConfigMap. ", msgBytes/55+1)[:msgBytes]
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		served <- struct{}{}
		var obj metav1.PartialObjectMetadata
		_ = json.Unmarshal(review.Request.Object.Raw, &obj)
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if obj.Labels[denyLabel] == "true" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: msg}
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(review)
	}))
	caPEM, cert := selfSigned(t)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "deny.test.tether.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr.To(srv.URL + "/validate"), CABundle: caPEM},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			TimeoutSeconds:          ptr.To[int32](10),
		}},
	}
	must(t, c.Create(t.Context(), hook))
	t.Cleanup(func() { _ = c.Delete(t.Context(), hook) })
	return func() int { return len(served) }
}

// selfSigned returns a certificate for 127.0.0.1, as PEM for a caBundle and as a
// tls.Certificate for the server.
func selfSigned(t *testing.T) ([]byte, tls.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "deny-webhook"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	must(t, err)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	must(t, err)
	return certPEM, cert
}
