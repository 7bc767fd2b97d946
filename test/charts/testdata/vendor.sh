#!/usr/bin/env bash
# Rebuilds the packaged charts of this directory from their upstream repositories,
# as `helm dependency build` then `helm package` would: each chart's directory is
# taken with `git archive` at its released tag, the subcharts its Chart.yaml pins
# are packaged into its charts/, and the whole is packaged with the pinned helm.
# Not run by make test (the archives are committed); README.md lists what it made.
#
# Usage: vendor.sh MIRRORS HELM
#   MIRRORS: a directory holding bare clones named OWNER+NAME/repo (as the
#   project's fetch tool leaves them), HELM: the helm CLI (make helm).
set -euo pipefail
mirrors=$1 helm=$2
out=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# extract REPO TAG PATH DEST: the directory PATH of REPO at TAG, into DEST.
extract() {
	mkdir -p "$4"
	git -C "$mirrors/$1/repo" archive --format=tar "$2" "$3" | tar -x -C "$4" --strip-components=$(($(tr -cd / <<<"$3" | wc -c) + 1))
	echo "$1 $2 $(git -C "$mirrors/$1/repo" rev-parse "$2^{commit}") $3" >>"$work/provenance"
}
# sub PARENT REPO TAG PATH: package PATH of REPO at TAG into PARENT/charts/.
sub() {
	local d="$work/sub-$RANDOM"
	extract "$2" "$3" "$4" "$d"
	mkdir -p "$1/charts"
	"$helm" package "$d" -d "$1/charts" >/dev/null
}
# pack DIR: package DIR into this directory.
pack() {
	"$helm" package "$1" -d "$out" >/dev/null
}

: >"$work/provenance"
p=prometheus-community+helm-charts
extract $p kube-prometheus-stack-88.5.3 charts/kube-prometheus-stack "$work/kps"
sub "$work/kps" $p kube-state-metrics-8.4.0 charts/kube-state-metrics
sub "$work/kps" $p prometheus-node-exporter-4.56.1 charts/prometheus-node-exporter
sub "$work/kps" $p prometheus-windows-exporter-0.12.8 charts/prometheus-windows-exporter
sub "$work/kps" grafana-community+helm-charts grafana-12.11.1 charts/grafana
pack "$work/kps"

extract kubernetes+ingress-nginx helm-chart-4.15.1 charts/ingress-nginx "$work/ingress-nginx"
pack "$work/ingress-nginx"

extract argoproj+argo-helm argo-cd-10.1.1 charts/argo-cd "$work/argo-cd"
sub "$work/argo-cd" DandyDeveloper+charts redis-ha-4.38.0 charts/redis-ha
pack "$work/argo-cd"

extract grafana-community+helm-charts grafana-12.11.1 charts/grafana "$work/grafana"
pack "$work/grafana"

extract traefik+traefik-helm-chart v41.3.0 traefik "$work/traefik"
pack "$work/traefik"

extract bitnami+charts redis/23.1.1 bitnami/redis "$work/redis"
sub "$work/redis" bitnami+charts common/2.31.4 bitnami/common
pack "$work/redis"

cat "$work/provenance"
