package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/sopstools"
)

const (
	encryptedPassword = "sops-in-git-51c0de"
	plainPassword     = "plain-in-git-7e22aa"
	clusterPassword   = "in-the-cluster-0b9d"
)

func passwordSecret(name, password string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + name + "\ntype: Opaque\nstringData:\n  password: " + password + "\n"
}

// encryptedDir writes a directory holding a Secret encrypted with a new age
// key, and returns it with a directory holding the key, as --keys reads it.
func encryptedDir(t *testing.T, tools *sopstools.Tools, files map[string]string) (dir, keys string) {
	t.Helper()
	identity, recipient := tools.AgeKey(t)
	dir, keys = t.TempDir(), t.TempDir()
	for name, content := range files {
		if name == "secret.yaml" {
			content = tools.EncryptAge(t, name, content, []string{recipient}, "--encrypted-regex", "^(data|stringData)$")
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(keys, "me.agekey"), []byte(identity), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, keys
}

func TestRenderMasksSecretsUnlessDecrypting(t *testing.T) {
	tools := sopstools.Find(t)
	dir, keys := encryptedDir(t, tools, map[string]string{
		"secret.yaml": passwordSecret("db", encryptedPassword),
		"plain.yaml":  passwordSecret("plain", plainPassword),
	})
	render := func(t *testing.T, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := run(t.Context(), append([]string{"render"}, args...), &out, &errOut)
		return out.String() + errOut.String(), err
	}

	t.Run("without --decrypt every Secret value is printed as ***", func(t *testing.T) {
		out, err := render(t, dir)
		if err != nil {
			t.Fatalf("tether render: %v\n%s", err, out)
		}
		assertNoSecret(t, out, plainPassword, encryptedPassword)
		if got := strings.Count(out, "password: '***'"); got != 2 {
			t.Errorf("%d masked passwords, want 2:\n%s", got, out)
		}
	})
	t.Run("--decrypt --keys decrypts with the user's keys and prints the Secrets in clear", func(t *testing.T) {
		out, err := render(t, "--decrypt", "--keys", keys, dir)
		if err != nil {
			t.Fatalf("tether render --decrypt: %v\n%s", err, out)
		}
		for _, want := range []string{"password: " + encryptedPassword, "password: " + plainPassword} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if strings.Contains(out, "sops:") {
			t.Errorf("output still holds SOPS's metadata:\n%s", out)
		}
	})
	t.Run("--decrypt with keys that do not open the file fails, naming it", func(t *testing.T) {
		_, otherKeys := encryptedDir(t, tools, nil)
		out, err := render(t, "--decrypt", "--keys", otherKeys, dir)
		var re *source.RenderError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "secret.yaml: none of the Sync's keys opens it") {
			t.Fatalf("error = %v, want one naming secret.yaml", err)
		}
		assertNoSecret(t, out+err.Error(), encryptedPassword)
	})
	t.Run("--decrypt needs --keys", func(t *testing.T) {
		if _, err := render(t, "--decrypt", dir); err == nil || !strings.Contains(err.Error(), "--decrypt needs --keys DIR") {
			t.Errorf("error = %v, want a usage error", err)
		}
	})
}

func TestDiffOfAnEncryptedSecretShowsOnlyThatItChanged(t *testing.T) {
	tools := sopstools.Find(t)
	e := newDiffEnv(t)
	dir, keys := encryptedDir(t, tools, map[string]string{"secret.yaml": passwordSecret("db", encryptedPassword)})
	live := t.TempDir()
	if err := os.WriteFile(filepath.Join(live, "secret.yaml"), []byte(passwordSecret("db", clusterPassword)), 0o600); err != nil {
		t.Fatal(err)
	}
	e.apply(t, live)

	t.Run("a changed encrypted Secret differs (exit 1) and neither value is shown", func(t *testing.T) {
		out, errOut, code := e.diff(t, "--dir", dir, "-n", e.ns, "--decrypt", "--keys", keys)
		if code != 1 {
			t.Fatalf("exit status %d, want 1 (differs)\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		if !hasLine(out, "+  password: '*** (changed)'") || !hasLine(out, "-  password: '***'") {
			t.Errorf("the diff does not mark the password changed:\n%s", out)
		}
		assertNoSecret(t, out+errOut, encryptedPassword, clusterPassword)
	})
	t.Run("once the cluster holds the decrypted value, nothing differs", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(live, "secret.yaml"), []byte(passwordSecret("db", encryptedPassword)), 0o600); err != nil {
			t.Fatal(err)
		}
		e.apply(t, live)
		out, errOut, code := e.diff(t, "--dir", dir, "-n", e.ns, "--decrypt", "--keys", keys)
		if code != 0 {
			t.Errorf("exit status %d, want 0\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		assertNoSecret(t, out+errOut, encryptedPassword)
	})
}

func TestDiffOfASyncReadsItsKeysWithUseSecretRef(t *testing.T) {
	tools := sopstools.Find(t)
	e := newDiffEnv(t)
	identity, recipient := tools.AgeKey(t)
	repo := gitserver.NewLocalRepo(t, "deploy")
	repo.Commit(t, map[string]string{"apps/secret.yaml": tools.EncryptAge(t, "secret.yaml", passwordSecret("db", encryptedPassword),
		[]string{recipient}, "--encrypted-regex", "^(data|stringData)$")}, "encrypted")
	keys := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "sops-keys"}, Data: map[string][]byte{"k.agekey": []byte(identity)}}
	if err := e.c.Create(t.Context(), keys); err != nil {
		t.Fatal(err)
	}
	syncFile := filepath.Join(t.TempDir(), "sync.yaml")
	writeFile(t, syncFile, fmt.Sprintf(`apiVersion: tether.dev/v1alpha1
kind: Sync
metadata: {name: web, namespace: %s}
spec:
  source: {url: %q, ref: {branch: main}, path: apps}
  destination: {namespace: %s}
  decryption: {provider: sops, secretRef: {name: sops-keys}}
`, e.ns, repo.URL(), e.ns))

	t.Run("with --use-secret-ref the Sync's keys decrypt, and the Secret shows as added, masked", func(t *testing.T) {
		out, errOut, code := e.diff(t, "-f", syncFile, "--use-secret-ref")
		if code != 1 || !hasLine(out, "+  password: '*** (added)'") {
			t.Fatalf("exit status %d, want 1 with the password masked\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		assertNoSecret(t, out+errOut, encryptedPassword)
	})
	t.Run("without it, stderr says the files are compared encrypted", func(t *testing.T) {
		_, errOut, _ := e.diff(t, "-f", syncFile)
		if !strings.Contains(errOut, "compared encrypted without --use-secret-ref or --decrypt --keys DIR") {
			t.Errorf("stderr = %q, want the note", errOut)
		}
	})
}
