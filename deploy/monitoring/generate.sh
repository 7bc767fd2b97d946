#!/usr/bin/env bash
# generate.sh [--verify] — write prometheusrule.yaml from rules/tether.rules.yaml.
#
# The rule file is the one source of Tether's alerts: promtool checks and tests it, plain
# Prometheus loads it with rule_files, and the Prometheus Operator gets the same groups
# as spec.groups of a PrometheusRule. A PrometheusRule's spec has exactly the rule file's
# format, so the object is the file indented under a fixed header.
#
# With --verify, write nothing and exit 1 if prometheusrule.yaml is out of date (for CI
# and `make verify`).
set -euo pipefail

dir=$(cd "$(dirname "$0")" && pwd)
src=$dir/rules/tether.rules.yaml
out=$dir/prometheusrule.yaml

render() {
	cat <<'HEADER'
# GENERATED from rules/tether.rules.yaml by generate.sh. DO NOT EDIT: edit the rule file
# and run deploy/monitoring/generate.sh.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: tether
  namespace: tether-system
  labels:
    app.kubernetes.io/name: tether
    app.kubernetes.io/component: controller
spec:
HEADER
	# Drop the file's own top-level comments (they describe the file, not the object) and
	# indent the rest by two spaces under spec:. Blank lines stay blank.
	awk '/^#/ { next } /^[[:space:]]*$/ { print ""; next } { print "  " $0 }' "$src"
}

case "${1:-}" in
--verify)
	if ! diff -u "$out" <(render); then
		echo "deploy/monitoring/prometheusrule.yaml is out of date: run deploy/monitoring/generate.sh" >&2
		exit 1
	fi
	;;
"")
	render >"$out"
	;;
*)
	echo "usage: $0 [--verify]" >&2
	exit 2
	;;
esac
