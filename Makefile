# Tether's build. Every tool is pinned and installed into .tools/ (git-ignored), so a
# fresh machine needs only Go, git and make: `make demo` and `make test` do all set-up.

SHELL := /usr/bin/env bash -o pipefail -c
.DEFAULT_GOAL := build

TOOLS      := $(CURDIR)/.tools
TOOLS_BIN  := $(TOOLS)/bin
TESTBIN    := $(TOOLS)/testbin
export TETHER_TESTBIN := $(TESTBIN)
export PATH := $(TOOLS_BIN):$(PATH)

CONTROLLER_GEN_VERSION := v0.19.0
GOLANGCI_LINT_VERSION  := v2.15.0
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := $(TOOLS_BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
# The kustomize CLI built on the kustomize library go.mod requires
# (sigs.k8s.io/kustomize/api v0.20.1 is kustomize/v5 v5.7.1): the conformance test
# in source/ compares Tether's renders with it, and fails when the two move apart.
# The helm CLI of the Helm SDK go.mod requires (helm.sh/helm/v4 v4.0.5): the chart
# conformance test (test/charts) compares Tether's renders of public charts with
# `helm template`, and fails when the two move apart. Both releases are pinned in
# test/tools/k8s/go.mod and built by hack/testbin.sh beside the control plane.
KUSTOMIZE := $(TESTBIN)/kustomize
export TETHER_KUSTOMIZE := $(KUSTOMIZE)
HELM      := $(TESTBIN)/helm
export TETHER_HELM := $(HELM)
# The sops, age and age-keygen CLIs (hack/sopstools.sh pins them) that the
# decryption tests encrypt their repositories with.
export TETHER_SOPS_TOOLS := $(TOOLS_BIN)
# axe-core's axe.min.js (hack/axe.sh pins it), which the UI's browser tests
# inject into each page they open, failing on a serious accessibility violation.
AXE_CORE := $(TOOLS)/axe-core/axe.min.js
export TETHER_AXE_CORE := $(AXE_CORE)

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

# Test timeouts are safety nets against hangs, not performance assertions. The
# test binaries are linked without DWARF (-ldflags=-w; panics and the race
# detector's reports name files and lines from the symbol table, which stays):
# writing and compressing it took a third of each link.
TEST_FLAGS ?= -race -count=1 -timeout=20m -ldflags=-w

# What make test compiles, its tools included, is compiled without DWARF
# (-gcflags=all=-dwarf=false, through GOFLAGS so that every go command the
# tests and scripts run agrees, and Go's build cache serves one build to all of
# them). The tools and test binaries are linked without it anyway (-w); the
# compiler then skips writing it, a fifth of the processor time of a cold
# build (measured: 217 → 168 s of processor time for the OCI registry). The
# tether binary the tests build has the same sections, of the same sizes, as
# the released one (its build information names the flag, 32 bytes more).
NODWARF := -gcflags=all=-dwarf=false
test test-tools test-prebuild test-memory-heap fuzz testbin testbin-demo kustomize helm sopstools test-cosign cosign: export GOFLAGS := $(strip $(filter-out $(NODWARF),$(GOFLAGS)) $(NODWARF))

.PHONY: build
build: ## Build the tether binary into bin/.
	go build -ldflags "$(LDFLAGS)" -o bin/tether ./cmd/tether

.PHONY: testbin
testbin: ## Build etcd, kube-apiserver, controller-manager, scheduler, kubectl, kwok, helm, kustomize and the OCI registry into .tools/testbin.
	hack/testbin.sh $(TESTBIN)

.PHONY: testbin-demo
testbin-demo: ## Build only what make demo runs: etcd, kube-apiserver, controller-manager, scheduler, kubectl and kwok.
	hack/testbin.sh $(TESTBIN) demo

.PHONY: kustomize helm
kustomize helm: ## Build the pinned kustomize and helm CLIs that the conformance tests compare renders with.
	hack/testbin.sh $(TESTBIN) clis

.PHONY: sopstools
sopstools: ## Build the pinned sops, age and age-keygen CLIs that the decryption tests encrypt with.
	hack/sopstools.sh $(TOOLS_BIN)

# axe-core, Deque's accessibility engine (MPL-2.0), a test tool only: its npm
# tarball at a pinned version, checked against a pinned SHA-512, with curl and tar
# (no npm). Nothing of it ships with Tether.
.PHONY: axe-core
axe-core: ## Download the pinned axe-core (its axe.min.js) that the UI's browser tests check each page with.
	hack/axe.sh $(TOOLS)

# The screenshots of every page the UI's browser tests open (test/browser), kept
# as the run's artifacts for a person to look at; docs/ui.md shows two of them.
UI_SCREENSHOTS := $(CURDIR)/.ui-screenshots

.PHONY: test
test: test-tools ## Unit, control-plane, conformance, end-to-end and the UI's browser tests with the race detector; one memory test without; the fuzz target.
	TETHER_UI_SCREENSHOTS=$(UI_SCREENSHOTS) go test $(TEST_FLAGS) ./...
	$(MAKE) test-memory-heap
	$(MAKE) fuzz FUZZTIME=$(TEST_FUZZTIME)

# Every tool make test needs, built side by side: on a fresh machine the builds
# overlap their downloads (the Go module proxy, Debian's mirror, npm's registry) with each
# other's compiling. Debian's packages install one after the other (one apt-get
# at a time). The tools' progress lines interleave as they come (testbin says
# every 30 s what it builds); a warm run only checks stamps. Go's standard
# library is compiled first, once, not by each build at the same time.
.PHONY: test-tools
test-tools: ## Build or install every tool make test needs, side by side.
	go build std
	$(MAKE) --no-print-directory -j4 testbin sopstools axe-core debian-packages test-prebuild

# What make test compiles besides its tools, compiled while they build, at the
# lowest priority, so that it takes only the processor time they leave (the
# control plane's build leaves a core idle for long stretches): every package
# with the race detector (the suite compiles only its tests after it), the
# tether binary as test/agentbin builds it (go run -exec keeps the linked binary
# in Go's build cache), and the fuzz target's instrumented build (one input).
.PHONY: test-prebuild
test-prebuild:
	nice -n 19 go build -race ./...
	CGO_ENABLED=0 nice -n 19 go run -exec true -trimpath -ldflags "-s -w" tether.dev/tether/cmd/tether
	nice -n 19 go test -run='^$$' -fuzz='$(FUZZ_TARGET)' -fuzztime=1x -parallel=1 $(FUZZ_PKG) 2>&1 | tail -n 3

.PHONY: debian-packages
debian-packages: ## Chromium, Alertmanager, Prometheus, gpg and ssh-keygen from Debian's packages, one after the other.
	hack/chromium.sh
	hack/signing.sh
	hack/alertmanager.sh
	hack/prometheus.sh $(TESTBIN)

# Debian's Chromium for the UI's browser tests, installed with apt-get when
# /usr/bin/chromium is missing (root or sudo; hack/chromium.sh pins the version
# and prints it). `make test` runs those tests.
.PHONY: chromium
chromium: ## Install headless Chromium from Debian's packages for the UI's browser tests.
	hack/chromium.sh

# Debian's Alertmanager for the notification test that fires and resolves a failing
# Sync's alert in a real one (notify/alertmanager_test.go); hack/alertmanager.sh pins it.
.PHONY: alertmanager
alertmanager: ## Install Alertmanager from Debian's packages for the notification tests.
	hack/alertmanager.sh

# Debian's Prometheus server and promtool for the alert tests, linked into the test
# binaries' directory; hack/prometheus.sh pins the package.
.PHONY: prometheus
prometheus: ## Install Prometheus and promtool from Debian's packages for the alert tests.
	hack/prometheus.sh $(TESTBIN)

# The alert and rule tests against Prometheus v3 built from source (make test runs
# Debian's 2.x): the shipped rules must hold in both.
PROMETHEUS3 := $(TOOLS)/prometheus3
.PHONY: test-prometheus3
test-prometheus3: testbin ## The alert tests and promtool's rule tests against Prometheus v3.15.1 built from source.
	hack/testbin.sh $(PROMETHEUS3) prometheus3
	TETHER_PROMETHEUS_DIR=$(PROMETHEUS3) go test -race -count=1 -timeout=20m ./test/alerts/ ./deploy/monitoring/

# The real cosign CLI, built from source at a pinned release into .tools/bin
# (make test signs artifacts with test/signing, Go written from cosign's documented
# format: this build is too slow for make test's cold budget). test-cosign signs
# artifacts with it, in cosign v2's format and as a Sigstore bundle
# (--new-bundle-format, cosign v3's default), and checks that source/cosign verifies
# what the tool itself wrote (source/artifact_cosign_test.go). A cold build (empty
# Go build and module caches, 1.2 GB of modules downloaded) took 12m30s of wall
# time and 11m28s of processor time (user+sys) on two cores shared with other
# builds (load 7 to 14): some 6 to 7 minutes on two idle cores, estimated from the
# processor time, not measured. A warm run only checks that the binary exists.
COSIGN_VERSION := v2.6.5
COSIGN         := $(TOOLS_BIN)/cosign-$(COSIGN_VERSION)

.PHONY: cosign
cosign: $(COSIGN) ## Build the pinned cosign CLI (v2.6.5) that make test-cosign signs with.

.PHONY: test-cosign
test-cosign: testbin $(COSIGN) ## Artifacts signed by the real cosign v2.6.5, both formats, verified by source/cosign (not in make test).
	TETHER_COSIGN=$(COSIGN) go test -race -count=1 -timeout=10m -ldflags=-w -run='^TestAnArtifactSignedByTheRealCosign' -v ./source/

.PHONY: test-ui
test-ui: testbin chromium axe-core ## The UI's browser tests alone, verbose, with axe-core on each page, saving a screenshot of each into .ui-screenshots/.
	TETHER_UI_SPEED=1 TETHER_UI_SCREENSHOTS=$(UI_SCREENSHOTS) go test -race -count=1 -timeout=20m -v ./test/browser/

# The pictures of docs/ui.md, each a screenshot the browser tests take
# (SCREENSHOT:PICTURE): `make ui-pictures` runs them and copies each into docs/,
# so the pictures show the UI of the tree, not of the day they were drawn.
# test/docs checks that every picture docs/ui.md shows is listed here and that
# its screenshot is one test/browser takes.
UI_PICTURES := fleet:ui-fleet sync-top:ui-sync fleet-tiles:ui-fleet-tiles dependencies:ui-dependencies \
	graph-rollout:ui-graph object-diff:ui-object-diff logs:ui-logs timeline:ui-timeline

.PHONY: ui-pictures
ui-pictures: test-ui ## Run the UI's browser tests and copy their screenshots that docs/ui.md shows into docs/.
	@for p in $(UI_PICTURES); do cp $(UI_SCREENSHOTS)/$${p%%:*}.png docs/$${p##*:}.png && echo "docs/$${p##*:}.png"; done

.PHONY: test-scale
test-scale: testbin ## One Sync of 10,000 objects: converge, prune, delete, with a bounded status.
	TETHER_SCALE_OBJECTS=10000 go test -count=1 -timeout=60m -run='^TestASyncOfManyObjects$$' -v ./sync/

# The render wall's memory tests. TestPeakHeapOfHostileRenders skips itself under
# the race detector (reading its 234 MiB pack race-instrumented takes two minutes);
# make test runs it here without. Built as test/agentbin builds the shipped binary
# (CGO_ENABLED=0, -trimpath), so that after the suite's end-to-end tests every
# dependency comes from Go's build cache.
MAKE_TEST_MEMORY := ^TestPeakHeapOfHostileRenders$$
MEMORY_TESTS     := ^(TestPeakMemoryOfTheWorstYAML|TestPeakHeapOfHostileRenders|TestHostileChartsAreBounded)$$

.PHONY: test-memory
test-memory: ## The render wall's memory tests without the race detector, every worst shape, reading the real peak RSS.
	CGO_ENABLED=0 go test -trimpath -count=1 -timeout=30m -run='$(MEMORY_TESTS)' -v ./source/ ./source/render/ | grep -E 'peak|^(---|ok|FAIL|panic)'

.PHONY: test-memory-heap
test-memory-heap: ## The memory test make test runs without the race detector (TestPeakHeapOfHostileRenders).
	CGO_ENABLED=0 go test -trimpath -count=1 -timeout=30m -run='$(MAKE_TEST_MEMORY)' -v ./source/ | grep -E 'peak|^(---|ok|FAIL|panic)'

.PHONY: test-faults
test-faults: testbin ## The fault suite at full size (apiserver and git faults, SIGKILL at 30 points, restarts, rotated credentials) with the real binary.
	TETHER_FAULTS_FULL=1 go test -race -count=1 -timeout=60m -run='Fault|Killed|Restart|Interrupted|Rotated' -v ./test/e2e/

.PHONY: test-failover
test-failover: testbin ## The failover test three times over, printing each failover time (quote them with the load).
	go test -count=3 -timeout=30m -run='^TestFailoverUnderFire$$' -v ./test/e2e/ | grep -E 'SIGKILL →|SIGTERM|killed the leader|^(---|ok|FAIL)'

# The render wall's fuzz target (test/renderfuzz): chart templates and values
# from the fuzzer, rendered by the shipped binary's `tether render`, in the
# workers the agent starts. `go test` runs its seeds; this fuzzes for FUZZTIME,
# with one fuzzing process. The package imports none of the agent, so that the
# fuzzer instruments only it and the standard library. make test fuzzes for
# TEST_FUZZTIME after the suite: a failing input lands in
# test/renderfuzz/testdata/fuzz/, to be committed as a seed once fixed.
FUZZTIME ?= 60s
TEST_FUZZTIME ?= 30s
FUZZ_PKG := ./test/renderfuzz/
FUZZ_TARGET := ^FuzzAChartRendersBehindTheWall$$

.PHONY: fuzz
fuzz: ## Fuzz the render wall with chart templates and values for FUZZTIME (60s).
	go test -run='^$$' -fuzz='$(FUZZ_TARGET)' -fuzztime=$(FUZZTIME) -parallel=1 $(FUZZ_PKG)

.PHONY: test-short
test-short: ## Only the tests that need no control plane.
	go test -short -count=1 ./...

# The sync benchmarks are macro benchmarks (a first sync of 1,000 objects; many
# Syncs on one agent): one iteration each, printing every figure with its ratio to
# a floor from the same run. TETHER_BENCH_SYNCS=1000 runs the many-Syncs benchmark
# at the issue's size (about ten minutes on two busy cores), hence the timeout.
BENCH_FLAGS ?= -benchtime=1x -timeout=60m

.PHONY: bench
bench: testbin ## Benchmarks; quote their figures as ratios to the baseline of the same run.
	go test -run='^$$' -bench=. -benchmem $(BENCH_FLAGS) ./...

.PHONY: demo
demo: testbin-demo build ## Local control plane + git repo + agent; shows a commit reach the cluster.
	go run ./hack/demo

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Regenerate deepcopy code, the CRD, the one-file installs and the Helm chart deploy/chart.
	$(CONTROLLER_GEN) object paths=./api/...
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false paths=./api/... output:crd:artifacts:config=deploy/base/crd
	go run ./hack/installgen -out deploy

.PHONY: docs
docs: generate ## Regenerate docs/cli.md from the commands, docs/api.md from the CRD and docs/reasons.md from the reasons.
	go run ./cmd/tether docs > docs/cli.md
	go run ./hack/apidocs deploy/base/crd/tether.dev_syncs.yaml > docs/api.md
	go run ./hack/apidocs deploy/base/crd/tether.dev_notifiers.yaml > docs/api-notifier.md
	go run ./hack/apidocs deploy/base/crd/tether.dev_syncsets.yaml > docs/api-syncset.md
	go run ./hack/apidocs reasons api/v1alpha1/reasons.go > docs/reasons.md

.PHONY: verify
verify: generate docs ## Fail when generated files, docs or go.mod are stale.
	go mod tidy
	cd test/tools/k8s && go mod tidy
	cd test/tools/etcd && go mod tidy
	cd test/tools/prometheus && go mod tidy
	cd test/tools/registry && go mod tidy
	cd hack/imagegen && go mod tidy
	@git diff --exit-code -- api deploy/base/crd deploy/install.yaml deploy/namespaced.yaml deploy/ui.yaml deploy/chart docs/cli.md docs/api.md docs/api-notifier.md docs/api-syncset.md docs/reasons.md go.mod go.sum test/tools hack/imagegen/go.mod hack/imagegen/go.sum && \
		[ -z "$$(git ls-files --others --exclude-standard -- deploy/chart)" ] || \
		{ echo "generated files or go.mod are stale: run 'make generate', 'make docs' and 'go mod tidy', then commit"; exit 1; }

.PHONY: lint
lint: $(GOLANGCI_LINT) ## golangci-lint with the linter set in .golangci.yml.
	$(GOLANGCI_LINT) run ./...

.PHONY: fmt
fmt:
	gofmt -w $$(git ls-files '*.go')

$(CONTROLLER_GEN):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(TOOLS_BIN)/controller-gen $@

$(COSIGN):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install -ldflags "-s -w" github.com/sigstore/cosign/v2/cmd/cosign@$(COSIGN_VERSION)
	mv $(TOOLS_BIN)/cosign $@

$(GOLANGCI_LINT):
	@mkdir -p $(TOOLS_BIN)
	GOBIN=$(TOOLS_BIN) go install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(TOOLS_BIN)/golangci-lint $@

# The agent's image, built without a container engine: hack/imagegen (its own Go
# module; go-containerregistry pinned in hack/imagegen/go.mod) assembles a minimal
# base itself (the Mozilla CA roots of the pinned golang.org/x/crypto/x509roots,
# /etc/passwd with the non-root user 65532, /tmp), adds the static binary of each
# platform, labels it (source, revision, version, created: the commit's time, so
# the build is reproducible), and attaches an SPDX JSON SBOM as an OCI referrer.
# `make image` writes it as an OCI image layout (dist/image/oci) and the same as a
# tarball (dist/image/tether-oci.tar: `skopeo copy oci-archive:...`, `crane push`).
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
IMAGE_DIR       ?= dist/image
REVISION        := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
CREATED         := $(shell git log -1 --format=%cI 2>/dev/null || echo 1970-01-01T00:00:00Z)
IMAGEGEN         = go run -C $(CURDIR)/hack/imagegen .
# imagegen_args DIR: the -platform flags for the binaries DIR/tether-linux-ARCH and the labels.
imagegen_args    = $(foreach p,$(IMAGE_PLATFORMS),-platform $(p)=$(CURDIR)/$(1)/tether-$(subst /,-,$(p))) \
	-version $(VERSION) -revision $(REVISION) -created $(CREATED)

.PHONY: image
image: ## The agent's multi-arch image (amd64, arm64) with its SBOM, built without docker, as an OCI layout and tarball in dist/image.
	rm -rf $(IMAGE_DIR) && mkdir -p $(IMAGE_DIR)
	for p in $(IMAGE_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags "-s -w $(LDFLAGS)" \
			-o $(IMAGE_DIR)/tether-$${p%/*}-$${p#*/} ./cmd/tether || exit 1; \
	done
	$(IMAGEGEN) $(call imagegen_args,$(IMAGE_DIR)) -layout $(CURDIR)/$(IMAGE_DIR)/oci
	tar -C $(IMAGE_DIR)/oci --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf $(IMAGE_DIR)/tether-oci.tar .
	@echo "image: $(IMAGE_DIR)/oci (OCI layout, tag $(VERSION)) and $(IMAGE_DIR)/tether-oci.tar"

# A release: `make release VERSION=v1.2.3` writes dist/v1.2.3/ with install.yaml and
# namespaced.yaml naming that version's image, the chart tether-1.2.3.tgz with an
# index.yaml (the directory served over http(s) is a chart repository), the
# binaries and their checksums, and the multi-arch image as an OCI layout
# (dist/v1.2.3/image). With REGISTRY=registry.example.com/org it also pushes the
# image to $(REGISTRY)/tether:v1.2.3 and the chart to oci://$(REGISTRY)/charts/tether,
# and pins install.yaml, namespaced.yaml, ui.yaml and the chart to the pushed
# image's digest (credentials: ~/.docker/config.json, as `docker login` or
# `crane auth login` write it). The version must be a release tag with a CHANGELOG
# entry, built from a clean tree: what is published is what was committed.
RELEASE_DIR   = dist/$(VERSION)
REGISTRY     ?=
BIN_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: release
release: ## make release VERSION=vX.Y.Z [REGISTRY=host/org]: install files, chart, binaries, image; with REGISTRY pushes image and chart, pinned by digest.
	@[[ "$(origin VERSION)" != file ]] || { echo "usage: make release VERSION=vX.Y.Z [REGISTRY=registry.example.com/org]"; exit 2; }
	@grep -q '^## \[$(VERSION)\]' CHANGELOG.md || { echo "release: CHANGELOG.md has no '## [$(VERSION)]' entry"; exit 1; }
	@git diff --quiet HEAD -- || { echo "release: the working tree has uncommitted changes"; exit 1; }
	rm -rf $(RELEASE_DIR) && mkdir -p $(RELEASE_DIR)
	for p in $(BIN_PLATFORMS); do \
		CGO_ENABLED=0 GOOS=$${p%/*} GOARCH=$${p#*/} go build -trimpath -ldflags "-s -w $(LDFLAGS)" \
			-o $(RELEASE_DIR)/tether-$${p%/*}-$${p#*/} ./cmd/tether || exit 1; \
	done
	$(IMAGEGEN) $(call imagegen_args,$(RELEASE_DIR)) -layout $(CURDIR)/$(RELEASE_DIR)/image \
		$(if $(REGISTRY),-push $(REGISTRY)/tether:$(VERSION) -digest-file $(CURDIR)/$(RELEASE_DIR)/image.digest)
	go run ./hack/installgen -version $(VERSION) -out $(RELEASE_DIR) \
		$(if $(REGISTRY),-image "$$(cat $(RELEASE_DIR)/image.digest)")
	$(if $(REGISTRY),$(IMAGEGEN) -chart $(CURDIR)/$(RELEASE_DIR)/tether-$(VERSION:v%=%).tgz -push $(REGISTRY)/charts/tether:$(VERSION:v%=%))
	cd $(RELEASE_DIR) && sha256sum install.yaml namespaced.yaml ui.yaml index.yaml tether-* > SHA256SUMS
	@echo "release: $(RELEASE_DIR):" && ls $(RELEASE_DIR)

.PHONY: clean
clean:
	rm -rf bin .demo dist

.PHONY: help
help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'
