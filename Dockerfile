# syntax=docker/dockerfile:1
#
# The Tether agent image: a static Go binary on distroless, running as a non-root user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     -t ghcr.io/tether-dev/tether:v0.1.0 .
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ... (the build
# stage runs natively and cross-compiles; no emulation needed).

# Base images are pinned by digest (multi-arch index digests), with the tag beside
# it for people: the tag says what the image is, the digest decides which one is
# built on. Only a reviewed commit moves them; `make release` never does.
# Check a digest with: docker buildx imagetools inspect golang:1.26
FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3aff6657219a4d9c14e27fb1d8976c49c29fddb70ba835014f477e1c70636647 AS build

ARG TARGETOS
ARG TARGETARCH
# Reported by `tether version`.
ARG VERSION=dev

WORKDIR /src

# Dependencies first, so that source changes do not invalidate this layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
	go mod download

COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
	--mount=type=cache,target=/root/.cache/go-build \
	CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
	go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
		-o /out/tether ./cmd/tether

# static: no libc, no shell, no package manager. "nonroot" runs as uid/gid 65532, which
# deploy/base's Deployment also sets.
FROM gcr.io/distroless/static-debian12:nonroot@sha256:d093aa3e30dbadd3efe1310db061a14da60299baff8450a17fe0ccc514a16639

# OCI annotations (make release passes the three build arguments).
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="tether" \
	org.opencontainers.image.description="Tether, a GitOps sync agent for Kubernetes" \
	org.opencontainers.image.source="https://github.com/tether-dev/tether" \
	org.opencontainers.image.url="https://github.com/tether-dev/tether" \
	org.opencontainers.image.version="${VERSION}" \
	org.opencontainers.image.revision="${REVISION}" \
	org.opencontainers.image.created="${CREATED}"

COPY --from=build /out/tether /usr/local/bin/tether
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tether"]
CMD ["controller"]
