package source

import (
	"context"
	"os"
	"path/filepath"

	"tether.dev/tether/source/artifact"
	"tether.dev/tether/source/cosign"
	"tether.dev/tether/source/gitcache"
	"tether.dev/tether/source/oci"
	"tether.dev/tether/source/render"
)

type (
	// ArtifactRequest names an OCI artifact to fetch: a Sync's spec.source.oci
	// with its Secrets read (artifact.Request).
	ArtifactRequest = artifact.Request
	// RegistryCredentials are an OCI registry's credentials (oci.Credentials).
	RegistryCredentials = oci.Credentials
	// CosignKeys are the cosign public keys an artifact's signature is
	// checked against (cosign.Keys).
	CosignKeys = cosign.Keys
)

// ParseDockerConfig reads registry's credentials from the data of a
// kubernetes.io/dockerconfigjson Secret (oci.ParseDockerConfig).
func ParseDockerConfig(data []byte, registry string) (RegistryCredentials, error) {
	return oci.ParseDockerConfig(data, registry)
}

// ParseCosignKeys reads the PEM public keys of a Secret's data
// (cosign.ParseKeys).
func ParseCosignKeys(data map[string][]byte) (*CosignKeys, error) { return cosign.ParseKeys(data) }

// FetchArtifact resolves req to one artifact of its registry, checks its
// signature when req has Keys, and unpacks its content layer once per digest
// for every caller (source/artifact). The Revision renders like a commit's:
// RenderSelected of a path inside it, with the same copier and bounds.
func (s *Source) FetchArtifact(ctx context.Context, req ArtifactRequest) (Revision, error) {
	return s.artifacts.Fetch(ctx, req)
}

// tree copies what rendering dir (and more) of rev reads into memory: from
// the git cache for a commit, from the unpacked layer for an artifact.
func (s *Source) tree(rev Revision, dir string, more ...string) (*render.FS, error) {
	if rev.Artifact == "" {
		return s.git.Tree(rev, dir, more...)
	}
	root, err := s.artifacts.Root(rev)
	if err != nil {
		return nil, err
	}
	c := gitcache.NewDiskCopier(root, treeBounds(s.opts))
	dirs := append([]string{dir}, more...)
	for _, d := range dirs {
		if err := c.CopyFor(d); err != nil {
			return nil, err
		}
	}
	for _, d := range dirs {
		if err := c.Check(d); err != nil {
			return nil, err
		}
	}
	return c.FS(), nil
}

// artifactHolds reports whether the artifact rev holds the regular file
// name (relative to its root); read is false when it is not on disk (the
// render reports why).
func (s *Source) artifactHolds(rev Revision, name string) (found, read bool, err error) {
	root, err := s.artifacts.Root(rev)
	if err != nil {
		return false, false, nil
	}
	info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(name)))
	return err == nil && info.Mode().IsRegular(), true, nil
}
