package source_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/gitserver"
	"tether.dev/tether/test/sopstools"
)

// The plaintext every encrypted fixture holds: no message may show it.
const (
	dbPassword = "hunter2-correct-horse"
	apiToken   = "tok-4f9a1c7e55"
	certBytes  = "binary-cert-\x00\x01-payload"
)

func secretManifest() string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\nstringData:\n  password: " + dbPassword + "\n"
}

// ageKeys makes an age key and the keys a Secret holding it parses to.
func ageKeys(t *testing.T, tools *sopstools.Tools) (*source.Keys, string) {
	t.Helper()
	identity, recipient := tools.AgeKey(t)
	keys, err := source.ParseKeys(map[string][]byte{"identity.agekey": []byte(identity)})
	if err != nil {
		t.Fatalf("ParseKeys: %v", err)
	}
	return keys, recipient
}

var secretsOnly = []string{"--encrypted-regex", "^(data|stringData)$"}

func TestRenderDecryptsSOPSFilesWithTheSyncsKeys(t *testing.T) {
	tools := sopstools.Find(t)
	keys, recipient := ageKeys(t, tools)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "plain/secret.yaml"), tools.EncryptAge(t, "secret.yaml", secretManifest(), []string{recipient}, secretsOnly...))
	writeFile(t, filepath.Join(dir, "plain/token.json"), tools.EncryptAge(t, "token.json",
		`{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"token": "`+apiToken+`"}}`, []string{recipient}, secretsOnly...))
	writeFile(t, filepath.Join(dir, "plain/cm.yaml"), configMap("web", "hello"))
	writeFile(t, filepath.Join(dir, "gen/kustomization.yaml"), "secretGenerator:\n- name: app\n  envs: [app.env]\n  files: [tls.crt]\ngeneratorOptions:\n  disableNameSuffixHash: true\n")
	writeFile(t, filepath.Join(dir, "gen/app.env"), tools.EncryptAge(t, "app.env", "DB_PASSWORD="+dbPassword+"\n", []string{recipient}))
	writeFile(t, filepath.Join(dir, "gen/tls.crt"), tools.EncryptAge(t, "tls.crt", certBytes, []string{recipient}))
	dec := &source.Decryption{Keys: keys}

	t.Run("an encrypted Secret manifest renders decrypted, without SOPS's metadata", func(t *testing.T) {
		objs := renderDir(t, filepath.Join(dir, "plain"), dec)
		want := map[string]string{"Secret/db password": dbPassword, "Secret/token token": apiToken, "ConfigMap/web greeting": "hello"}
		if diff := cmp.Diff(want, values(objs)); diff != "" {
			t.Errorf("rendered values (-want +got):\n%s", diff)
		}
		for _, o := range objs {
			if _, ok := o.Object["sops"]; ok {
				t.Errorf("%s/%s still carries the sops metadata", o.GetKind(), o.GetName())
			}
		}
	})
	t.Run("a secretGenerator reads its SOPS .env and binary files decrypted", func(t *testing.T) {
		objs := renderDir(t, filepath.Join(dir, "gen"), dec)
		want := map[string]string{
			"Secret/app DB_PASSWORD": base64.StdEncoding.EncodeToString([]byte(dbPassword)),
			"Secret/app tls.crt":     base64.StdEncoding.EncodeToString([]byte(certBytes)),
		}
		if diff := cmp.Diff(want, values(objs)); diff != "" {
			t.Errorf("generated Secret (-want +got):\n%s", diff)
		}
	})
	t.Run("the files are what the sops CLI decrypts them to", func(t *testing.T) {
		identity, recipient := tools.AgeKey(t)
		enc := tools.EncryptAge(t, "app.env", "A=1\n", []string{recipient})
		if got := tools.Decrypt(t, "app.env", enc, identity); got != "A=1\n" {
			t.Errorf("sops decrypt = %q", got)
		}
	})
	t.Run("without decryption a SOPS file is read as it is", func(t *testing.T) {
		objs, err := source.RenderDirectory(t.Context(), filepath.Join(dir, "plain"), source.Helm{}, source.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if got := values(objs)["Secret/db password"]; !strings.HasPrefix(got, "ENC[") {
			t.Errorf("password = %q, want the ciphertext", got)
		}
	})
}

