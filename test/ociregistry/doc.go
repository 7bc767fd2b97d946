// Package ociregistry runs a real OCI registry (CNCF Distribution's registry,
// built by `make testbin` into .tools/testbin/registry) on loopback for the tests
// of charts from OCI registries, with storage in a temporary directory, and a
// reverse proxy in front of it that counts the requests it forwards and can
// require credentials through the distribution spec's token flow (a 401 with a
// Bearer challenge, a token from the proxy's own token endpoint). Tests push
// charts as Helm does (Push: a config blob, the package as a layer of Helm's
// chart media type, a manifest tagged with the version, "+" written "_"), or
// any manifest and blobs they like (PushBlob, PushManifest: hostile cases),
// straight to the registry; the agent reads through the proxy (Repository).
// The proxy can also take an OAuth2 refresh token at its token endpoint
// (AcceptRefreshToken, as a docker config's identitytoken is exchanged), and
// corrupt the blobs it answers (CorruptBlobs: their content no longer matches
// their digest).
package ociregistry
