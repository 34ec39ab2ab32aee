#!/usr/bin/env bash
# Builds kube-apiserver, kubectl (Kubernetes v1.34.4) and etcd (v3.6.4) from the
# Go module proxy into a cache directory outside the repository; with --cluster
# also the node and the rest of the control plane that hack/cluster-up.sh runs:
# kubelet, kube-proxy, kube-scheduler and kube-controller-manager.
#
#   ASSETS=$(hack/k8s-assets.sh | tail -1)
#   KUBEBUILDER_ASSETS=$ASSETS go test ./...
#   ASSETS=$(hack/k8s-assets.sh --cluster | tail -1)
#
# The last line of stdout is the assets directory, one per version (the cache
# key; every binary there is checked to report its version). When the binaries
# asked for are already there the script prints only that line and returns at
# once; otherwise it builds the missing ones. A cold build takes several
# minutes, --cluster about 1.5 more (progress goes to stderr). Binaries are
# written under temporary names and renamed at the end, so an interrupted build
# never leaves a partial cache.
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

case "${1:-}" in
"") ;;
--cluster) BINARIES+=(kubelet kube-proxy kube-scheduler kube-controller-manager) ;;
*) die "usage: hack/k8s-assets.sh [--cluster]" ;;
esac

# binary_ok NAME: NAME is in the cache and reports its version.
binary_ok() {
	[[ -x "$ASSETS_DIR/$1" ]] || return 1
	# Capture, then match: `| grep -q` exits at the first match, and under
	# pipefail a kubectl still writing its next line dies of SIGPIPE, which
	# made working binaries look broken (and rebuilt) on a busy machine.
	local out want=$K8S_VERSION
	case $1 in
	kubectl) out=$("$ASSETS_DIR/kubectl" version --client 2>/dev/null) || return 1 ;;
	etcd) out=$("$ASSETS_DIR/etcd" --version 2>/dev/null) || return 1; want="etcd Version: ${ETCD_VERSION#v}" ;;
	*) out=$("$ASSETS_DIR/$1" --version 2>/dev/null) || return 1 ;;
	esac
	[[ "$out" == *"$want"* ]]
}

# missing prints the binaries asked for that are not in the cache, one a line.
missing() {
	local b
	for b in "${BINARIES[@]}"; do
		binary_ok "$b" || echo "$b"
	done
}

if [[ -z "$(missing)" ]]; then
	echo "$ASSETS_DIR"
	exit 0
fi

command -v go >/dev/null || die "go not found in PATH"
mkdir -p "$ASSETS_DIR" || die "cannot create $ASSETS_DIR"

# One build at a time per assets dir; whoever waited may find the work done.
exec 9>"$ASSETS_DIR/.lock"
flock 9 || die "cannot lock $ASSETS_DIR/.lock"
mapfile -t TODO < <(missing)
if [[ ${#TODO[@]} == 0 ]]; then
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

echo "k8s-assets.sh: building ${TODO[*]} (Kubernetes $K8S_VERSION, etcd $ETCD_VERSION) into $ASSETS_DIR (takes several minutes)" >&2

# package NAME: the main package of binary NAME.
package() {
	case $1 in
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	*) echo "k8s.io/kubernetes/cmd/$1" ;;
	esac
}

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

# tools.go imports what is built, so that go mod tidy resolves exactly that.
{
	printf '//go:build tools\n\npackage tools\n\nimport (\n'
	for b in "${TODO[@]}"; do
		printf '\t_ "%s"\n' "$(package "$b")"
	done
	printf ')\n'
} >"$WORK/tools.go"

(cd "$WORK" && go mod tidy) >"$WORK/tidy.log" 2>&1 ||
	{ tail -20 "$WORK/tidy.log" >&2; die "go mod tidy of the temporary module failed"; }

ldflags=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=34 -X $p.gitTreeState=clean"
done
ldflags="-s -w$ldflags"

for b in "${TODO[@]}"; do
	echo "k8s-assets.sh: go build $(package "$b")" >&2
	(cd "$WORK" && go build -ldflags "$ldflags" -o "$ASSETS_DIR/.$b.tmp.$$" "$(package "$b")") >"$WORK/build-$b.log" 2>&1 ||
		{ tail -20 "$WORK/build-$b.log" >&2; die "go build $(package "$b") failed"; }
done

for b in "${TODO[@]}"; do
	mv -f "$ASSETS_DIR/.$b.tmp.$$" "$ASSETS_DIR/$b"
done

left=$(missing | xargs)
[[ -z "$left" ]] || die "built binaries in $ASSETS_DIR do not work (missing or not $K8S_VERSION/etcd $ETCD_VERSION: $left)"
echo "$ASSETS_DIR"
