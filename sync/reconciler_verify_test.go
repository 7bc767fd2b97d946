package sync_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
	"tether.dev/tether/test/signing"
)

// TestOnlyRevisionsSignedByTrustedKeysApply: commits signed by the real git
// with a gpg key and with an SSH key that the Sync's keys Secret trusts apply
// and are shown with their signer; an unsigned commit pushed after them, and
// one signed by a key the Secret does not hold, are refused naming the commit
// and why, while the revision applied last stays applied and keeps healing;
// a pin to the unsigned commit is refused too.
func TestOnlyRevisionsSignedByTrustedKeysApply(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "signed")
	alice := signing.NewGPG(t, "Alice", "alice@example.com")
	ci := signing.NewSSH(t, "ci@example.com")
	mallory := signing.NewGPG(t, "Mallory", "mallory@example.com")
	trustKeys(t, a, ns, map[string][]byte{"alice.asc": alice.Public, "allowed_signers": []byte(ci.AllowedSigners())})
	repo.SetEnv(alice.Env()...)
	repo.Configure(t, alice.GitConfig())
	first := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "signed by alice")}, "alice signs")
	s := a.newSync(t, ns, repo.URL(), func(s *v1alpha1.Sync) {
		s.Spec.Source.Verify = &v1alpha1.SourceVerify{SecretRef: v1alpha1.LocalObjectReference{Name: "trusted-keys"}}
	})
	got := a.WaitApplied(t, s, first)
	if want := "Alice <alice@example.com> (openpgp " + alice.Fingerprint + ")"; got.Status.LastAppliedSigner != want {
		t.Errorf("status.lastAppliedSigner = %q, want %q", got.Status.LastAppliedSigner, want)
	}

	repo.Configure(t, ci.GitConfig())
	second := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "signed by ci")}, "ci signs with ssh")
	requestReconcile(t, a, s)
	got = a.WaitApplied(t, s, second)
	if !strings.HasPrefix(got.Status.LastAppliedSigner, "ci@example.com (ssh SHA256:") {
		t.Errorf("status.lastAppliedSigner = %q, want ci@example.com's SSH key", got.Status.LastAppliedSigner)
	}

	kept, keptBy := second, "ci@example.com"
	refused := func(t *testing.T, commit, why string) {
		t.Helper()
		requestReconcile(t, a, s)
		got := a.WaitFor(t, s, "RevisionNotVerified for "+commit, func(s *v1alpha1.Sync) bool {
			c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.ReadyCondition)
			return c != nil && c.Reason == v1alpha1.ReasonRevisionNotVerified && strings.Contains(c.Message, commit)
		})
		c := apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		t.Logf("Ready: %s: %s", c.Reason, c.Message)
		if !strings.Contains(c.Message, why) {
			t.Errorf("Ready's message %q does not say %q", c.Message, why)
		}
		if !strings.HasSuffix(got.Status.LastAppliedRevision, kept) || !strings.HasPrefix(got.Status.LastAppliedSigner, keptBy) {
			t.Errorf("applied %s signed by %q, want %s by %s kept", got.Status.LastAppliedRevision, got.Status.LastAppliedSigner, kept, keptBy)
		}
		if data := configMapData(t, a, ns, "web"); data != "signed by ci" {
			t.Errorf("the ConfigMap says %q, want the last verified revision's %q", data, "signed by ci")
		}
	}

	var unsigned string
	t.Run("an unsigned commit is refused and the last verified revision keeps healing", func(t *testing.T) {
		repo.Configure(t, signing.Unsigned())
		unsigned = repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "unsigned")}, "nobody signs")
		refused(t, unsigned, "not signed")
		cm := &corev1.ConfigMap{}
		harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "web"}, cm))
		cm.Data["greeting"] = "edited by hand"
		harness.Must(t, a.Client.Update(t.Context(), cm))
		harness.Eventually(t, waitTimeout, "the edit is reverted to the verified revision", func(context.Context) (bool, error) {
			return configMapData(t, a, ns, "web") == "signed by ci", nil
		})
	})

	t.Run("a commit signed by a key the Secret does not hold is refused", func(t *testing.T) {
		repo.SetEnv(mallory.Env()...) // the later GNUPGHOME wins
		repo.Configure(t, mallory.GitConfig())
		forged := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "signed by mallory")}, "mallory signs")
		// gpg names the issuer by its key id: the fingerprint's last 16 digits.
		refused(t, forged, mallory.Fingerprint[len(mallory.Fingerprint)-16:])
	})

	t.Run("a pin to the unsigned commit is refused while the branch is signed", func(t *testing.T) {
		repo.SetEnv(alice.Env()...)
		repo.Configure(t, alice.GitConfig())
		third := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "signed by ci")}, "alice signs again")
		requestReconcile(t, a, s)
		a.WaitApplied(t, s, third)
		kept, keptBy = third, "Alice"
		pin := []byte(`{"metadata":{"annotations":{"` + v1alpha1.PinRevisionAnnotation + `":"` + unsigned + `"}}}`)
		harness.Must(t, a.Client.Patch(t.Context(), s, client.RawPatch("application/merge-patch+json", pin)))
		refused(t, unsigned, "not signed")
	})
}

