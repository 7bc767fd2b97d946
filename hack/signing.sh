#!/usr/bin/env bash
# signing.sh — install gpg (with its agent) and ssh-keygen from Debian's packages,
# when a machine lacks them, for the tests that sign commits and tags the way a
# user's git does (test/signing: spec.source.verify). Most machines have both.
#
# Versions are pinned to Debian 12's packages; should the mirror stop serving
# them, Debian's candidate is installed instead and the script says so (the tests
# use gpg --quick-gen-key, --armor --export and ssh-keygen -t ed25519, all old).
#
# It needs root or password-less sudo. Without either, or off Debian, it installs
# nothing and says so: the signing tests then fail saying what is missing; under
# CI=true the script fails at once.
set -euo pipefail

GPG_VERSION=2.2.40-1.1+deb12u2
OPENSSH_VERSION=1:9.2p1-2+deb12u6

say() { echo "[signing] $*"; }

unavailable() {
	if [[ "${CI:-}" == true ]]; then
		say "cannot install the signing tools: $1 (CI=true: the verification tests need them)" >&2
		exit 1
	fi
	say "not installed: $1; the tests of spec.source.verify will fail until gpg and ssh-keygen are installed"
	exit 0
}

# shellcheck source=lib/debian.sh
source "$(dirname "$0")/lib/debian.sh"
start=$SECONDS
if command -v gpg >/dev/null && command -v gpgconf >/dev/null && command -v gpg-agent >/dev/null; then
	say "present: $(gpg --version | head -1)"
else
	debian_install "$GPG_VERSION" gpg gpg-agent gpgconf
	say "installed $(gpg --version | head -1) (package $version) in $((SECONDS - start))s"
fi
if command -v ssh-keygen >/dev/null; then
	say "present: ssh-keygen of $(ssh -V 2>&1 || echo openssh)"
else
	debian_install "$OPENSSH_VERSION" openssh-client
	say "installed ssh-keygen (package $version) in $((SECONDS - start))s"
fi
