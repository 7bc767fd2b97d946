package controlplane

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Identities of the control plane's clients. The controller-manager and scheduler use
// the names Kubernetes' bootstrap RBAC binds to their roles, so they run with the
// least privilege they run with in a kubeadm cluster, and an RBAC mistake of theirs
// shows here as it would there. kwok has no bootstrap role (its own manifests grant it
// a broad ClusterRole), so it is a cluster admin.
const (
	adminUser             = "tether-test-admin"
	controllerManagerUser = "system:kube-controller-manager"
	schedulerUser         = "system:kube-scheduler"
	kwokUser              = "kwok-controller"
	mastersGroup          = "system:masters"
	frontProxyClientUser  = "front-proxy-client"
)

// certValidity is long enough for a demo left running, short enough to be obviously
// throw-away.
const certValidity = 7 * 24 * time.Hour

// keyPair is a certificate (or, for the service-account key, none) and its key, both
// also written as PEM files.
type keyPair struct {
	cert     *x509.Certificate
	key      *ecdsa.PrivateKey
	certPEM  []byte
	keyPEM   []byte
	certFile string
	keyFile  string
}

// pki is every certificate and key one control plane uses, made fresh at start. All
// keys are ECDSA P-256: generating them takes microseconds where RSA takes tens of
// milliseconds each, and every component accepts them.
type pki struct {
	ca           *keyPair // signs serving and client certificates; the client CA
	frontProxyCA *keyPair // signs the aggregation proxy's client certificate
	serving      *keyPair // 127.0.0.1 and the in-cluster names of the kubernetes service
	frontProxy   *keyPair // the apiserver's client certificate towards aggregated APIs
	serviceAcct  *keyPair // signs and verifies service-account tokens (no certificate)
	admin        *keyPair
	controllerManager,
	scheduler,
	kwok *keyPair
}

// kubernetesServiceIP is the first address of the service range, which the apiserver
// gives to the "kubernetes" service; in-cluster clients dial it.
var kubernetesServiceIP = net.IPv4(10, 0, 0, 1)

func newPKI(dir string, workloads bool) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var p pki
	var err error
	if p.ca, err = newCA(dir, "ca", "tether-test-ca"); err != nil {
		return nil, err
	}
	if p.frontProxyCA, err = newCA(dir, "front-proxy-ca", "tether-test-front-proxy-ca"); err != nil {
		return nil, err
	}
	serving := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), kubernetesServiceIP},
		DNSNames: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
			"kubernetes.default.svc.cluster.local"},
	}
	if p.serving, err = issue(p.ca, dir, "serving", serving); err != nil {
		return nil, err
	}
	if p.frontProxy, err = issue(p.frontProxyCA, dir, "front-proxy-client", clientTemplate(frontProxyClientUser)); err != nil {
		return nil, err
	}
	if p.serviceAcct, err = newKey(dir, "service-account"); err != nil {
		return nil, err
	}
	if p.admin, err = issue(p.ca, dir, "admin", clientTemplate(adminUser, mastersGroup)); err != nil {
		return nil, err
	}
	if !workloads {
		return &p, nil
	}
	if p.controllerManager, err = issue(p.ca, dir, "kube-controller-manager", clientTemplate(controllerManagerUser)); err != nil {
		return nil, err
	}
	if p.scheduler, err = issue(p.ca, dir, "kube-scheduler", clientTemplate(schedulerUser)); err != nil {
		return nil, err
	}
	if p.kwok, err = issue(p.ca, dir, "kwok", clientTemplate(kwokUser, mastersGroup)); err != nil {
		return nil, err
	}
	return &p, nil
}

// clientTemplate is a client certificate for user in groups: the apiserver reads the
// user from the common name and the groups from the organizations.
func clientTemplate(user string, groups ...string) *x509.Certificate {
	return &x509.Certificate{
		Subject:     pkix.Name{CommonName: user, Organization: groups},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
}

func newCA(dir, name, commonName string) (*keyPair, error) {
	kp, err := newKey(dir, name)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: commonName},
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if err := kp.sign(dir, name, tmpl, tmpl, kp.key); err != nil {
		return nil, err
	}
	return kp, nil
}

// issue signs a certificate for a new key, made from tmpl, with ca.
func issue(ca *keyPair, dir, name string, tmpl *x509.Certificate) (*keyPair, error) {
	kp, err := newKey(dir, name)
	if err != nil {
		return nil, err
	}
	tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
	if err := kp.sign(dir, name, tmpl, ca.cert, ca.key); err != nil {
		return nil, err
	}
	return kp, nil
}

// newKey makes a key and writes it to dir/name.key in SEC 1 form ("EC PRIVATE KEY"):
// the apiserver reads --service-account-key-file as public keys, and its parser
// finds the public half of an EC private key only in that form, not in PKCS #8.
func newKey(dir, name string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", name, err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", name, err)
	}
	kp := &keyPair{
		key:     key,
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}),
		keyFile: filepath.Join(dir, name+".key"),
	}
	if err := os.WriteFile(kp.keyFile, kp.keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("key %s: %w", name, err)
	}
	return kp, nil
}

// sign makes kp's certificate from tmpl, signed by parent with signer, and writes it to
// dir/name.crt.
func (kp *keyPair) sign(dir, name string, tmpl, parent *x509.Certificate, signer crypto.Signer) error {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	now := time.Now()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour) // tolerate a little clock skew
	tmpl.NotAfter = now.Add(certValidity)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, kp.key.Public(), signer)
	if err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	if kp.cert, err = x509.ParseCertificate(der); err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	kp.certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kp.certFile = filepath.Join(dir, name+".crt")
	if err := os.WriteFile(kp.certFile, kp.certPEM, 0o644); err != nil {
		return fmt.Errorf("certificate %s: %w", name, err)
	}
	return nil
}