func TestRenderRefusesWhatDoesNotDecrypt(t *testing.T) {
	tools := sopstools.Find(t)
	keys, recipient := ageKeys(t, tools)
	other, _ := ageKeys(t, tools)
	encrypted := tools.EncryptAge(t, "secret.yaml", secretManifest(), []string{recipient}, secretsOnly...)

	cases := []struct {
		step, file, content, reason, says string
		dec                               *source.Decryption
	}{
		{
			step: "a key that does not open the file fails, naming the file and its recipient", file: "app/secret.yaml",
			content: encrypted, dec: &source.Decryption{Keys: other},
			reason: v1alpha1.ReasonDecryptionFailed, says: "none of the Sync's keys opens it (it is encrypted for age " + recipient,
		},
		{
			step: "no keys at all fails the same way", file: "app/secret.yaml",
			content: encrypted, dec: &source.Decryption{},
			reason: v1alpha1.ReasonDecryptionFailed, says: "none of the Sync's keys opens it",
		},
		{
			step: "a value changed after encryption fails its MAC", file: "app/secret.yaml",
			content: tamperValue(t, encrypted), dec: &source.Decryption{Keys: keys},
			reason: v1alpha1.ReasonDecryptionTampered, says: "the file was changed after it was encrypted",
		},
		{
			step: "a value added in clear among the encrypted ones is refused", file: "app/secret.yaml",
			content: strings.Replace(encrypted, "stringData:\n", "stringData:\n    extra: added-in-clear\n", 1), dec: &source.Decryption{Keys: keys},
			reason: v1alpha1.ReasonDecryptionTampered, says: "the file was changed after it was encrypted",
		},
		{
			step: "a field left in clear and changed fails the MAC", file: "app/secret.yaml",
			content: strings.Replace(encrypted, "type: Opaque", "type: kubernetes.io/tls", 1), dec: &source.Decryption{Keys: keys},
			reason: v1alpha1.ReasonDecryptionTampered, says: "MAC mismatch",
		},
		{
			step: "an unencrypted Secret fails under requireEncryption", file: "app/secret.yaml",
			content: secretManifest(), dec: &source.Decryption{Keys: keys, RequireEncryption: true},
			reason: v1alpha1.ReasonUnencryptedSecret, says: "holds a Secret that is not encrypted with SOPS",
		},
		{
			step: "an unencrypted Secret inside a List fails under requireEncryption", file: "app/list.yaml",
			content: "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(secretManifest()), "\n", "\n  ") + "\n",
			dec:     &source.Decryption{Keys: keys, RequireEncryption: true},
			reason:  v1alpha1.ReasonUnencryptedSecret, says: "not encrypted",
		},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, c.file), c.content)
			writeFile(t, filepath.Join(dir, "app/cm.yaml"), configMap("web", "hello"))
			objs, err := source.RenderDirectoryDecrypted(t.Context(), filepath.Join(dir, "app"), source.Helm{}, source.DefaultOptions(), c.dec)
			checkRefusal(t, objs, err, filepath.Base(c.file), c.reason, c.says)
		})
	}

	t.Run("a secretGenerator with literals fails under requireEncryption", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "app/kustomization.yaml"), "secretGenerator:\n- name: app\n  literals: [password="+dbPassword+"]\n")
		objs, err := source.RenderDirectoryDecrypted(t.Context(), filepath.Join(dir, "app"), source.Helm{}, source.DefaultOptions(), &source.Decryption{Keys: keys, RequireEncryption: true})
		checkRefusal(t, objs, err, "kustomization.yaml", v1alpha1.ReasonUnencryptedSecret, "secretGenerator[0] (app) has literals")
	})
	t.Run("a secretGenerator reading a plain .env fails under requireEncryption", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, "app/kustomization.yaml"), "secretGenerator:\n- name: app\n  envs: [app.env]\n")
		writeFile(t, filepath.Join(dir, "app/app.env"), "DB_PASSWORD="+dbPassword+"\n")
		objs, err := source.RenderDirectoryDecrypted(t.Context(), filepath.Join(dir, "app"), source.Helm{}, source.DefaultOptions(), &source.Decryption{Keys: keys, RequireEncryption: true})
		checkRefusal(t, objs, err, "kustomization.yaml", v1alpha1.ReasonUnencryptedSecret, "reads app.env, which is not encrypted")
	})
	t.Run("a kustomize error about a decrypted file has its values redacted", func(t *testing.T) {
		dir := t.TempDir()
		// Kustomize quotes an object it cannot accept (here: no name) whole.
		writeFile(t, filepath.Join(dir, "kust/kustomization.yaml"), "resources: [secret.yaml]\n")
		writeFile(t, filepath.Join(dir, "kust/secret.yaml"), tools.EncryptAge(t, "secret.yaml",
			"apiVersion: v1\nkind: Secret\nmetadata:\n  labels: {a: "+dbPassword+"}\n", []string{recipient}, "--encrypted-regex", "^labels$"))
		_, err := source.RenderDirectoryDecrypted(t.Context(), filepath.Join(dir, "kust"), source.Helm{}, source.DefaultOptions(), &source.Decryption{Keys: keys})
		if err == nil {
			t.Fatal("rendered a Secret without a name")
		}
		if strings.Contains(err.Error(), dbPassword) || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("error = %v, want the decrypted value redacted", err)
		}
		if !strings.Contains(err.Error(), "Secret") {
			t.Errorf("error = %v, want only decrypted values redacted, not the words around them", err)
		}
	})
}

