// Package image tests Tether's container image as `make image` and `make release`
// build it (hack/imagegen, no container engine): the test builds the tether
// binary of this tree, packs it with imagegen for the machine's architecture
// only (cross-compiling a second 90 MB binary would double the test's cost; `make
// image` builds amd64 and arm64), pushes it to the real OCI registry on loopback
// (test/ociregistry), and reads everything back over the registry's HTTP API,
// without imagegen's library: the index and its digest, the config (user,
// entrypoint, labels), the files of the layers (users, CA roots, the binary) and
// the SBOM attached as a referrer.
package image
