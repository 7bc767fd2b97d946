package sync_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/ociregistry"
	"tether.dev/tether/test/rig"
	"tether.dev/tether/test/signing"
)

// newArtifactSync creates a Sync of path apps of the artifact of charts/<name>
// in reg, following ref.
func (a *agent) newArtifactSync(t *testing.T, ns, name string, reg *ociregistry.Server, repo string, ref v1alpha1.OCIRef) *v1alpha1.Sync {
	t.Helper()
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				OCI:  &v1alpha1.OCISource{URL: reg.Repository + "/" + repo, Ref: ref},
				Path: "apps",
				// Long enough that only the test (or a watch) triggers reconciles.
				Interval: &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), s))
	removeWhenDone(t, a, s)
	return s
}

// pushApps pushes, in Flux's format, an artifact whose apps directory holds
// ConfigMap web saying greeting, tagged tag; it returns the manifest's digest.
func pushApps(t *testing.T, reg *ociregistry.Server, repo, tag, greeting string) string {
	t.Helper()
	return reg.PushFluxArtifact(t, repo, tag, ociregistry.Tarball(t, map[string]string{
		"apps/web.yaml":           fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  greeting: %q\n", greeting),
		"apps/kustomization.yaml": "resources: [web.yaml]\n",
	}))
}

// artifactApplied waits until s is Ready at revision (tag@sha256:digest).
func (a *agent) artifactApplied(t *testing.T, s *v1alpha1.Sync, revision string) {
	t.Helper()
	a.WaitFor(t, s, "Ready at "+revision, func(s *v1alpha1.Sync) bool {
		return rig.IsReady(s) && s.Status.LastAppliedRevision == revision
	})
}

func greetingOf(t *testing.T, a *agent, ns string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, cm))
	return cm.Data["greeting"]
}

func TestAnOCIArtifactIsAppliedItsNewTagsFollowedAndItsRegistryFailureKeepsTheLastGood(t *testing.T) {
	const password, wrong = "s3cret-pass", "wr0ng-pass"
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	reg := ociregistry.Start(t)
	v1 := pushApps(t, reg, "deploy", "v1.0.0", "one")
	pushApps(t, reg, "deploy", "v2.0.0", "two")
	s := a.newArtifactSync(t, ns, "web", reg, "deploy", v1alpha1.OCIRef{SemVer: "1.x"})

	t.Run("the newest tag in range is applied, its revision tag@sha256:<manifest digest>", func(t *testing.T) {
		a.artifactApplied(t, s, "v1.0.0@"+v1)
		if got := greetingOf(t, a, ns); got != "one" {
			t.Errorf("the ConfigMap says %q; want one", got)
		}
	})

	t.Run("a new tag in range is followed", func(t *testing.T) {
		v11 := pushApps(t, reg, "deploy", "v1.1.0", "one-one")
		requestReconcile(t, a, s)
		a.artifactApplied(t, s, "v1.1.0@"+v11)
		if got := greetingOf(t, a, ns); got != "one-one" {
			t.Errorf("the ConfigMap says %q; want one-one", got)
		}
	})

	good := s.Status.LastAppliedRevision
	t.Run("a registry that asks for credentials it is not given keeps the last good applied, drift corrected", func(t *testing.T) {
		reg.RequireToken("reader", password)
		pushApps(t, reg, "deploy", "v1.2.0", "one-two")
		requestReconcile(t, a, s)
		got := a.WaitFor(t, s, "Ready False AuthenticationFailed", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonAuthenticationFailed
		})
		good = got.Status.LastAppliedRevision
		if !strings.HasPrefix(good, "v1.1.0@") {
			t.Fatalf("lastAppliedRevision %s; want the last good v1.1.0", good)
		}
		harness.Must(t, a.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}))
		harness.Eventually(t, waitTimeout, "the deleted ConfigMap applied again from the artifact on disk", func(ctx context.Context) (bool, error) {
			cm := &corev1.ConfigMap{}
			if err := a.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, cm); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			return cm.Data["greeting"] == "one-one", nil
		})
	})

	t.Run("a dockerconfigjson Secret's credentials get a token and the new tag", func(t *testing.T) {
		host := reg.Host()
		auth := base64.StdEncoding.EncodeToString([]byte("reader:" + password))
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: ns},
			Type:       corev1.SecretTypeDockerConfigJson,
			Data:       map[string][]byte{corev1.DockerConfigJsonKey: fmt.Appendf(nil, `{"auths":{%q:{"auth":%q}}}`, host, auth)},
		}
		harness.Must(t, a.Client.Create(t.Context(), secret))
		patch := []byte(`{"spec":{"source":{"oci":{"secretRef":{"name":"regcred"}}}}}`)
		harness.Must(t, a.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", patch)))
		got := a.WaitFor(t, s, "Ready at v1.2.0", func(s *v1alpha1.Sync) bool {
			return rig.IsReady(s) && strings.HasPrefix(s.Status.LastAppliedRevision, "v1.2.0@sha256:")
		})
		text := harness.Describe(got) + strings.Join(a.events(), "\n")
		for _, secret := range []string{ociregistry.RefusalBody, password, wrong, auth} {
			if strings.Contains(text, secret) {
				t.Errorf("status or events quote %q: %s", secret, text)
			}
		}
	})
}

