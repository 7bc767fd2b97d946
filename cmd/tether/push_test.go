package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tether.dev/tether/api/v1alpha1"
	"tether.dev/tether/source"
	"tether.dev/tether/test/ociregistry"
)

// What `tether push artifact` pushes is what the agent applies: read back by
// the agent's path (FetchArtifact, RenderSelected), in Flux's format, the same
// digest for the same files.
func TestPushArtifactPushesWhatTheAgentRendersTheSameFilesToTheSameDigest(t *testing.T) {
	reg := ociregistry.Start(t)
	dir := t.TempDir()
	for name, text := range map[string]string{
		"deploy/web.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {greeting: pushed}\n",
		"deploy/kustomization.yaml": "resources: [web.yaml]\n",
		".git/config":               "[core]\n",
	} {
		mustOK(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755))
		mustOK(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	url := reg.Repository + "/pushed"
	push := func(t *testing.T, tag string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		args := []string{"push", "artifact", dir, "--url", url, "--tag", tag, "--revision", "main@sha1:0123456789abcdef0123456789abcdef01234567", "--source", "https://git.example.com/deploy"}
		if err := run(t.Context(), args, &out, &errOut); err != nil {
			t.Fatalf("tether push artifact: %v\n%s", err, errOut.String())
		}
		line := strings.TrimSpace(out.String())
		if !strings.HasPrefix(line, url+":"+tag+"@sha256:") {
			t.Fatalf("printed %q; want %s:%s@sha256:<digest>", line, url, tag)
		}
		return line[strings.LastIndex(line, "@")+1:]
	}
	first := push(t, "v1")

	cache := t.TempDir()
	src, err := source.New(source.Options{CacheDir: cache})
	mustOK(t, err)
	rev, err := src.FetchArtifact(t.Context(), source.ArtifactRequest{URL: url, Ref: v1alpha1.OCIRef{Tag: "v1"}})
	mustOK(t, err)
	snap, err := src.RenderSelected(t.Context(), rev, "deploy", source.Directory{}, source.Helm{}, nil)
	mustOK(t, err)
	if rev.String() != "v1@"+first || len(snap.Objects) != 1 || snap.Objects[0].GetName() != "web" {
		t.Fatalf("the agent read %s and rendered %d objects; want v1@%s rendering web", rev, len(snap.Objects), first)
	}

	t.Run("in Flux's format, .git left out, annotated", func(t *testing.T) {
		manifest := getJSON(t, reg, "pushed", "manifests/"+first)
		var m struct {
			Config      struct{ MediaType string }
			Layers      []struct{ MediaType, Digest string }
			Annotations map[string]string
		}
		mustOK(t, json.Unmarshal(manifest, &m))
		if m.Config.MediaType != ociregistry.FluxConfigType || len(m.Layers) != 1 || m.Layers[0].MediaType != ociregistry.FluxContentType {
			t.Errorf("manifest %s; want Flux's config and one content layer", manifest)
		}
		for key, want := range map[string]string{"org.opencontainers.image.revision": "main@sha1:0123456789abcdef0123456789abcdef01234567", "org.opencontainers.image.source": "https://git.example.com/deploy"} {
			if m.Annotations[key] != want {
				t.Errorf("annotation %s = %q; want %q", key, m.Annotations[key], want)
			}
		}
		if m.Annotations["org.opencontainers.image.created"] == "" {
			t.Error("no created annotation")
		}
		if _, err := os.Stat(filepath.Join(cache, "artifacts", rev.Layer, ".git")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the artifact holds .git (%v)", err)
		}
	})

	t.Run("the same files pushed again make the same layer", func(t *testing.T) {
		// The manifest differs by its created annotation; the layer must not.
		second := push(t, "v2")
		layerOf := func(digest string) string {
			var m struct{ Layers []struct{ Digest string } }
			mustOK(t, json.Unmarshal(getJSON(t, reg, "pushed", "manifests/"+digest), &m))
			return m.Layers[0].Digest
		}
		if a, b := layerOf(first), layerOf(second); a != b {
			t.Errorf("the same files made the layers %s and %s", a, b)
		}
	})

	t.Run("a symlink is refused, naming it", func(t *testing.T) {
		mustOK(t, os.Symlink("/etc/passwd", filepath.Join(dir, "deploy", "passwd")))
		var out, errOut bytes.Buffer
		err := run(t.Context(), []string{"push", "artifact", dir, "--url", url, "--tag", "v3"}, &out, &errOut)
		if err == nil || !strings.Contains(err.Error(), filepath.Join("deploy", "passwd")) {
			t.Errorf("pushing a symlink: %v; want a refusal naming deploy/passwd", err)
		}
	})
}

func getJSON(t *testing.T, reg *ociregistry.Server, name, path string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+reg.Host()+"/v2/charts/"+name+"/"+path, nil)
	mustOK(t, err)
	req.Header.Set("Accept", ociregistry.ManifestType)
	resp, err := http.DefaultClient.Do(req)
	mustOK(t, err)
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	mustOK(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	return data
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
