package ociregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// Media types of Flux's artifact format, as flux push artifact writes it
// (fluxcd.io's OCI documentation), written here from the documentation and
// not from Tether's code, so that a test pushing with them checks Tether
// against the format, not against itself.
const (
	FluxConfigType  = "application/vnd.cncf.flux.config.v1+json"
	FluxContentType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// LayerType is a plain image layer: a gzipped tar.
	LayerType = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// Tarball is a gzipped tar of files (by slash-separated name), in name order,
// each a regular file of mode 0644.
func Tarball(t testing.TB, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(files[name])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[name])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// PushFluxArtifact pushes layer (a gzipped tar) to charts/<name> as flux
// push artifact does: a manifest with Flux's config media type, one layer of
// Flux's content media type, and the source, revision and created
// annotations; tagged tag (none: by digest only). It returns the
// manifest's digest.
func (s *Server) PushFluxArtifact(t testing.TB, name, tag string, layer []byte) string {
	t.Helper()
	config := s.PushBlob(t, name, FluxConfigType, []byte("{}"))
	content := s.PushBlob(t, name, FluxContentType, layer)
	return s.PushRawManifest(t, name, tag, map[string]any{
		"schemaVersion": 2, "mediaType": ManifestType, "config": config, "layers": []Descriptor{content},
		"annotations": map[string]string{
			"org.opencontainers.image.source":   "https://github.com/example/deploy",
			"org.opencontainers.image.revision": "main@sha1:0123456789abcdef0123456789abcdef01234567",
			"org.opencontainers.image.created":  "2026-11-30T06:00:00Z",
		},
	})
}

// PushTarballArtifact pushes layer as a plain image of one layer (the
// image spec's empty config and a gzipped tar layer), as `oras push` of a
// tarball or a hand-made CI job would.
func (s *Server) PushTarballArtifact(t testing.TB, name, tag string, layer []byte) string {
	t.Helper()
	config := s.PushBlob(t, name, "application/vnd.oci.empty.v1+json", []byte("{}"))
	content := s.PushBlob(t, name, LayerType, layer)
	return s.PushRawManifest(t, name, tag, map[string]any{"schemaVersion": 2, "mediaType": ManifestType, "config": config, "layers": []Descriptor{content}})
}

// PushRawManifest pushes manifest (marshalled as JSON) to charts/<name>,
// tagged tag or, with tag "", by its digest; it returns the digest.
func (s *Server) PushRawManifest(t testing.TB, name, tag string, manifest any) string {
	t.Helper()
	data, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	ref := tag
	if ref == "" {
		ref = digest
	}
	mediaType := ManifestType
	if m, ok := manifest.(map[string]any); ok {
		if mt, ok := m["mediaType"].(string); ok {
			mediaType = mt
		}
	}
	s.do(t, http.MethodPut, s.registry+"/v2/charts/"+name+"/manifests/"+ref, mediaType, data, http.StatusCreated)
	return digest
}

// PushSignature pushes a cosign signature (the blobs and manifest
// test/signing's CosignKey.SignatureManifest made) to charts/<name> under
// its tag, as cosign sign does.
func (s *Server) PushSignature(t testing.TB, name, tag string, blobs map[string][]byte, manifest []byte) {
	t.Helper()
	for mediaType, data := range blobs {
		s.PushBlob(t, name, mediaType, data)
	}
	s.do(t, http.MethodPut, s.registry+"/v2/charts/"+name+"/manifests/"+tag, ManifestType, manifest, http.StatusCreated)
}

// Host is the registry's host:port as the agent reaches it (the counting
// proxy), the host of Repository.
func (s *Server) Host() string {
	host, _, _ := strings.Cut(strings.TrimPrefix(s.Repository, "oci://"), "/")
	return host
}

// Digest is the digest of the manifest tag names in charts/<name>, as the
// registry says it (Docker-Content-Digest).
func (s *Server) Digest(t testing.TB, name, tag string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodHead, s.registry+"/v2/charts/"+name+"/manifests/"+tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", ManifestType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	digest := resp.Header.Get("Docker-Content-Digest")
	if resp.StatusCode != http.StatusOK || digest == "" {
		t.Fatalf("HEAD the manifest of %s:%s: %s, digest %q", name, tag, resp.Status, digest)
	}
	return digest
}