// TestTheAPIServerRefusesAVerifyItCannotHonour: the CRD's rules refuse a Tag
// mode without a tag to verify, and verification of a packaged chart.
func TestTheAPIServerRefusesAVerifyItCannotHonour(t *testing.T) {
	c := startAgent(t).Client
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	keys := v1alpha1.LocalObjectReference{Name: "trusted-keys"}
	for name, tc := range map[string]struct {
		source v1alpha1.SourceSpec
		want   string
	}{
		"Tag mode on a branch": {
			v1alpha1.SourceSpec{URL: "https://git.example.com/r.git", Ref: v1alpha1.GitRef{Branch: "main"}, Verify: &v1alpha1.SourceVerify{Mode: v1alpha1.VerifyTag, SecretRef: keys}},
			"verify.mode Tag and TagAndHEAD need ref.tag or ref.semver",
		},
		"a chart": {
			v1alpha1.SourceSpec{Chart: &v1alpha1.ChartSource{Repository: "https://charts.example.com", Name: "web"}, Verify: &v1alpha1.SourceVerify{SecretRef: keys}},
			"verify checks the signatures of git revisions: it needs url",
		},
	} {
		s := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused"}, Spec: v1alpha1.SyncSpec{Source: tc.source, Destination: v1alpha1.DestinationSpec{Namespace: ns}}}
		if err := c.Create(t.Context(), s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: create = %v, want it refused saying %q", name, err, tc.want)
		}
	}
	ok := &v1alpha1.Sync{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tagged"}, Spec: v1alpha1.SyncSpec{
		Source:      v1alpha1.SourceSpec{URL: "https://git.example.com/r.git", Ref: v1alpha1.GitRef{SemVer: ">=1.0"}, Verify: &v1alpha1.SourceVerify{Mode: v1alpha1.VerifyTagAndHEAD, SecretRef: keys}},
		Destination: v1alpha1.DestinationSpec{Namespace: ns},
	}}
	harness.Must(t, c.Create(t.Context(), ok))
}

// TestARollbackInTagModeReturnsThroughItsSignedTag: a Sync that verifies
// tags (mode Tag, a semver range) of unsigned commits rolls back from a
// release that is not Healthy in time to the one before it, through that
// release's signed tag: the commit alone, unsigned, would be refused.
func TestARollbackInTagModeReturnsThroughItsSignedTag(t *testing.T) {
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "releases")
	release := signing.NewGPG(t, "Release", "release@example.com")
	trustKeys(t, a, ns, map[string][]byte{"release.asc": release.Public})
	repo.SetEnv(release.Env()...)
	repo.Configure(t, release.GitConfig())
	repo.Configure(t, map[string]string{"commit.gpgsign": "false"})
	good := repo.Commit(t, map[string]string{"apps/cm.yaml": configMapYAML("web", "one")}, "good")
	repo.AnnotatedTag(t, "v1.0.0", "release v1.0.0")
	s := a.newSync(t, ns, repo.FileURL(), pollEverySecond, func(s *v1alpha1.Sync) {
		s.Spec.Source.Ref = v1alpha1.GitRef{SemVer: ">=1.0.0"}
		s.Spec.Source.Verify = &v1alpha1.SourceVerify{Mode: v1alpha1.VerifyTag, SecretRef: v1alpha1.LocalObjectReference{Name: "trusted-keys"}}
		s.Spec.Rollback = &v1alpha1.RollbackSpec{OnFailure: true, HealthTimeout: &metav1.Duration{Duration: 3 * time.Second}}
	})
	a.WaitApplied(t, s, good)
	bad := repo.Commit(t, map[string]string{"apps/web.yaml": stuckDeployment("web"), "apps/cm.yaml": configMapYAML("web", "two")}, "a rollout that never ends")
	repo.AnnotatedTag(t, "v1.1.0", "release v1.1.0")

	got := a.WaitFor(t, s, "rolled back to v1.0.0", func(s *v1alpha1.Sync) bool {
		return hasCondition(s, v1alpha1.RolledBackCondition, v1alpha1.ReasonHealthTimeout) &&
			s.Status.LastAppliedRevision == "v1.0.0@sha1:"+good && rig.IsReady(s)
	})
	if !strings.HasSuffix(got.Status.SourceRevision, bad) || !strings.HasPrefix(got.Status.LastAppliedSigner, "Release <release@example.com>") {
		t.Errorf("git at %s, applied %s signed by %q; want v1.1.0 in git and v1.0.0 applied, signed by the release key",
			got.Status.SourceRevision, got.Status.LastAppliedRevision, got.Status.LastAppliedSigner)
	}
	if g := configMapData(t, a, ns, "web"); g != "one" {
		t.Errorf("ConfigMap web says %q, want v1.0.0's %q", g, "one")
	}
}

