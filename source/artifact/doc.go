// Package artifact reads OCI artifacts as desired state, a room of source: a
// Sync's spec.source.oci names a repository of a registry and a tag, a semver
// range of tags or a digest; Store.Fetch resolves it to one manifest, checks
// its cosign signature when the Sync trusts keys (source/cosign), and unpacks
// its content layer onto disk once per layer digest for every Sync that names
// it; source renders a path of it as it renders a path of a commit, by the
// same copier and within the same bounds (gitcache.NewDiskCopier).
//
// Two layouts are read: Flux's (flux push artifact, tether push artifact), a
// manifest whose one layer of media type FluxContentType is a gzipped tar of
// a directory; and a plain tarball, a manifest of exactly one layer, gzipped
// or not. The registry is spoken to through source/oci (oras-go with
// Tether's bounds); its answers are never quoted.
//
// An artifact is unpacked within the bounds of a commit's read: MaxFileSize
// per file, MaxTreeSize in all, MaxTreeEntries entries, counted as the tar is
// read, so that a small layer cannot unpack to gigabytes; names that leave
// the directory, links and device files are refused. Unpacked artifacts stay
// on disk (a restarted agent renders the last applied one while the registry
// cannot be reached) within MaxDiskBytes, the least recently used going
// first.
package artifact
