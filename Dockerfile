# The flotilla binary as a container image: one static binary that runs as the hub
# (`flotilla hub`) or as a klusterlet (`flotilla klusterlet`) by subcommand. Build it with
# `make image` (docker, podman or buildah).

# Keep in step with go.mod's go line.
FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# Set by BuildKit, podman and buildah for the target platform; empty means the builder's.
ARG TARGETOS
ARG TARGETARCH
# Static (no cgo: wazero is pure Go), no local paths, no symbol tables.
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
	go build -trimpath -ldflags "-s -w" -o /out/flotilla ./cmd/flotilla

# No shell, no package manager; user 65532 (nonroot).
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/flotilla /flotilla
USER 65532:65532
ENTRYPOINT ["/flotilla"]
