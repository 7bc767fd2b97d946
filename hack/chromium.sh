#!/usr/bin/env bash
# chromium.sh — install headless Chromium from Debian's packages for the browser tests
# of the web UI (test/browser), when /usr/bin/chromium is missing. The tests drive it
# over the DevTools protocol (chromedp); nothing else runs it.
#
# The version is pinned to Debian 12's security update of Chromium current when this
# was written. Debian replaces Chromium's package with each security release and drops
# the one before from its mirror, so when the pinned version is gone the script installs
# Debian's candidate instead, and says so; either way it prints the version installed.
# The tests use only long-stable DevTools calls (navigate, wait for a node, evaluate,
# screenshot), which do not change between Chromium releases.
#
# It needs root (CI runs as root on Debian 12) or sudo. Without either, or off Debian,
# it installs nothing and says so: the browser tests then skip with a message, except
# under CI=true, where a missing browser fails the run.
#
# Measured cold (the package lists already fetched; chromium and its 60-odd libraries
# downloaded from deb.debian.org and unpacked) on the shared 2-core machine: see the
# "installed in" line it prints; docs/ui.md quotes the figure. A warm run (chromium
# present) only checks the file: under 0.1 s.
set -euo pipefail

CHROMIUM_VERSION=156.0.8078.108-1~deb12u1

chromium=/usr/bin/chromium
say() { echo "[chromium] $*"; }

if [[ -x "$chromium" ]]; then
	say "present: $("$chromium" --version 2>/dev/null || echo "$chromium")"
	exit 0
fi

# unavailable WHY: nothing can be installed here; fatal under CI.
unavailable() {
	if [[ "${CI:-}" == true ]]; then
		say "cannot install Chromium: $1 (CI=true: the browser tests need it)" >&2
		exit 1
	fi
	say "not installed: $1; the browser tests of the UI will skip (set TETHER_CHROMIUM to a Chromium binary to run them)"
	exit 0
}

start=$SECONDS
# shellcheck source=lib/debian.sh
source "$(dirname "$0")/lib/debian.sh"
debian_install "$CHROMIUM_VERSION" chromium chromium-common
say "installed $("$chromium" --version) (package $version) in $((SECONDS - start))s"
