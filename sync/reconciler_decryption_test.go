package sync_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/test/controlplane"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/harness"
	"tether.dev/tether/test/rig"
	"tether.dev/tether/test/sopstools"
)

// The plaintext of the encrypted fixtures: no status, Event, log line or file
// of the agent's may show it.
const (
	sopsPassword = "pa55-in-git-7f3c9d"
	sopsEnvToken = "env-token-b81e44a0"
	sopsRotated  = "rotated-9a0c77e1"
)

var encryptSecretsOnly = []string{"--encrypted-regex", "^(data|stringData)$"}

func sopsSecret(name, password string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\ntype: Opaque\nstringData:\n  password: " + password + "\n"
}

func TestSOPSSecretsAreAppliedDecryptedAndStayInTheAgent(t *testing.T) {
	tools := sopstools.Find(t)
	a := startAgent(t)
	ns := controlplane.NewNamespace(t, controlplane.Shared(t).Config())
	identity, recipient := tools.AgeKey(t)
	otherIdentity, otherRecipient := tools.AgeKey(t)
	enc := func(name, plaintext, to string, extra ...string) string {
		return tools.EncryptAge(t, name, plaintext, []string{to}, extra...)
	}
	repo := gitserver.Start(t, gitserver.Options{}).CreateRepo(t, "secrets")
	tampered := tamper(t, enc("secret.yaml", sopsSecret("tampered", sopsPassword), recipient, encryptSecretsOnly...))
	first := repo.Commit(t, map[string]string{
		"apps/secret.yaml":            enc("secret.yaml", sopsSecret("db", sopsPassword), recipient, encryptSecretsOnly...),
		"apps/gen/kustomization.yaml": "secretGenerator:\n- name: app-env\n  envs: [app.env]\ngeneratorOptions:\n  disableNameSuffixHash: true\n",
		"apps/gen/app.env":            enc("app.env", "TOKEN="+sopsEnvToken+"\n", recipient),
		"wrong/secret.yaml":           enc("secret.yaml", sopsSecret("wrong", sopsPassword), otherRecipient, encryptSecretsOnly...),
		"wrong/cm.yaml":               configMapYAML("wrong-cm", "hello"),
		"tampered/secret.yaml":        tampered,
		"tampered/cm.yaml":            configMapYAML("tampered-cm", "hello"),
		"plain/secret.yaml":           sopsSecret("plain", sopsPassword),
		"plain/cm.yaml":               configMapYAML("plain-cm", "hello"),
		"late/secret.yaml":            enc("secret.yaml", sopsSecret("late", sopsPassword), recipient, encryptSecretsOnly...),
	}, "encrypted secrets")
	keys := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sops-keys", Namespace: ns},
		Data:       map[string][]byte{"identity.agekey": []byte(identity)},
	}
	harness.Must(t, a.Client.Create(t.Context(), keys))
	decrypting := func(secret string, require bool) func(*v1alpha1.Sync) {
		return func(s *v1alpha1.Sync) {
			s.Spec.Decryption = &v1alpha1.Decryption{Provider: v1alpha1.DecryptionProviderSOPS,
				SecretRef: &v1alpha1.LocalObjectReference{Name: secret}, RequireEncryption: require}
		}
	}
	s := a.newSync(t, ns, repo.URL(), decrypting(keys.Name, false))

	t.Run("an age-encrypted Secret and a secretGenerator reading a SOPS .env are applied decrypted", func(t *testing.T) {
		a.WaitApplied(t, s, first)
		if got := secretValue(t, a, ns, "db", "password"); got != sopsPassword {
			t.Errorf("Secret db password = %q, want the decrypted value", got)
		}
		if got := secretValue(t, a, ns, "app-env", "TOKEN"); got != sopsEnvToken {
			t.Errorf("Secret app-env TOKEN = %q, want the decrypted value", got)
		}
	})

	failures := []struct {
		step, path, reason, says string
		require                  bool
		objects                  []string
	}{
		{"a key that does not open a file: Stalled DecryptionFailed naming the file, nothing applied", "wrong",
			v1alpha1.ReasonDecryptionFailed, "wrong/secret.yaml: none of the Sync's keys opens it", false, []string{"wrong", "wrong-cm"}},
		{"a file changed after encryption: Stalled DecryptionTampered naming the file, nothing applied", "tampered",
			v1alpha1.ReasonDecryptionTampered, "tampered/secret.yaml: ", false, []string{"tampered", "tampered-cm"}},
		{"an unencrypted Secret under requireEncryption: Stalled UnencryptedSecret naming the file, nothing applied", "plain",
			v1alpha1.ReasonUnencryptedSecret, "plain/secret.yaml: holds a Secret that is not encrypted", true, []string{"plain", "plain-cm"}},
	}
	for _, f := range failures {
		t.Run(f.step, func(t *testing.T) {
			failing := a.newSync(t, ns, repo.URL(), decrypting(keys.Name, f.require), func(s *v1alpha1.Sync) {
				s.Name, s.Spec.Source.Path = f.path, f.path
			})
			waitStalled(t, a, failing, f.reason, f.says)
			for _, name := range f.objects {
				assertAbsent(t, a, ns, name)
			}
		})
	}

	t.Run("a missing keys Secret: Stalled DecryptionKeysNotFound; creating it applies at once", func(t *testing.T) {
		waiting := a.newSync(t, ns, repo.URL(), decrypting("late-keys", false), func(s *v1alpha1.Sync) { s.Name, s.Spec.Source.Path = "late", "late" })
		waitStalled(t, a, waiting, v1alpha1.ReasonDecryptionKeysNotFound, ns+"/late-keys")
		harness.Must(t, a.Client.Create(t.Context(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "late-keys", Namespace: ns},
			Data:       map[string][]byte{"main.agekey": []byte(identity)},
		}))
		// The interval is an hour: only the watch of the keys Secret brings this.
		a.WaitApplied(t, waiting, first)
		if got := secretValue(t, a, ns, "late", "password"); got != sopsPassword {
			t.Errorf("Secret late password = %q, want the decrypted value", got)
		}
	})

	t.Run("rotating the keys: a commit for the new key waits for it, and the rotated Secret applies it at once", func(t *testing.T) {
		second := repo.Commit(t, map[string]string{
			"apps/secret.yaml": enc("secret.yaml", sopsSecret("db", sopsRotated), otherRecipient, encryptSecretsOnly...),
			"apps/gen/app.env": enc("app.env", "TOKEN="+sopsEnvToken+"\n", otherRecipient),
		}, "re-encrypted for the new key")
		requestReconcile(t, a, s)
		waitStalled(t, a, s, v1alpha1.ReasonDecryptionFailed, "apps/")
		if got := secretValue(t, a, ns, "db", "password"); got != sopsPassword {
			t.Errorf("Secret db password = %q while the new commit does not decrypt, want the applied value kept", got)
		}
		patch := client.MergeFrom(keys.DeepCopy())
		keys.Data = map[string][]byte{"identity.agekey": []byte(otherIdentity)}
		harness.Must(t, a.Client.Patch(t.Context(), keys, patch))
		a.WaitFor(t, s, "Ready at "+second, func(s *v1alpha1.Sync) bool {
			return strings.HasSuffix(s.Status.LastAppliedRevision, second) && rig.IsReady(s)
		})
		if got := secretValue(t, a, ns, "db", "password"); got != sopsRotated {
			t.Errorf("Secret db password = %q, want the value of the rotated commit", got)
		}
	})

	t.Run("no status, Event, log line or file of the agent's holds a plaintext", func(t *testing.T) {
		var logs strings.Builder
		list := &v1alpha1.SyncList{}
		harness.Must(t, a.Client.List(t.Context(), list, client.InNamespace(ns)))
		for i := range list.Items {
			logs.WriteString(reconcileLogs(t, a, &list.Items[i]))
		}
		harness.Must(t, a.Client.List(t.Context(), list, client.InNamespace(ns)))
		syncs, err := json.Marshal(list)
		harness.Must(t, err)
		events := &corev1.EventList{}
		harness.Must(t, a.Client.List(t.Context(), events, client.InNamespace(ns)))
		apiEvents, err := json.Marshal(events)
		harness.Must(t, err)
		places := map[string][]byte{
			"the Syncs": syncs, "the recorded Events": []byte(strings.Join(a.events(), "\n")),
			"the namespace's Events": apiEvents, "the logs": []byte(logs.String()),
		}
		for where, text := range places {
			assertNoPlaintext(t, where, text)
		}
		err = filepath.WalkDir(a.CacheDir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			assertNoPlaintext(t, p, data)
			return nil
		})
		harness.Must(t, err)
	})
}

