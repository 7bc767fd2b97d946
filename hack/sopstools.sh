#!/usr/bin/env bash
# sopstools.sh DIR — build the sops CLI and age's age and age-keygen, at pinned versions,
# from the Go module proxy, into DIR. The decryption tests encrypt their repositories
# with them, as a user would (docs/secrets.md), and compare the agent's decryption
# with what `sops decrypt` prints; the agent itself never runs them (it reads SOPS
# files with its own code, source/sops_*.go).
#
# Each tool is built once per version: a stamp file records what DIR holds, so a warm
# run only checks the stamps (0.04s). A cold build (an empty Go build cache, modules
# already downloaded) took 2m51s of CPU (user+sys): 13m37s of wall time at nice 10 on
# two cores shared with four other builds (load about 20), so about 1.5 minutes on two
# idle cores; most of it is sops's cloud key services (AWS, GCP, Azure, Vault).
set -euo pipefail

# SOPS_VERSION is the sops release whose format source/sops_*.go reads (the agent
# linked its library at this version before it read the format itself): the tests
# check the agent against it. Moving it means running the decryption tests.
SOPS_VERSION=v3.13.3
AGE_VERSION=v1.3.1

dir=${1:?usage: sopstools.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

fresh() { # fresh NAME VERSION: true when DIR already holds NAME at VERSION
	[[ -x "$dir/$1" && "$(cat "$dir/.$1.version" 2>/dev/null)" == "$2" ]]
}
stamp() { echo "$2" >"$dir/.$1.version"; }

# Built outside any module, so that only the tool's own go.mod decides its
# dependencies.
cd "$(mktemp -d)"
if ! fresh sops "$SOPS_VERSION"; then
	echo "[sopstools] building sops $SOPS_VERSION"
	GOBIN="$dir" GOFLAGS="${GOFLAGS:-} -mod=mod" go install "github.com/getsops/sops/v3/cmd/sops@$SOPS_VERSION"
	stamp sops "$SOPS_VERSION"
fi
if ! fresh age "$AGE_VERSION" || ! fresh age-keygen "$AGE_VERSION"; then
	echo "[sopstools] building age and age-keygen $AGE_VERSION"
	GOBIN="$dir" GOFLAGS="${GOFLAGS:-} -mod=mod" go install "filippo.io/age/cmd/age@$AGE_VERSION" "filippo.io/age/cmd/age-keygen@$AGE_VERSION"
	stamp age "$AGE_VERSION"
	stamp age-keygen "$AGE_VERSION"
fi