func TestTheCRDTakesExactlyOneSourceAndOneOCIRef(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	for name, c := range map[string]struct {
		source v1alpha1.SourceSpec
		says   string
	}{
		"url-and-oci":  {v1alpha1.SourceSpec{URL: "https://example.com/x.git", OCI: &v1alpha1.OCISource{URL: "oci://example.com/x"}}, "exactly one of url or chart or oci"},
		"two-refs":     {v1alpha1.SourceSpec{OCI: &v1alpha1.OCISource{URL: "oci://example.com/x", Ref: v1alpha1.OCIRef{Tag: "v1", SemVer: "1.x"}}}, "exactly one of tag, semver or digest"},
		"short-digest": {v1alpha1.SourceSpec{OCI: &v1alpha1.OCISource{URL: "oci://example.com/x", Ref: v1alpha1.OCIRef{Digest: "sha256:abc"}}}, "digest"},
		"not-oci":      {v1alpha1.SourceSpec{OCI: &v1alpha1.OCISource{URL: "https://example.com/x"}}, "url"},
	} {
		s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1alpha1.SyncSpec{Source: c.source, Destination: v1alpha1.DestinationSpec{Namespace: ns}}}
		if err := a.Client.Create(t.Context(), s); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: created with %v; want a refusal saying %q", name, err, c.says)
		}
	}
}

func TestATagPushedToARegistryAndToldByWebhookIsAppliedAtOnce(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	reg := ociregistry.Start(t)
	first := pushApps(t, reg, "hooked", "v1.0.0", "one")
	// The interval is an hour: only the push can bring the Sync to v1.1.0.
	s := a.newArtifactSync(t, ns, "hooked", reg, "hooked", v1alpha1.OCIRef{SemVer: "1.x"})
	a.artifactApplied(t, s, "v1.0.0@"+first)
	receiver := startReceiver(t, a.Trigger)
	second := pushApps(t, reg, "hooked", "v1.1.0", "one-one")
	body := []byte(fmt.Sprintf(`{"url": %q, "tag": "v1.1.0"}`, reg.Repository+"/hooked"))
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, receiver+source.WebhookPathPrefix+source.ReceiverGeneric, bytes.NewReader(body))
	harness.Must(t, err)
	req.Header.Set("X-Tether-Signature", "sha256="+hex.EncodeToString(source.Sign(body, hookSecret)))
	resp, err := http.DefaultClient.Do(req)
	harness.Must(t, err)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("signed push: status %d, want 202", resp.StatusCode)
	}
	a.artifactApplied(t, s, "v1.1.0@"+second)
}