// TestASyncSetMakesSyncsOnlyFromASignedRevision: a git generator with verify
// reads a signed revision into Syncs; an unsigned commit that would add one
// is refused naming the commit, and the Syncs made before are kept.
func TestASyncSetMakesSyncsOnlyFromASignedRevision(t *testing.T) {
	a := startAgent(t)
	team := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	repo := gitserver.NewLocalRepo(t, "fleet")
	alice := signing.NewGPG(t, "Alice", "alice@example.com")
	trustKeys(t, a, team, map[string][]byte{"alice.asc": alice.Public})
	repo.SetEnv(alice.Env()...)
	repo.Configure(t, alice.GitConfig())
	repo.Commit(t, map[string]string{"apps/a/cm.yaml": configMapYAML("a", "hello"), "apps/b/cm.yaml": configMapYAML("b", "hello")}, "two apps")
	spec, err := json.Marshal(map[string]any{
		"source":      map[string]any{"url": repo.FileURL(), "path": "{{path}}", "interval": "1h"},
		"destination": map[string]any{"namespace": team},
	})
	harness.Must(t, err)
	ss := &v1alpha1.SyncSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "fleet"},
		Spec: v1alpha1.SyncSetSpec{
			Generators: []v1alpha1.SyncSetGenerator{{Git: &v1alpha1.GitGenerator{URL: repo.FileURL(), Interval: &metav1.Duration{Duration: time.Second},
				Verify:      &v1alpha1.SourceVerify{SecretRef: v1alpha1.LocalObjectReference{Name: "trusted-keys"}},
				Directories: []v1alpha1.GitDirectory{{Path: "apps/*"}}}}},
			Template: v1alpha1.SyncTemplate{Metadata: v1alpha1.SyncTemplateMeta{Name: "{{path.basename}}"}, Spec: apiextensionsv1.JSON{Raw: spec}},
		},
	}
	harness.Must(t, a.Client.Create(t.Context(), ss))
	removeOnCleanup(t, a, ss)
	syncs := func(ctx context.Context) []string {
		l := &v1alpha1.SyncList{}
		harness.Must(t, a.Client.List(ctx, l, client.InNamespace(team), client.MatchingLabels{v1alpha1.SyncSetLabel: "fleet"}))
		var names []string
		for _, s := range l.Items {
			names = append(names, s.Name)
		}
		return names
	}
	harness.Eventually(t, waitTimeout, "the signed revision's two Syncs", func(ctx context.Context) (bool, error) {
		return len(syncs(ctx)) == 2, nil
	})

	repo.Configure(t, signing.Unsigned())
	unsigned := repo.Commit(t, map[string]string{"apps/c/cm.yaml": configMapYAML("c", "hello")}, "a third app, unsigned")
	var cond *metav1.Condition
	harness.Eventually(t, waitTimeout, "the SyncSet refusing the unsigned commit", func(ctx context.Context) (bool, error) {
		got := &v1alpha1.SyncSet{}
		if err := a.Client.Get(ctx, client.ObjectKeyFromObject(ss), got); err != nil {
			return false, err
		}
		cond = apimeta.FindStatusCondition(got.Status.Conditions, v1alpha1.ReadyCondition)
		return cond != nil && cond.Status == metav1.ConditionFalse && strings.Contains(cond.Message, unsigned), nil
	})
	t.Logf("SyncSet Ready: %s: %s", cond.Reason, cond.Message)
	if !strings.Contains(cond.Message, "not signed") {
		t.Errorf("Ready says %s: %q, want it to say the commit is not signed", cond.Reason, cond.Message)
	}
	if got := syncs(t.Context()); len(got) != 2 {
		t.Errorf("Syncs %q after the refusal, want a and b kept and no c", got)
	}
}

// trustKeys creates the Secret trusted-keys of ns, holding data.
func trustKeys(t *testing.T, a *agent, ns string, data map[string][]byte) {
	t.Helper()
	harness.Must(t, a.Client.Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "trusted-keys"}, Data: data}))
}
