// Package oci reads and writes OCI registries, a room of source: the one
// client of the distribution API for Helm charts (source/chartrepo) and for
// artifacts. It knows api's reasons and source/git's HTTP rules (the
// transport, its bounded answers, the redirect policy, the failure classes);
// nothing of charts, rendering or Kubernetes, whose callers read the
// credentials (ParseDockerConfig reads a kubernetes.io/dockerconfigjson
// Secret's data they hand it).
//
// A Repository is what oci://host[:port]/path names (ParseURL): Docker Hub's
// names become registry-1.docker.io and its one-component paths library/…,
// and loopback hosts are spoken to over plain HTTP, as docker does. A Client
// speaks to it through oras-go's remote.Repository, one per call, with
// oras-go's auth client for the spec's token flow (a Bearer challenge
// answered with a token from its realm, asked with the username and password,
// or an OAuth2 refresh token exchanged there; basic authentication when the
// registry asks for it). Tokens are kept per registry, scope and credentials
// (an auth.Cache per Credentials.Key) until a registry refuses one. HTTP
// goes through git's transport (one per CA bundle), whose error answers are
// read up to 4 KiB and dropped, and through a per-call guard that refuses
// credentials over plain HTTP off loopback and keeps a tag list's pages on
// the registry.
//
// Everything read is bounded (Options): a manifest before a byte of it is
// read when its size is announced, a tag list in tags, pages and bytes, a
// blob by the caller's limit, before any byte is read; and everything read is
// checked against its digest. Manifest follows an image index to the one
// manifest of the artifact type wanted. Every failure is an *Error with one
// of api's reasons and a message of ours naming what was read and the cause
// by its HTTP status: oras-go's errors quote URLs (with their queries) and
// the registry's error details, so none is passed on as it is.
package oci
