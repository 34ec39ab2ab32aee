#!/usr/bin/env bash
# Builds the htc container image as an OCI archive, without a Docker daemon:
#
#   hack/image.sh BINARY OUT.tar
#
# BINARY is a static htc for linux (make image builds it with CGO_ENABLED=0).
# The image has two layers:
#
#   1. the root filesystem of hack/haproxy-rootfs.sh: Debian trixie minbase with
#      Debian's haproxy package (HAProxy 3.0 LTS) and the user htc (65532) —
#      the same HAProxy the tests check with;
#   2. BINARY as /usr/local/bin/htc.
#
# umoci assembles the layers and the configuration (entrypoint htc, user
# 65532:65532, /tmp as a volume, org.opencontainers.image.* labels, also as
# manifest annotations); tar makes the archive (the OCI layout, as
# `skopeo copy ... oci-archive:` would). umoci and skopeo (to convert or push
# the archive) are installed with apt-get when missing. Why umoci and not buildah: buildah wants a container storage
# (overlay or vfs under /var/lib/containers) and runs its steps in
# containers; umoci writes an OCI layout directly from files.
#
# Metadata comes from the environment (make image sets it):
#   IMAGE     repository, default haproxy-template/htc
#   TAG       default $VERSION without a leading v
#   VERSION   htc version (label org.opencontainers.image.version), default dev
#   REVISION  git commit, default unknown
#   CREATED   RFC 3339 time, default 1970-01-01T00:00:00Z (make: the commit time,
#             so that an unchanged tree builds an identical image)
#   SOURCE    default https://github.com/haproxy-template/htc
#   LICENSES  SPDX expression, default NOASSERTION (the repository declares none yet)
#
# The archive is cached under ${HTC_CACHE_DIR:-$HOME/.cache/htc}/image/, keyed by
# the binary, the root filesystem, this script and the metadata: an unchanged
# input set copies the cached archive (well under a second). The base layer
# (the compressed root filesystem) is cached separately, so a new binary costs
# only its own layer. Exit status 3/4: see hack/haproxy-rootfs.sh (no package
# mirror / cannot build here). The last line of stdout is OUT.
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM

