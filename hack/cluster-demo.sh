#!/usr/bin/env bash
# make cluster-demo: htc as a user installs it, in the test cluster of
# hack/cluster-up.sh (a real single-node Kubernetes on this machine; root):
#
#   1. the cluster up, the image `make image` built imported into it
#   2. helm install with the HAProxy sidecar; the pods Ready
#   3. a backend Deployment, its Service and an Ingress; a request through
#      the HAProxy in a controller pod
#   4. a bad Ingress, denied by the webhook the API server calls
#   5. helm uninstall; the cluster down, nothing left
#
# Every command is printed before it runs. The cluster lock is held for the
# whole demo, and the cluster comes down on every exit.
#
#   hack/cluster-demo.sh IMAGE_ARCHIVE
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM
_NAME=cluster-demo.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster-lib.sh
source "$HERE/cluster-lib.sh"
cd "$HERE/.."
[[ $# == 1 && -f $1 ]] || die "usage: hack/cluster-demo.sh IMAGE_ARCHIVE (make cluster-demo builds it)"
ARCHIVE=$1

say() { printf '\n\033[1m## %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

"$HERE/cluster-deps.sh" 2>/dev/null
take_lock
HELM=$("$HERE/helm.sh" | tail -1)
trap '"$HERE/cluster-down.sh"' EXIT

say "1. A single-node cluster: kubelet, containerd, kube-proxy (hack/cluster-up.sh)"
export KUBECONFIG
KUBECONFIG=$("$HERE/cluster-up.sh" | tail -1)
source "$CLUSTER_DIR/env"
kubectl() { "$KUBECTL" "$@"; }
helm() { "$HELM" "$@"; }
show kubectl get nodes
TAG=demo-$(sha256sum <"$ARCHIVE" | cut -c1-12)
show "$HERE/cluster-import.sh" "$ARCHIVE" "haproxy-template/htc:$TAG"
IMAGES=$("$HERE/cluster-images.sh" | tail -1)
"$HERE/cluster-import.sh" "$IMAGES/backend.oci.tar" localhost/htc-demo/backend:1 >/dev/null

say "2. helm install, with HAProxy beside the controller"
show kubectl create namespace htc-system
show helm install htc charts/htc --namespace htc-system --set image.tag="$TAG" --set image.pullPolicy=Never \
	--set haproxy.enabled=true --wait --timeout 5m
show kubectl -n htc-system get pods -o wide

say "3. A backend, its Service, an Ingress; a request through HAProxy"
show kubectl create namespace htc-demo
show kubectl -n htc-demo create deployment echo --image=localhost/htc-demo/backend:1 --replicas=2 --port=8080
kubectl -n htc-demo patch deployment echo --type=json \
	-p '[{"op":"add","path":"/spec/template/spec/containers/0/imagePullPolicy","value":"Never"}]' >/dev/null
show kubectl -n htc-demo expose deployment echo --name=echo --port=80 --target-port=8080
show kubectl -n htc-demo rollout status deployment/echo --timeout=3m
show kubectl -n htc-demo create ingress echo --class=htc --rule='echo.example.com/*=echo:80'
POD_IP=$(kubectl -n htc-system get pods -l app.kubernetes.io/name=htc -o 'jsonpath={.items[0].status.podIP}')
printf '$ curl -H "Host: echo.example.com" http://%s:8080/hello\n' "$POD_IP"
for ((i = 0; i < 120; i++)); do
	out=$(curl -sf --max-time 3 -H 'Host: echo.example.com' "http://$POD_IP:8080/hello") && break
	sleep 0.5
done
[[ -n ${out:-} ]] || die "HAProxy in $POD_IP did not route echo.example.com within a minute"
echo "$out"

say "4. A bad Ingress: the API server calls the webhook through its Service"
show kubectl -n htc-demo create ingress bad --class=htc --rule='bad.example.com/*=api:80' || true

say "5. helm uninstall, then the cluster down"
show helm uninstall htc --namespace htc-system --wait
show kubectl get validatingwebhookconfigurations