// checkRefusal fails t unless err is a RenderError with reason, naming file,
// saying says, and holding no plaintext; and nothing rendered.
func checkRefusal(t *testing.T, objs []*unstructured.Unstructured, err error, file, reason, says string) {
	t.Helper()
	var re *source.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("error = %v (objects %d), want a RenderError", err, len(objs))
	}
	if re.Reason != reason || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), says) {
		t.Errorf("error = %q (reason %q), want reason %s naming %s and saying %q", err, re.Reason, reason, file, says)
	}
	if strings.Contains(err.Error(), dbPassword) {
		t.Errorf("error quotes the plaintext: %v", err)
	}
	if objs != nil {
		t.Errorf("rendered %d objects from a failed render", len(objs))
	}
}

// tamperValue changes the first encrypted value of a SOPS file, as someone
// editing it without the key would.
func tamperValue(t *testing.T, file string) string {
	t.Helper()
	enc := regexp.MustCompile(`ENC\[AES256_GCM,data:([A-Za-z0-9+/=]+),`)
	m := enc.FindStringSubmatchIndex(file)
	if m == nil {
		t.Fatal("no encrypted value to tamper with")
	}
	data := []byte(file)
	i := m[2]
	if data[i] == 'A' {
		data[i] = 'B'
	} else {
		data[i] = 'A'
	}
	return string(data)
}

func renderDir(t *testing.T, dir string, dec *source.Decryption) []*unstructured.Unstructured {
	t.Helper()
	objs, err := source.RenderDirectoryDecrypted(t.Context(), dir, source.Helm{}, source.DefaultOptions(), dec)
	if err != nil {
		t.Fatalf("render %s: %v", dir, err)
	}
	return objs
}

// values maps "Kind/name key" to each value of every object's data and stringData.
func values(objs []*unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		for _, field := range []string{"data", "stringData"} {
			m, _, _ := unstructured.NestedStringMap(o.Object, field)
			for k, v := range m {
				out[o.GetKind()+"/"+o.GetName()+" "+k] = v
			}
		}
	}
	return out
}

