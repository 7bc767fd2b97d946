#!/usr/bin/env bash
# lognoise.sh COMMIT... — what the agent logs when something is broken, commit by commit:
# for each COMMIT, build that commit's tether binary (as the tests and the image build it:
# static, -trimpath, -s -w) in a temporary git worktree, and run
# TestTheLogOfThreeBrokenSyncs (test/e2e) with it: the binary at its default flags for
# WINDOW with three Syncs broken by bad input in git (broken YAML, a missing path, an
# unknown kind), polling at their default interval (1m) unless INTERVAL is set. It prints
# the log's lines by level and those with a stack trace, and keeps each log in
# OUT/COMMIT.log. The test is this tree's; only the binary changes. Needs the control
# plane's binaries (make testbin).
#
#   hack/lognoise.sh 78f3817 HEAD            # the log fix (fb0fa94) and its parent
#   WINDOW=1m INTERVAL=10s hack/lognoise.sh HEAD
#
# Each run takes WINDOW plus a build and a control plane's start: about five minutes.
set -euo pipefail

: "${WINDOW:=4m}" "${INTERVAL:=}" "${OUT:=$(mktemp -d)}"
[[ $# -gt 0 ]] || { echo "usage: hack/lognoise.sh COMMIT..." >&2; exit 2; }
root=$(git rev-parse --show-toplevel)
cd "$root"
: "${TETHER_TESTBIN:=$root/.tools/testbin}"
export TETHER_TESTBIN
mkdir -p "$OUT"

for commit in "$@"; do
	sha=$(git rev-parse --short "$commit^{commit}")
	tree=$(mktemp -d /tmp/tether-lognoise-XXXXXX)
	git worktree add --detach --quiet "$tree" "$sha"
	trap 'git -C "$root" worktree remove --force "$tree"' EXIT
	(cd "$tree" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$OUT/tether-$sha" ./cmd/tether)
	git worktree remove --force "$tree"
	trap - EXIT
	echo "== $commit ($sha): $WINDOW, interval ${INTERVAL:-default}"
	TETHER_LOG_WINDOW=$WINDOW TETHER_LOG_INTERVAL=$INTERVAL TETHER_LOG_BINARY="$OUT/tether-$sha" TETHER_LOG_SAVE="$OUT/$sha.log" \
		go test -count=1 -timeout=30m -run '^TestTheLogOfThreeBrokenSyncs$' -v ./test/e2e/ |
		grep -E 'is failing|Ready False|log over|^(--- |ok|FAIL)'
done
echo "logs in $OUT"
