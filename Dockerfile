# The htc image, for machines with a Docker daemon (or buildah/podman):
#
#   docker build -t haproxy-template/htc:$(git describe --tags --always --dirty | sed 's/^v//') \
#     --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#
# It describes the image `make image` builds without a daemon (hack/image.sh,
# from the root filesystem of hack/haproxy-rootfs.sh): Debian trixie with
# Debian's haproxy package (HAProxy 3.0 LTS) — the checker htc runs and, in
# the Helm chart, the HAProxy it publishes to — plus a static htc, run as the
# numeric user 65532 with only /tmp written (readOnlyRootFilesystem works).
# test/image checks that both recipes agree.

ARG GO_VERSION=1.27

FROM golang:${GO_VERSION}-trixie AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=unknown
# The Makefile's LDFLAGS, stripped, as `make image` builds it.
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" -o /out/htc ./cmd/htc

FROM debian:trixie-slim
# HAProxy 3.0 LTS from Debian trixie (same pin as hack/haproxy-rootfs.sh).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends 'haproxy=3.0.*' \
 && rm -rf /var/lib/apt/lists/* \
 && echo 'htc:x:65532:65532:htc:/nonexistent:/usr/sbin/nologin' >>/etc/passwd \
 && echo 'htc:x:65532:' >>/etc/group
COPY --from=build /out/htc /usr/local/bin/htc

ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=1970-01-01T00:00:00Z
ARG SOURCE=https://github.com/haproxy-template/htc
ARG LICENSES=NOASSERTION
LABEL org.opencontainers.image.title="htc" \
      org.opencontainers.image.description="htc (HAProxy Template Controller) with HAProxy 3.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.url="${SOURCE}" \
      org.opencontainers.image.licenses="${LICENSES}"

ENV TMPDIR=/tmp
WORKDIR /tmp
VOLUME /tmp
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/htc"]
