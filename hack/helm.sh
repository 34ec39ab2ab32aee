#!/usr/bin/env bash
# Ensures helm v3.22.0 is installed (built from the Go module proxy) at
# ${HTC_TOOLS_DIR:-$HOME/.cache/htc/tools}/helm and prints its path as the last line:
#
#   HELM=$(hack/helm.sh | tail -1)
#
# The ldflags set what the release Makefile sets: the helm version, and the default
# Kubernetes version (.Capabilities.KubeVersion for `helm template`/`helm lint`),
# which otherwise stays at v1.20.
set -euo pipefail
# An interrupted check must stop the script, not look like missing tools and start a build.
trap 'exit 130' INT
trap 'exit 143' TERM

HELM_VERSION=v3.22.0
TOOLS_DIR=${HTC_TOOLS_DIR:-$HOME/.cache/htc/tools}
HELM="$TOOLS_DIR/helm"

die() { echo "helm.sh: $*" >&2; exit 1; }

helm_ok() {
	[[ -x "$HELM" ]] && [[ "$("$HELM" version --short 2>/dev/null)" == "$HELM_VERSION"* ]]
}

if helm_ok; then
	echo "$HELM"
	exit 0
fi

command -v go >/dev/null || die "go not found in PATH"
mkdir -p "$TOOLS_DIR" || die "cannot create $TOOLS_DIR"

exec 9>"$TOOLS_DIR/.helm.lock"
flock 9 || die "cannot lock $TOOLS_DIR/.helm.lock"
if helm_ok; then
	echo "$HELM"
	exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-helm.XXXXXX")
trap 'rm -rf "$WORK" "$TOOLS_DIR/.helm.tmp.$$"' EXIT
cd "$WORK" # outside any module: go install pkg@version ignores go.mod/go.work anyway

export GOTOOLCHAIN=local
export GOFLAGS=-buildvcs=false
export GOWORK=off

echo "helm.sh: building helm $HELM_VERSION into $TOOLS_DIR (takes a few minutes)" >&2

# The Kubernetes version helm assumes by default follows its k8s.io/client-go (v0.N.x -> 1.N).
helm_gomod=$(go mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
	sed -n 's/^[[:space:]]*"GoMod":[[:space:]]*"\(.*\)",\{0,1\}$/\1/p') ||
	die "go mod download helm.sh/helm/v3@$HELM_VERSION failed"
[[ -f "$helm_gomod" ]] || die "go.mod of helm.sh/helm/v3@$HELM_VERSION not found in the module cache"
k8s_minor=$(sed -n 's#^[[:space:]]*k8s\.io/client-go[[:space:]]\{1,\}v0\.\([0-9]\{1,\}\)\..*#\1#p' "$helm_gomod" | head -1)
[[ -n "$k8s_minor" ]] || die "no k8s.io/client-go requirement in $helm_gomod"

ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
	ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$k8s_minor"
done

GOBIN="$WORK/bin" go install -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" >"$WORK/build.log" 2>&1 ||
	{ tail -20 "$WORK/build.log" >&2; die "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed"; }

mv -f "$WORK/bin/helm" "$TOOLS_DIR/.helm.tmp.$$"
mv -f "$TOOLS_DIR/.helm.tmp.$$" "$HELM"

helm_ok || die "$HELM does not report version $HELM_VERSION"
echo "$HELM"
