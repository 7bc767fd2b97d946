#!/usr/bin/env bash
# prometheus.sh DIR — install the Prometheus server and promtool from Debian's packages
# for the alert tests (test/alerts runs the server on loopback with the shipped rules;
# deploy/monitoring runs promtool check and test rules), and link both into DIR, the
# test binaries' directory where the tests look for them, when they are missing.
#
# Debian's package replaced a build from source (Prometheus v3.15.1 from the module
# proxy, about 5 minutes of the cold make test on two cores). The version is pinned to
# Debian 12's package; should the mirror stop serving it, the script installs Debian's
# candidate instead and says so. The tests use the v1 HTTP API (query, query_range,
# alerts, rules, targets) and promtool's rule tests, stable across 2.x and 3.x; the
# shipped rules must load in both, and `make test-prometheus3` runs the alert tests
# against v3 built from source.
#
# It needs root or password-less sudo. Without either, or off Debian, it installs
# nothing and says so: the alert tests then fail saying what is missing (as a missing
# control plane does), so run it where make test runs.
set -euo pipefail

PROMETHEUS_VERSION=2.42.0+ds-5+deb12u1

dir=${1:?usage: prometheus.sh DIR}
say() { echo "[prometheus] $*"; }
mkdir -p "$dir"

link() {
	ln -sf /usr/bin/prometheus "$dir/prometheus"
	ln -sf /usr/bin/promtool "$dir/promtool"
}

if [[ -x /usr/bin/prometheus && -x /usr/bin/promtool ]]; then
	link
	say "present: $(/usr/bin/prometheus --version 2>&1 | head -1)"
	exit 0
fi

unavailable() {
	say "cannot install Prometheus: $1" >&2
	exit 1
}

start=$SECONDS
# shellcheck source=lib/debian.sh
source "$(dirname "$0")/lib/debian.sh"
debian_install "$PROMETHEUS_VERSION" prometheus
link
say "installed $(/usr/bin/prometheus --version 2>&1 | head -1) (package $version) in $((SECONDS - start))s"
