#!/usr/bin/env bash
# Builds the two images the test cluster needs besides htc's, without a
# daemon or a registry (hack/oci-image.sh):
#
#   pause.oci.tar    the pod sandbox: Kubernetes' own build/pause/linux/pause.c
#                    (from the k8s.io/kubernetes module), gcc -static
#   backend.oci.tar  the test backend test/cluster/backend, a static Go binary
#
#   DIR=$(hack/cluster-images.sh | tail -1)
#
# The last line of stdout is the cache directory
# ${HTC_CACHE_DIR:-$HOME/.cache/htc}/cluster-images/<key>, keyed by this
# script, oci-image.sh, pause.c, the backend's source and the Go version;
# when it is complete the script only prints it. hack/cluster-up.sh imports
# pause (as localhost/htc/pause:1, containerd's sandbox image); tests import
# the backend with hack/cluster-import.sh.
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM

die() { echo "cluster-images.sh: $*" >&2; exit 1; }
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
K8S_VERSION=v1.34.4

export GOWORK=off GOFLAGS=-buildvcs=false
# The kubernetes module is read with this machine's Go; the backend is built
# from the repository with the toolchain the Makefile exports (go.mod's Go).
k8s=$(cd / && GOTOOLCHAIN=local go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
	sed -n 's/^[[:space:]]*"Dir":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p') ||
	die "go mod download k8s.io/kubernetes@$K8S_VERSION failed"
PAUSE_C=$k8s/build/pause/linux/pause.c
[[ -f $PAUSE_C ]] || die "$PAUSE_C not found"

key=$({
	grep -hv '^[[:space:]]*#' "$HERE/cluster-images.sh" "$HERE/oci-image.sh"
	cat "$PAUSE_C" "$REPO"/test/cluster/backend/*.go
	(cd "$REPO" && go version)
} | sha256sum | cut -c1-16)
CACHE=${HTC_CACHE_DIR:-$HOME/.cache/htc}/cluster-images
DIR=$CACHE/$key
if [[ -f $DIR/.complete ]]; then
	echo "$DIR"
	exit 0
fi
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock -w 600 9 || die "cannot lock $CACHE/.lock"
if [[ -f $DIR/.complete ]]; then
	echo "$DIR"
	exit 0
fi

W=$(mktemp -d "$CACHE/.build.XXXXXX")
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/pause" "$W/backend/bin" "$W/out"
gcc -Os -static -Wall -DVERSION="$K8S_VERSION-htc" -o "$W/pause/pause" "$PAUSE_C" || die "gcc -static pause.c failed (needs gcc, libc6-dev)"
strip "$W/pause/pause"
"$HERE/oci-image.sh" "$W/out/pause.oci.tar" "$W/pause" /pause >/dev/null
(cd "$REPO" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$W/backend/bin/backend" ./test/cluster/backend) ||
	die "go build ./test/cluster/backend failed"
IMAGE_USER=65534:65534 "$HERE/oci-image.sh" "$W/out/backend.oci.tar" "$W/backend" /bin/backend >/dev/null
touch "$W/out/.complete"
rm -rf "$DIR"
mv "$W/out" "$DIR"
# Images of earlier inputs: keep the newest few (another checkout may use one).
ls -dt "$CACHE"/*/ 2>/dev/null | tail -n +6 | xargs -r rm -rf
echo "cluster-images.sh: built $(ls "$DIR" | xargs) in $DIR" >&2
echo "$DIR"