// assertNoPlaintext fails t if text holds a plaintext of the fixtures, as it
// is or in base64.
func assertNoPlaintext(t *testing.T, where string, text []byte) {
	t.Helper()
	for _, p := range []string{sopsPassword, sopsEnvToken, sopsRotated} {
		if bytes.Contains(text, []byte(p)) || bytes.Contains(text, []byte(base64.StdEncoding.EncodeToString([]byte(p)))) {
			t.Errorf("%s hold the plaintext %q", where, p)
		}
	}
}

// waitStalled waits until s is Stalled with reason and a message saying says.
func waitStalled(t *testing.T, a *agent, s *v1alpha1.Sync, reason, says string) {
	t.Helper()
	a.WaitFor(t, s, "Stalled "+reason+" saying "+says, func(s *v1alpha1.Sync) bool {
		c := apimeta.FindStatusCondition(s.Status.Conditions, v1alpha1.StalledCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason && strings.Contains(c.Message, says)
	})
}

// assertAbsent fails t if the namespace holds a Secret or ConfigMap named name.
func assertAbsent(t *testing.T, a *agent, ns, name string) {
	t.Helper()
	for _, obj := range []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}} {
		err := a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s/%s: %v, want it never applied", obj, ns, name, err)
		}
	}
}

func secretValue(t *testing.T, a *agent, ns, name, key string) string {
	t.Helper()
	secret := &corev1.Secret{}
	harness.Must(t, a.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, secret))
	return string(secret.Data[key])
}

// tamper changes the first encrypted value of a SOPS file, as someone editing
// it without the key would.
func tamper(t *testing.T, file string) string {
	t.Helper()
	m := regexp.MustCompile(`ENC\[AES256_GCM,data:([A-Za-z0-9+/=]+),`).FindStringSubmatchIndex(file)
	if m == nil {
		t.Fatal("no encrypted value to tamper with")
	}
	data := []byte(file)
	if data[m[2]] == 'A' {
		data[m[2]] = 'B'
	} else {
		data[m[2]] = 'A'
	}
	return string(data)
}
