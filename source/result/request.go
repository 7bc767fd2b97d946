package result

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source/cosign"
	"tether.dev/tether/source/verify"
)

// Request names the desired state to fetch: a repository and a ref.
type Request struct {
	URL string
	Ref v1alpha1.GitRef
	// MaxAge lets Fetch answer from a ref listing of the same URL made at most
	// this long ago, by any caller and for any ref, without asking the remote.
	// Syncs that share a repository thus share one ref listing per interval,
	// whichever branches, tags or ranges they follow, and a reconcile triggered
	// by drift in the cluster does not touch git. Zero always asks. Listings are
	// shared only between callers with the same Auth.
	MaxAge time.Duration
	// Auth holds credentials for the repository; the zero value sends none (but
	// credentials written into an http(s) URL are still used).
	Auth Auth
	// Tenant names who asks (the Sync's namespace): a git host's
	// MaxFetchesPerHost places and the cache's MaxCacheBytes are shared fairly
	// between tenants, so that one tenant's fetches cannot make another's wait
	// nor leave it no room. Callers of one tenant may leave it empty.
	Tenant string
	// Verify, when set, has the revision's signatures checked before it is
	// returned (spec.source.verify): a revision that fails is a FetchError
	// with the reason RevisionNotVerified, and a verified one names its
	// signer (Revision.Signer).
	Verify *Verification
}

// Verification is spec.source.verify with its keys read.
type Verification struct {
	// Mode is v1alpha1.VerifyHEAD, VerifyTag or VerifyTagAndHEAD ("": HEAD).
	Mode string
	// Keys are the keys whose signatures are trusted.
	Keys *verify.Keys
}

// ChartRequest names a packaged chart to fetch from a chart repository (an
// index.yaml over http(s)): a Sync's spec.source.chart.
type ChartRequest struct {
	// Repository is the repository's URL; its index is Repository/index.yaml.
	Repository string
	// Name is the chart's name in the index.
	Name string
	// Version is an exact version or a semver range; the newest match is
	// fetched. Empty means the newest released version.
	Version string
	// MaxAge lets FetchChart answer from an index of the same repository read
	// at most this long ago with the same credentials, by any caller for any
	// chart: Syncs of one repository share one index per interval. Zero always
	// reads it.
	MaxAge time.Duration
	// Auth holds the credentials: Username and Password (basic
	// authentication) or BearerToken, and CAFile. They are sent to the
	// repository's host only, never to a package URL on another host.
	Auth Auth
	// Keys, when set, are the cosign public keys one of which must have
	// signed the chart's manifest (a chart in an OCI registry:
	// spec.source.chart.verify); the Revision then names the signer.
	Keys *cosign.Keys
}

// Label names the chart in messages and errors: "podinfo 6.14.*".
func (r ChartRequest) Label() string {
	if r.Version == "" {
		return r.Name
	}
	return r.Name + " " + r.Version
}

// Auth holds the credentials for one repository, as the keys of a Sync's secretRef
// name them. The caller (the reconciler) reads them; this package never talks to
// Kubernetes. Every field is secret: String and GoString print none of them, and
// no error this package returns quotes them.
type Auth struct {
	// Username and Password authenticate over HTTPS (basic authentication; with
	// most hosts the password is an access token). Over SSH, Username replaces the
	// URL's user and Password unlocks an encrypted Identity.
	Username, Password string
	// BearerToken authenticates over HTTPS with "Authorization: Bearer".
	BearerToken string
	// CAFile is a PEM bundle of certificate authorities trusted for HTTPS besides
	// the system's, for a host with a private CA.
	CAFile []byte
	// Identity is the PEM private key for SSH.
	Identity []byte
	// KnownHosts lists the host keys trusted for SSH, in OpenSSH known_hosts form.
	// SSH host keys are always verified: without an entry for the host, nothing is
	// fetched.
	KnownHosts []byte
}

// IsZero reports whether a holds no credentials at all.
func (a Auth) IsZero() bool {
	return a.Username == "" && a.Password == "" && a.BearerToken == "" &&
		len(a.CAFile) == 0 && len(a.Identity) == 0 && len(a.KnownHosts) == 0
}

// String keeps credentials out of anything that formats an Auth with %v or %s.
func (a Auth) String() string { return "source.Auth{redacted}" }

// GoString keeps credentials out of %#v.
func (a Auth) GoString() string { return a.String() }

// key identifies the credentials without revealing them: resolutions are shared
// only between callers holding the same credentials, so that a caller without
// access cannot ride on a resolution made by one with access.
func (a Auth) Key() string {
	if a.IsZero() {
		return ""
	}
	h := sha256.New()
	for _, field := range [][]byte{[]byte(a.Username), []byte(a.Password), []byte(a.BearerToken), a.CAFile, a.Identity, a.KnownHosts} {
		h.Write([]byte(strconv.Itoa(len(field)) + ":"))
		h.Write(field)
	}
	return hex.EncodeToString(h.Sum(nil))
}
