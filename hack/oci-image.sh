#!/usr/bin/env bash
# Packs a directory into a one-layer OCI image archive, without a daemon:
#
#   hack/oci-image.sh OUT.oci.tar ROOT ENTRYPOINT [ARG...]
#
# ROOT becomes the image's only layer (files owned by root, sorted, mtime 0,
# so the same ROOT gives the same archive); ENTRYPOINT [ARG...] is its
# entrypoint, PATH=/bin:/usr/bin its environment. IMAGE_USER=uid:gid in
# the environment sets the image's user. The archive holds one manifest tagged
# "latest"; import it into the test cluster under any name with
# hack/cluster-import.sh (the name is given at import). For static binaries
# (the pause image, the test backend, a conformance suite's echo server):
# no base image, no libraries. umoci comes from hack/cluster-deps.sh.
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM

die() { echo "oci-image.sh: $*" >&2; exit 1; }
[[ $# -ge 3 ]] || die "usage: hack/oci-image.sh OUT.oci.tar ROOT ENTRYPOINT [ARG...]"
OUT=$1 ROOT=$2
shift 2
[[ -d $ROOT ]] || die "$ROOT is not a directory"
command -v umoci >/dev/null || die "umoci not found (hack/cluster-deps.sh installs it)"

W=$(mktemp -d "${TMPDIR:-/tmp}/htc-oci-image.XXXXXX")
trap 'rm -rf "$W"' EXIT
arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$ROOT" -cf "$W/layer.tar" .
{
	umoci init --layout "$W/oci"
	umoci new --image "$W/oci:latest"
	umoci raw add-layer --image "$W/oci:latest" --history.created 1970-01-01T00:00:00Z "$W/layer.tar"
	args=()
	for a in "$@"; do args+=(--config.entrypoint "$a"); done
	umoci config --image "$W/oci:latest" --created 1970-01-01T00:00:00Z --architecture "$arch" --os linux \
		"${args[@]}" --clear config.cmd --config.env PATH=/bin:/usr/bin \
		${IMAGE_USER:+--config.user "$IMAGE_USER"} --history.created 1970-01-01T00:00:00Z
	umoci gc --layout "$W/oci"
} >&2
mkdir -p "$(dirname "$OUT")"
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$W/oci" -cf "$OUT.tmp.$$" oci-layout index.json blobs
mv -f "$OUT.tmp.$$" "$OUT"
echo "$OUT"
