#!/usr/bin/env bash
# alertmanager.sh — install Alertmanager from Debian's packages for the notification
# test that sends a failing Sync's alert to a real Alertmanager and resolves it
# (notify/alertmanager_test.go), when /usr/bin/prometheus-alertmanager is missing.
# The test runs the binary on loopback with its own configuration and data
# directory; the package's service is never used.
#
# The version is pinned to Debian 12's package. Should the mirror stop serving it,
# the script installs Debian's candidate instead and says so: the test uses only the
# v2 API's POST and GET /api/v2/alerts, stable since Alertmanager 0.16.
#
# It needs root or password-less sudo. Without either, or off Debian, it installs
# nothing and says so: the test then skips with a message, except under CI=true,
# where a missing Alertmanager fails the run.
set -euo pipefail

ALERTMANAGER_VERSION=0.25.0-1+b4

bin=/usr/bin/prometheus-alertmanager
say() { echo "[alertmanager] $*"; }

if [[ -x "$bin" ]]; then
	say "present: $("$bin" --version 2>&1 | head -1)"
	exit 0
fi

unavailable() {
	if [[ "${CI:-}" == true ]]; then
		say "cannot install Alertmanager: $1 (CI=true: the notification tests need it)" >&2
		exit 1
	fi
	say "not installed: $1; the Alertmanager test will skip (set TETHER_ALERTMANAGER to a binary to run it)"
	exit 0
}

start=$SECONDS
# shellcheck source=lib/debian.sh
source "$(dirname "$0")/lib/debian.sh"
debian_install "$ALERTMANAGER_VERSION" prometheus-alertmanager
say "installed $("$bin" --version 2>&1 | head -1) (package $version) in $((SECONDS - start))s"
