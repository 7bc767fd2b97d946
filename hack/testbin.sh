#!/usr/bin/env bash
# testbin.sh DIR [demo|clis|prometheus3] — build the real control-plane binaries that
# Tether's tests and demo run (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kubectl, kwok and kwok's stage configurations), the helm and kustomize
# CLIs that the conformance tests compare renders with, and the OCI registry (CNCF
# Distribution) that the tests of charts from OCI registries push to, from the Go module
# proxy at pinned versions, into DIR. With "demo", only what `make demo` runs: etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok. With
# "clis", only helm and kustomize. With "prometheus3", only the Prometheus v3 server and
# promtool (`make test-prometheus3`); make test runs Debian's (hack/prometheus.sh links
# them into DIR).
#
# helm and kustomize are built in the control plane's module (test/tools/k8s), which
# pins their releases: most of what they compile (k8s.io/api, client-go, apimachinery,
# cli-runtime, kubectl, kustomize's api and kyaml) is then what kubectl and the
# apiserver compiled already, at the same versions, and comes from Go's build cache.
# Built on their own, they compiled it all again.
#
# Each binary is built once per version: a stamp file records what DIR holds, so a warm
# run only checks the stamps. A cold build takes about 15 minutes on two idle cores
# (the one estimate, also in the README), and over 4 GB of Go build cache; while it
# runs, a line every 30 seconds says what is being built, for how long, and how many
# tools are ready.
set -euo pipefail

K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.4
KWOK_VERSION=v0.8.0
# Prometheus v3.15.1, for make test-prometheus3 only: its Go module numbers v3.X.Y as
# v0.3XX.Y. Pinned in test/tools/prometheus/go.mod too.
PROMETHEUS_VERSION=v0.315.1
# CNCF Distribution's registry, the OCI registry the tests of charts from OCI registries
# push to, built from test/tools/registry/main.go: Distribution's registry with only
# the filesystem storage driver (its own cmd/registry links the Azure, GCS and S3
# SDKs, most of its cold build). Pinned in test/tools/registry/go.mod too; the
# stamp's suffix names the build.
REGISTRY_VERSION=v3.0.0
REGISTRY_STAMP=$REGISTRY_VERSION+filesystem

dir=${1:?usage: testbin.sh DIR [demo|clis|prometheus3]}
set_=${2:-all}
[[ $set_ == all || $set_ == demo || $set_ == clis || $set_ == prometheus3 ]] || { echo "usage: testbin.sh DIR [demo|clis|prometheus3]" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
start=$SECONDS

step() { printf '[testbin %3ds] %s\n' $((SECONDS - start)) "$*"; }

tools=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok)
[[ $set_ == demo ]] || tools+=(helm kustomize registry)
[[ $set_ != clis ]] || tools=(helm kustomize)
[[ $set_ != prometheus3 ]] || tools=(prometheus promtool)
ready() { # how many of the tools DIR holds at their versions
	local n=0 t
	for t in "${tools[@]}"; do [[ -x "$dir/$t" && -s "$dir/.$t.version" ]] && n=$((n + 1)); done
	echo "$n"
}

# building WHAT CMD...: runs CMD, saying every 30 seconds that WHAT is still being built.
building() {
	local what=$1 began=$SECONDS rc=0
	shift
	step "building $what ($(ready) of ${#tools[@]} tools ready)"
	(while sleep 30; do step "  still building $what: $((SECONDS - began))s so far"; done) &
	local ticker=$!
	"$@" || rc=$?
	kill "$ticker" 2>/dev/null || true
	wait "$ticker" 2>/dev/null || true
	return "$rc"
}

fresh() { # fresh NAME VERSION: true when DIR already holds NAME at VERSION
	[[ -x "$dir/$1" && "$(cat "$dir/.$1.version" 2>/dev/null)" == "$2" ]]
}
stamp() { echo "$2" >"$dir/.$1.version"; }

# Kubernetes' version variables: without them the binaries report v0.0.0-master, and
# the apiserver's /version (which clients use to pick features) is wrong.
k8s_ldflags() {
	local minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
	local v
	for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean ' \
			"$v" "$K8S_VERSION" "$v" "$v" "$minor" "$v"
	done
	printf -- '-s -w'
}

