#!/usr/bin/env bash
# axe.sh DIR — download axe-core, Deque's accessibility engine, at a pinned version from
# the npm registry, check the tarball against a pinned SHA-512, and put its axe.min.js
# into DIR/axe-core/axe.min.js. The UI's browser tests (test/browser/a11y_test.go)
# inject it into each page they open over the DevTools protocol and fail on a serious
# or critical violation.
#
# It uses curl, sha512sum and tar only: npm is not needed (a fresh machine may lack
# it), nothing of the package runs here, and nothing of it ships with Tether (axe-core
# is MPL-2.0; it is a test tool, downloaded, like the control plane's binaries).
#
# A stamp file records the version DIR holds, so a warm run only checks it. A cold run
# downloads 0.7 MB.
set -euo pipefail

# AXE_CORE_SHA512 is the npm registry's dist.integrity of the tarball (sha512-...,
# base64) written in hex, as sha512sum prints it.
AXE_CORE_VERSION=4.14.1
AXE_CORE_SHA512=1477dafa598d8d065f273d6af302aa203c02e83131707b7fa648cd41bd3d6b734f8c22a0dab86ee6a6f64b8afbe804b214d36db85a2826965edfb3a0b9d546b5

dir=${1:?usage: axe.sh DIR}/axe-core
say() { echo "[axe-core] $*"; }

if [[ -f "$dir/axe.min.js" && "$(cat "$dir/.version" 2>/dev/null)" == "$AXE_CORE_VERSION" ]]; then
	say "present: $AXE_CORE_VERSION"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
url=https://registry.npmjs.org/axe-core/-/axe-core-$AXE_CORE_VERSION.tgz
say "downloading $url"
curl -fsSL --retry 3 -o "$tmp/axe-core.tgz" "$url"
echo "$AXE_CORE_SHA512  $tmp/axe-core.tgz" | sha512sum --check --quiet - ||
	{ say "the tarball's SHA-512 is not the pinned one" >&2; exit 1; }
tar -xzf "$tmp/axe-core.tgz" -C "$tmp" package/axe.min.js package/LICENSE
mkdir -p "$dir"
mv "$tmp/package/axe.min.js" "$tmp/package/LICENSE" "$dir/"
echo "$AXE_CORE_VERSION" >"$dir/.version"
say "installed $AXE_CORE_VERSION into $dir"
