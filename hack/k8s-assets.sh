#!/usr/bin/env bash
# Builds kube-apiserver, kubectl (Kubernetes v1.34.4) and etcd (v3.6.4) from the
# Go module proxy into a cache directory outside the repository.
#
#   ASSETS=$(hack/k8s-assets.sh | tail -1)
#   KUBEBUILDER_ASSETS=$ASSETS go test ./...
#
# The last line of stdout is the assets directory. When the binaries are already
# there the script prints only that line and returns at once. A cold build takes
# several minutes (progress goes to stderr). Binaries are written under temporary
# names and renamed at the end, so an interrupted build never leaves a partial cache.
set -euo pipefail
# An interrupted check must stop the script, not look like missing tools and start a build.
trap 'exit 130' INT
trap 'exit 143' TERM

K8S_VERSION=v1.34.4
K8S_STAGING_VERSION=v0.34.4
ETCD_VERSION=v3.6.4
ASSETS_DIR=${HTC_ASSETS_DIR:-$HOME/.cache/htc/k8s-${K8S_VERSION}}
BINARIES=(kube-apiserver kubectl etcd)

die() { echo "k8s-assets.sh: $*" >&2; exit 1; }

assets_ok() {
	local b
	for b in "${BINARIES[@]}"; do
		[[ -x "$ASSETS_DIR/$b" ]] || return 1
	done
	# Capture, then match: `| grep -q` exits at the first match, and under
	# pipefail a kubectl still writing its next line dies of SIGPIPE, which
	# made working binaries look broken (and rebuilt) on a busy machine.
	local out
	out=$("$ASSETS_DIR/kubectl" version --client 2>/dev/null) || return 1
	[[ "$out" == *"$K8S_VERSION"* ]]
}

if assets_ok; then
	echo "$ASSETS_DIR"
	exit 0
fi

command -v go >/dev/null || die "go not found in PATH"
mkdir -p "$ASSETS_DIR" || die "cannot create $ASSETS_DIR"

# One build at a time per assets dir; whoever waited may find the work done.
exec 9>"$ASSETS_DIR/.lock"
flock 9 || die "cannot lock $ASSETS_DIR/.lock"
if assets_ok; then
	echo "$ASSETS_DIR"
	exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-k8s-assets.XXXXXX")
cleanup() {
	rm -rf "$WORK"
	rm -f "$ASSETS_DIR"/.*.tmp.$$
}
trap cleanup EXIT

export GOTOOLCHAIN=local
export GOFLAGS="-buildvcs=false -mod=mod"
export GOWORK=off

echo "k8s-assets.sh: building kube-apiserver/kubectl $K8S_VERSION and etcd $ETCD_VERSION into $ASSETS_DIR (takes several minutes)" >&2

# kubernetes' own go.mod lists the staging modules it replaces with ./staging/...
k8s_gomod=$(cd "$WORK" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" |
	sed -n 's/^[[:space:]]*"GoMod":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p') ||
	die "go mod download k8s.io/kubernetes@$K8S_VERSION failed"
[[ -f "$k8s_gomod" ]] || die "go.mod of k8s.io/kubernetes@$K8S_VERSION not found in the module cache"

staging=$(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s\.io/[^[:space:]]*\)[[:space:]]*=>[[:space:]]*\./staging/.*#\2#p' "$k8s_gomod" | sort -u)
[[ -n "$staging" ]] || die "no ./staging replace lines found in $k8s_gomod"

{
	echo "module htc.local/k8s-assets"
	echo
	echo "go 1.24.0"
	echo
	echo "require ("
	echo "	k8s.io/kubernetes $K8S_VERSION"
	echo "	go.etcd.io/etcd/server/v3 $ETCD_VERSION"
	echo ")"
	echo
	echo "replace ("
	for m in $staging; do
		echo "	$m => $m $K8S_STAGING_VERSION"
	done
	echo ")"
} >"$WORK/go.mod"

cat >"$WORK/tools.go" <<'EOF'
//go:build tools

package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF

(cd "$WORK" && go mod tidy) >"$WORK/tidy.log" 2>&1 ||
	{ tail -20 "$WORK/tidy.log" >&2; die "go mod tidy of the temporary module failed"; }

ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=34 -X $p.gitTreeState=clean"
done
ldflags="-s -w$ldflags"

build() { # build OUTPUT-NAME PACKAGE
	local out="$ASSETS_DIR/.$1.tmp.$$"
	echo "k8s-assets.sh: go build $2" >&2
	(cd "$WORK" && go build -ldflags "$ldflags" -o "$out" "$2") >"$WORK/build-$1.log" 2>&1 ||
		{ tail -20 "$WORK/build-$1.log" >&2; die "go build $2 failed"; }
}
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kubectl k8s.io/kubernetes/cmd/kubectl
build etcd go.etcd.io/etcd/server/v3

for b in "${BINARIES[@]}"; do
	mv -f "$ASSETS_DIR/.$b.tmp.$$" "$ASSETS_DIR/$b"
done

assets_ok || die "built binaries in $ASSETS_DIR do not work (kubectl version --client)"
echo "$ASSETS_DIR"