# remove_all_sd leaves out every service discovery but static and file: the tests scrape
# loopback targets, and the cloud SDKs would double the build.
if [[ $set_ == prometheus3 ]]; then
	prom_missing=()
	for c in prometheus promtool; do fresh "$c" "$PROMETHEUS_VERSION" || prom_missing+=("$c"); done
	if ((${#prom_missing[@]})); then
		pkgs=()
		for c in "${prom_missing[@]}"; do pkgs+=("github.com/prometheus/prometheus/cmd/$c"); done
		building "${prom_missing[*]} $PROMETHEUS_VERSION" \
			bash -c 'cd "$1/test/tools/prometheus" && go build -tags remove_all_sd -ldflags "-s -w" -o "$2/" "${@:3}"' _ "$root" "$dir" "${pkgs[@]}"
		for c in "${prom_missing[@]}"; do stamp "$c" "$PROMETHEUS_VERSION"; done
		step "built ${prom_missing[*]}"
	fi
	step "Prometheus v3 ready in $dir"
	exit 0
fi

# tools_module_version MODULE: the version of MODULE that test/tools/k8s/go.mod pins.
tools_module_version() { (cd "$root/test/tools/k8s" && go list -m -f '{{.Version}}' "$1"); }
# The stamps of what test/tools/k8s builds also name its go.sum: a change of any
# dependency there builds them again.
k8s_sum=$(sha256sum "$root/test/tools/k8s/go.sum" | cut -c1-12)

build_k8s() {
	local k8s_cmds=(kube-apiserver kube-controller-manager kube-scheduler kubectl) missing=() pkgs=() c
	for c in "${k8s_cmds[@]}"; do fresh "$c" "$K8S_VERSION+$k8s_sum" || missing+=("$c"); done
	((${#missing[@]})) || return 0
	for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
	building "${missing[*]} $K8S_VERSION" \
		bash -c 'cd "$1/test/tools/k8s" && shift && go build -ldflags "$1" -o "$2/" "${@:3}"' _ "$root" "$(k8s_ldflags)" "$dir" "${pkgs[@]}"
	for c in "${missing[@]}"; do stamp "$c" "$K8S_VERSION+$k8s_sum"; done
	step "built ${missing[*]}"
}

# build_clis builds helm and kustomize, after the control plane: what they share
# with it then comes from the build cache.
build_clis() {
	local helm_version kustomize_version clis=() pkgs=()
	helm_version=$(tools_module_version helm.sh/helm/v4)+$k8s_sum
	kustomize_version=$(tools_module_version sigs.k8s.io/kustomize/kustomize/v5)+$k8s_sum
	fresh helm "$helm_version" || { clis+=(helm); pkgs+=(helm.sh/helm/v4/cmd/helm); }
	fresh kustomize "$kustomize_version" || { clis+=(kustomize); pkgs+=(sigs.k8s.io/kustomize/kustomize/v5); }
	((${#clis[@]})) || return 0
	building "${clis[*]} (helm $helm_version, kustomize $kustomize_version)" \
		bash -c 'cd "$1/test/tools/k8s" && go build -ldflags "-s -w" -o "$2/" "${@:3}"' _ "$root" "$dir" "${pkgs[@]}"
	stamp helm "$helm_version"
	stamp kustomize "$kustomize_version"
	step "built ${clis[*]}"
}

build_etcd() {
	fresh etcd "$ETCD_VERSION" && return 0
	building "etcd $ETCD_VERSION" \
		bash -c 'cd "$1/test/tools/etcd" && go build -ldflags "-s -w" -o "$2/etcd" go.etcd.io/etcd/server/v3' _ "$root" "$dir"
	stamp etcd "$ETCD_VERSION"
	step "built etcd"
}

build_kwok() {
	fresh kwok "$KWOK_VERSION" && return 0
	building "kwok $KWOK_VERSION" env GOBIN="$dir" go install -ldflags '-s -w' "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
	# kwok does nothing without stages; its module ships the standard ones.
	local src s
	src=$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage
	rm -rf "$dir/kwok-stages" && mkdir -p "$dir/kwok-stages"
	for s in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
		pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
		cp "$src/$s" "$dir/kwok-stages/" && chmod u+w "$dir/kwok-stages/$(basename "$s")"
	done
	stamp kwok "$KWOK_VERSION"
	step "built kwok"
}

build_registry() {
	fresh registry "$REGISTRY_STAMP" && return 0
	building "registry $REGISTRY_VERSION" \
		bash -c 'cd "$1/test/tools/registry" && go build -ldflags "-s -w" -o "$2/registry" .' _ "$root" "$dir"
	stamp registry "$REGISTRY_STAMP"
	step "built registry"
}

if [[ $set_ == clis ]]; then
	build_clis
	step "helm and kustomize ready in $dir"
	exit 0
fi

# The control plane's build leaves a core idle for long stretches (its largest
# packages compile one after another, and each of the four binaries links
# alone), so etcd, kwok and the registry are built beside it; Go's standard
# library first, so that the two builds do not both compile it.
go build std
(
	build_etcd
	build_kwok
	[[ $set_ == demo ]] || build_registry
) &
others=$!
trap 'kill "$others" 2>/dev/null || true' EXIT
build_k8s
[[ $set_ == demo ]] || build_clis
wait "$others" || { step "building etcd, kwok or the registry failed"; exit 1; }
trap - EXIT

if [[ $set_ == demo ]]; then
	step "the demo's binaries ready in $dir ($(ready) of ${#tools[@]} tools: ${tools[*]})"
	exit 0
fi

step "test binaries ready in $dir ($(ready) of ${#tools[@]} tools)"
