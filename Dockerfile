# syntax=docker/dockerfile:1
#
# The Tether agent image: a static Go binary on distroless, running as a non-root user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     -t ghcr.io/tether-dev/tether:v0.1.0 .
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ... (the build
# stage runs natively and cross-compiles; no emulation needed).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build

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
FROM gcr.io/distroless/static-debian12:nonroot

COPY --from=build /out/tether /usr/local/bin/tether
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/tether"]
CMD ["controller"]