die() { echo "image.sh: $*" >&2; exit 1; }
[[ $# == 2 ]] || die "usage: hack/image.sh BINARY OUT.tar"
BINARY=$1 OUT=$2
[[ -f "$BINARY" ]] || die "$BINARY: no such file"

VERSION=${VERSION:-dev}
IMAGE=${IMAGE:-haproxy-template/htc}
TAG=${TAG:-${VERSION#v}}
REVISION=${REVISION:-unknown}
CREATED=${CREATED:-1970-01-01T00:00:00Z}
SOURCE=${SOURCE:-https://github.com/haproxy-template/htc}
LICENSES=${LICENSES:-NOASSERTION}
HTC_UID=65532

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rc=0
ROOTFS=$("$here/haproxy-rootfs.sh" | tail -1) || rc=$?
[[ $rc == 0 ]] || exit $rc
rootfs_key=$(basename "$ROOTFS")
haproxy_version=$(cat "$ROOTFS/haproxy.version")

need() { # need COMMAND PACKAGE
	command -v "$1" >/dev/null && return
	echo "image.sh: installing $2 with apt-get" >&2
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$2"; } >&2 ||
		die "apt-get install $2 failed"
}
need umoci umoci
# Not used to build, but to convert or push the archive (README) and by the image test.
need skopeo skopeo

CACHE=${HTC_CACHE_DIR:-$HOME/.cache/htc}/image
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9 || die "cannot lock $CACHE/.lock"

self="${BASH_SOURCE[0]}"
key=$({
	grep -v '^[[:space:]]*#' "$self"
	sha256sum <"$BINARY"
	printf '%s\n' "$rootfs_key" "$IMAGE" "$TAG" "$VERSION" "$REVISION" "$CREATED" "$SOURCE" "$LICENSES"
} | sha256sum | cut -c1-16)
ARCHIVE="$CACHE/htc-$key.oci.tar"

publish() {
	mkdir -p "$(dirname "$OUT")"
	cp -f "$ARCHIVE" "$OUT.tmp.$$" && mv -f "$OUT.tmp.$$" "$OUT"
	echo "$OUT"
}
if [[ -s "$ARCHIVE" ]]; then
	publish
	exit 0
fi

WORK=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
arch=$(dpkg --print-architecture)
epoch=$(date -d "$CREATED" +%s) || die "CREATED=$CREATED is not a date"

# The base: an OCI layout holding the root filesystem as its only layer,
# built once per root filesystem.
BASE="$CACHE/base-$rootfs_key"
if [[ ! -f "$BASE/.complete" ]]; then
	echo "image.sh: compressing the root filesystem $ROOTFS into a base layer" >&2
	rm -rf "$BASE" "$BASE.tmp"
	umoci init --layout "$BASE.tmp" >&2
	umoci new --image "$BASE.tmp:base" >&2
	umoci raw add-layer --image "$BASE.tmp:base" \
		--history.created "$CREATED" --history.author htc \
		--history.created_by "mmdebstrap --variant=minbase --include=haproxy=3.0.* trixie (hack/haproxy-rootfs.sh); haproxy $haproxy_version" \
		"$ROOTFS/rootfs.tar" >&2
	touch "$BASE.tmp/.complete"
	mv "$BASE.tmp" "$BASE"
	# Base layers of older root filesystems are no longer needed.
	find "$CACHE" -maxdepth 1 -name 'base-*' ! -name "base-$rootfs_key" -exec rm -rf {} +
fi

echo "image.sh: assembling $IMAGE:$TAG (htc $VERSION, haproxy $haproxy_version)" >&2
cp -a "$BASE" "$WORK/oci"
rm -f "$WORK/oci/.complete"

mkdir -p "$WORK/layer/usr/local/bin"
install -m 0755 "$BINARY" "$WORK/layer/usr/local/bin/htc"
tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
	-C "$WORK/layer" -cf "$WORK/htc-layer.tar" usr/local/bin/htc
umoci raw add-layer --image "$WORK/oci:base" --tag "$TAG" \
	--history.created "$CREATED" --history.author htc \
	--history.created_by "htc $VERSION as /usr/local/bin/htc (hack/image.sh)" \
	"$WORK/htc-layer.tar" >&2

labels=(
	"org.opencontainers.image.title=htc"
	"org.opencontainers.image.description=htc (HAProxy Template Controller) with HAProxy $haproxy_version"
	"org.opencontainers.image.version=$VERSION"
	"org.opencontainers.image.revision=$REVISION"
	"org.opencontainers.image.created=$CREATED"
	"org.opencontainers.image.source=$SOURCE"
	"org.opencontainers.image.url=$SOURCE"
	"org.opencontainers.image.licenses=$LICENSES"
	"io.haproxy-template.htc.haproxy-version=$haproxy_version"
)
args=()
for l in "${labels[@]}"; do
	args+=(--config.label "$l" --manifest.annotation "$l")
done
umoci config --image "$WORK/oci:$TAG" \
	--created "$CREATED" --author htc --architecture "$arch" --os linux \
	--config.user "$HTC_UID:$HTC_UID" \
	--config.entrypoint /usr/local/bin/htc --clear config.cmd \
	--config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	--config.env TMPDIR=/tmp \
	--config.workingdir /tmp \
	--config.volume /tmp \
	"${args[@]}" \
	--history.created "$CREATED" --history.author htc --history.created_by "hack/image.sh: configuration" >&2
umoci rm --image "$WORK/oci:base" >&2
umoci gc --layout "$WORK/oci" >&2

# One manifest, named by its tag (org.opencontainers.image.ref.name).
[[ $(grep -o '"digest"' "$WORK/oci/index.json" | wc -l) == 1 ]] || die "expected one manifest in $WORK/oci/index.json"

tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
	-C "$WORK/oci" -cf "$WORK/archive.tar" oci-layout index.json blobs
mv "$WORK/archive.tar" "$ARCHIVE"
# Archives of earlier inputs: keep the newest few.
ls -t "$CACHE"/htc-*.oci.tar 2>/dev/null | tail -n +6 | xargs -r rm -f
publish