func TestASyncAppliesOnlyArtifactsATrustedCosignKeySignedAndNamesTheSigner(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	reg := ociregistry.Start(t)
	ci := signing.NewCosignKey(t)
	harness.Must(t, a.Client.Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "cosign-keys", Namespace: ns},
		Data:       map[string][]byte{"ci.pub": ci.Public},
	}))
	sign := func(t *testing.T, digest string) {
		subject := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: godigest.Digest(digest)}
		sig := ci.SignatureManifest(t, reg.Host()+"/charts/signed", subject)
		reg.PushSignature(t, "signed", sig.Tag, map[string][]byte{sig.ConfigDescriptor.MediaType: sig.Config, sig.PayloadDescriptor.MediaType: sig.Payload}, sig.Manifest)
	}
	first := pushApps(t, reg, "signed", "v1.0.0", "signed-one")
	sign(t, first)
	s := &v1alpha1.Sync{
		ObjectMeta: metav1.ObjectMeta{Name: "signed", Namespace: ns},
		Spec: v1alpha1.SyncSpec{
			Source: v1alpha1.SourceSpec{
				OCI: &v1alpha1.OCISource{URL: reg.Repository + "/signed", Ref: v1alpha1.OCIRef{SemVer: "1.x"},
					Verify: &v1alpha1.OCIVerify{Provider: v1alpha1.VerifyCosign, SecretRef: v1alpha1.LocalObjectReference{Name: "cosign-keys"}}},
				Path:     "apps",
				Interval: &metav1.Duration{Duration: time.Hour},
			},
			Destination: v1alpha1.DestinationSpec{Namespace: ns},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), s))
	removeWhenDone(t, a, s)

	t.Run("a signed artifact applies, its signer in status", func(t *testing.T) {
		a.artifactApplied(t, s, "v1.0.0@"+first)
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKeyFromObject(s), s))
		if !strings.Contains(s.Status.LastAppliedSigner, "ci.pub") {
			t.Errorf("lastAppliedSigner %q; want the key ci.pub", s.Status.LastAppliedSigner)
		}
	})

	var unsigned string
	t.Run("an unsigned one pushed after it is refused naming its digest; the signed one stays applied", func(t *testing.T) {
		unsigned = pushApps(t, reg, "signed", "v1.1.0", "unsigned")
		requestReconcile(t, a, s)
		got := a.WaitFor(t, s, "Ready False RevisionNotVerified", func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonRevisionNotVerified && strings.Contains(c.Message, unsigned)
		})
		if got.Status.LastAppliedRevision != "v1.0.0@"+first || greetingOf(t, a, ns) != "signed-one" {
			t.Errorf("lastAppliedRevision %s, greeting %q; want the signed v1.0.0 kept", got.Status.LastAppliedRevision, greetingOf(t, a, ns))
		}
	})

	t.Run("its signature pushed, it applies", func(t *testing.T) {
		sign(t, unsigned)
		requestReconcile(t, a, s)
		a.artifactApplied(t, s, "v1.1.0@"+unsigned)
	})
}

func TestARegistrysNotificationOfAPushedTagAppliesItAtOnce(t *testing.T) {
	const registrySecret = "registry-hook-secret"
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	opts := source.DefaultWebhookOptions()
	opts.Secret = func(r string) []byte {
		if r == source.ReceiverRegistry {
			return []byte(registrySecret)
		}
		return nil
	}
	opts.OnPush = a.Trigger.OnPush
	receiver := httptest.NewServer(source.NewWebhookHandler(opts))
	t.Cleanup(receiver.Close)
	// The real registry notifies the receiver of every push, as its
	// configuration says (Distribution's notifications endpoints).
	reg := ociregistry.StartNotifying(t, receiver.URL+source.WebhookPathPrefix+source.ReceiverRegistry, "Bearer "+registrySecret)
	first := pushApps(t, reg, "notified", "v1.0.0", "one")
	// The interval is an hour: only the registry's notification can bring the
	// Sync to v1.1.0.
	s := a.newArtifactSync(t, ns, "notified", reg, "notified", v1alpha1.OCIRef{SemVer: "1.x"})
	a.artifactApplied(t, s, "v1.0.0@"+first)
	second := pushApps(t, reg, "notified", "v1.1.0", "one-one")
	a.artifactApplied(t, s, "v1.1.0@"+second)
	// The same tag pushed again: Distribution announces the push before it
	// moves the tag.
	moved := pushApps(t, reg, "notified", "v1.1.0", "one-one-moved")
	a.artifactApplied(t, s, "v1.1.0@"+moved)
}