func TestRenderCachesDecryptedRendersByTheirKeys(t *testing.T) {
	tools := sopstools.Find(t)
	keys, recipient := ageKeys(t, tools)
	other, _ := ageKeys(t, tools)
	repo := gitserver.NewLocalRepo(t, "encrypted")
	head := pushTree(t, repo, map[string]string{
		"app/secret.yaml": tools.EncryptAge(t, "secret.yaml", secretManifest(), []string{recipient}, secretsOnly...),
	}, nil)
	cacheDir := t.TempDir()
	src := newSource(t, source.Options{CacheDir: cacheDir})
	rev := fetch(t, src, source.Request{URL: repo.URL(), Ref: v1alpha1.GitRef{Commit: head}})

	t.Run("a render with a key that does not open the file fails", func(t *testing.T) {
		_, err := src.RenderDecrypted(t.Context(), rev, "app", source.Helm{}, &source.Decryption{Keys: other})
		var re *source.RenderError
		if !errors.As(err, &re) || re.Reason != v1alpha1.ReasonDecryptionFailed {
			t.Fatalf("error = %v, want DecryptionFailed", err)
		}
	})
	t.Run("the same revision renders with the right key: the failure is cached for the other key only", func(t *testing.T) {
		snap, err := src.RenderDecrypted(t.Context(), rev, "app", source.Helm{}, &source.Decryption{Keys: keys})
		if err != nil {
			t.Fatal(err)
		}
		if got := values(snap.Objects)["Secret/db password"]; got != dbPassword {
			t.Errorf("password = %q, want the plaintext", got)
		}
	})
	t.Run("a render without keys never sees the decrypted render", func(t *testing.T) {
		snap, err := src.Render(t.Context(), rev, "app", source.Helm{})
		if err != nil {
			t.Fatal(err)
		}
		if got := values(snap.Objects)["Secret/db password"]; got == dbPassword {
			t.Error("a render without keys returned the plaintext cached for the keys' render")
		}
	})
	t.Run("the git cache on disk holds no plaintext", func(t *testing.T) {
		assertNoPlaintextUnder(t, cacheDir, dbPassword)
	})
}

func TestParseKeysNamesTheEntryAtFault(t *testing.T) {
	cases := []struct {
		step string
		data map[string][]byte
		says string
	}{
		{"a Secret without key entries", map[string][]byte{"notes.txt": []byte("x")}, "holds no key"},
		{"an .agekey entry that is no identity", map[string][]byte{"bad.agekey": []byte("AGE-SECRET-KEY-1NOTAKEY" + dbPassword)}, "entry bad.agekey: not age identities"},
		{"an .asc entry that is no key", map[string][]byte{"bad.asc": []byte(dbPassword)}, "entry bad.asc: not an armored OpenPGP key"},
	}
	for _, c := range cases {
		t.Run(c.step, func(t *testing.T) {
			_, err := source.ParseKeys(c.data)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("error = %v, want one saying %q", err, c.says)
			}
			if strings.Contains(err.Error(), dbPassword) {
				t.Errorf("error quotes the entry: %v", err)
			}
		})
	}
}

// assertNoPlaintextUnder reads every file under dir and fails t if one holds
// plaintext, as it is or in base64.
func assertNoPlaintextUnder(t *testing.T, dir, plaintext string) {
	t.Helper()
	encoded := base64.StdEncoding.EncodeToString([]byte(plaintext))
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(plaintext)) || bytes.Contains(data, []byte(encoded)) {
			t.Errorf("%s holds the plaintext", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRenderDecryptsWithAnOpenPGPKey(t *testing.T) {
	tools := sopstools.Find(t)
	pubring, private, fingerprint := sopstools.PGPKey(t)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "app/secret.yaml"), tools.EncryptPGP(t, "secret.yaml", secretManifest(), pubring, fingerprint, secretsOnly...))

	t.Run("a Secret encrypted for an OpenPGP key renders decrypted with its *.asc key", func(t *testing.T) {
		keys, err := source.ParseKeys(map[string][]byte{"ops.asc": private})
		if err != nil {
			t.Fatalf("ParseKeys: %v", err)
		}
		objs := renderDir(t, filepath.Join(dir, "app"), &source.Decryption{Keys: keys})
		if got := values(objs)["Secret/db password"]; got != dbPassword {
			t.Errorf("password = %q, want the plaintext", got)
		}
	})
	t.Run("an age key alone does not open it, and the message names the fingerprint", func(t *testing.T) {
		keys, _ := ageKeys(t, tools)
		objs, err := source.RenderDirectoryDecrypted(t.Context(), filepath.Join(dir, "app"), source.Helm{}, source.DefaultOptions(), &source.Decryption{Keys: keys})
		checkRefusal(t, objs, err, "secret.yaml", v1alpha1.ReasonDecryptionFailed, "pgp "+fingerprint)
	})
	t.Run("a public key in a *.asc entry is refused, naming the entry", func(t *testing.T) {
		var armored bytes.Buffer
		w, err := armor.Encode(&armored, openpgp.PublicKeyType, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(pubring); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		_, err = source.ParseKeys(map[string][]byte{"pub.asc": armored.Bytes()})
		if err == nil || !strings.Contains(err.Error(), "entry pub.asc: an OpenPGP public key") {
			t.Errorf("error = %v, want the public key refused", err)
		}
	})
}
