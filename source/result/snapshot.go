package result

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Revision is one commit of one repository, reached through one ref.
type Revision struct {
	URL string
	// Ref is the branch or tag the commit was reached through; empty for a pinned commit.
	Ref string
	// Commit is the full hex SHA-1 of the commit; empty for a packaged chart.
	Commit string
	// Package is, for a packaged chart (FetchChart), the hex SHA-256 of its
	// package; Ref is then "name@version" and URL the chart repository.
	Package string `json:",omitempty"`
	// Digest is, for a packaged chart rendered (RenderChart), the hex SHA-256
	// of its package and of the values it rendered with.
	Digest string `json:",omitempty"`
	// TagObject is the hash of the annotated tag object Ref names, when it
	// names one (a lightweight tag, a branch: empty).
	TagObject string `json:",omitempty"`
	// Signer is who signed the revision, when the Request asked for it to be
	// verified (verify.Signer's String, from the trusted keys); empty otherwise.
	Signer string `json:",omitempty"`
	// Artifact is, for an OCI artifact (spec.source.oci), the hex SHA-256 of
	// its manifest; URL is then oci://host/path, Ref the tag followed (empty
	// for a digest) and Commit empty.
	Artifact string `json:",omitempty"`
	// Layer is, for an OCI artifact, the hex SHA-256 of the layer rendered.
	Layer string `json:",omitempty"`
}

// String writes the revision as status reports it: "main@sha1:<hash>",
// "sha1:<hash>" for a pinned commit, "podinfo@6.14.1+sha256:<digest>" for a
// packaged chart (its package's digest until it is rendered), "v1.4.0@sha256:
// <digest>" for an OCI artifact (its manifest's digest, as Flux writes it).
func (r Revision) String() string {
	if r.Artifact != "" {
		if r.Ref == "" {
			return "sha256:" + r.Artifact
		}
		return r.Ref + "@sha256:" + r.Artifact
	}
	if r.Package != "" {
		if r.Digest != "" {
			return r.Ref + "+sha256:" + r.Digest
		}
		return r.Ref + "+sha256:" + r.Package
	}
	if r.Ref == "" {
		return "sha1:" + r.Commit
	}
	return r.Ref + "@sha1:" + r.Commit
}

// Snapshot is the desired state at one revision: immutable once returned, because
// every caller receives its own copy of the objects.
type Snapshot struct {
	Revision Revision
	// Path rendered, relative to the repository root.
	Path    string
	Objects []*unstructured.Unstructured
}
