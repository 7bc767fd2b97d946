// Package chartrepo reads chart repositories, a room of source: an index.yaml
// over http(s), or an OCI registry, and the packages they name. It knows api's
// reasons, source/result, the git room's HTTP rules (source/git: Bounded, the
// transport, the failure classes) and the YAML node bound of rendering
// (source/render); nothing of rendering a chart, which source does with the
// package it hands back (Package).
//
// Repositories.FetchChart(ctx, Request) resolves an exact version or a semver
// range against the repository's index and downloads the newest match's
// package, the Revision naming the repository (URL), "name@version" (Ref) and
// the package's SHA-256 (Package). An index is read once per (repository,
// credentials) and MaxAge however many callers ask, and cut into one part per
// chart before it is parsed (index.go), so that a large index is never one YAML
// tree; the parsed parts are kept within a byte bound and dropped when idle
// (index_cache.go). A package is downloaded once per version and digest,
// checked against the index's SHA-256, and kept in memory within
// ChartCacheBytes (package.go). Conversations follow git's HTTP rules
// (http.go): credentials go to the repository's own host only, an error
// answer is reported by its status alone, and no error quotes a credential.
//
// An OCI registry (oci://host/path, oci.go) is read the same way through
// source/oci, the one client of registries: the tag list of path/name (all
// pages, within MaxChartIndexBytes and 20,000 tags; "_" read as "+") stands
// for the index; the newest tag's manifest (at most 4 MiB; an image index
// followed to the manifest of Helm's config media type) must hold one layer
// of Helm's chart media type, within MaxChartPackageBytes, downloaded by its
// sha256 digest and checked against it. oci speaks the spec's token flow
// (oras-go's auth client; tokens kept per registry, scope and credentials)
// by git's HTTP rules; a BearerToken is the registry's access token, and a
// registry on a loopback address is spoken to over plain HTTP. Its errors
// keep their reasons, a registry's nonsense reported as ChartRepositoryFailed.
package chartrepo
