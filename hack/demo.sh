#!/usr/bin/env bash
# make demo: htc end to end on this machine, with no cluster of your own.
#
# Starts a kube-apiserver and etcd on 127.0.0.1 (built once by
# hack/k8s-assets.sh), a small HTTP backend, the htc controller with its
# webhook, and a real HAProxy in master-worker mode that the controller
# publishes to. Applies the example Ingress library and an Ingress routing to
# the backend, sends a request through HAProxy, then shows kubectl denying a
# broken Ingress with the webhook's reason. Everything runs on loopback and is
# stopped and removed on exit or Ctrl-C.
#
#   hack/demo.sh [HTC_BINARY]        (default bin/htc; make demo builds it)
#
# With a terminal on stdin the demo waits for Enter before cleaning up, so you
# can try kubectl yourself; set HTC_DEMO_WAIT=0 to skip that.
set -euo pipefail
HTC=$(realpath "${1:-bin/htc}")
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
export PATH="$PATH:/usr/sbin"

say() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
run() { printf '\033[1m$ %s\033[0m\n' "$*"; "$@"; }
die() { echo "demo: $*" >&2; exit 1; }
# wait_for SECONDS DESCRIPTION COMMAND...: retry COMMAND every 0.2 s.
wait_for() {
	local deadline=$((SECONDS + $1)) what=$2
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || die "timed out waiting for $what"
		sleep 0.2
	done
}

for cmd in haproxy python3 openssl curl setsid; do
	command -v "$cmd" >/dev/null || die "$cmd not found in PATH (make demo installs haproxy; the rest are Debian packages)"
done
[[ -x "$HTC" ]] || die "$HTC is not an executable (run 'make build')"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/htc-demo.XXXXXX")
PIDS=()
cleanup() {
	local code=$?
	trap "" INT TERM # a second Ctrl-C must not cut the cleanup short
	trap - EXIT
	say "cleaning up"
	for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
	for pid in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$pid" 2>/dev/null || true
	done
	[[ -d "$WORK/apiserver" ]] && hack/apiserver-down.sh "$WORK/apiserver" >/dev/null 2>&1 || true
	if ((code != 0)) && [[ -d "$WORK" ]]; then
		for log in controller haproxy backend; do
			[[ -s "$WORK/$log.log" ]] && { echo "--- last lines of the $log log"; tail -n 15 "$WORK/$log.log"; }
		done
	fi
	rm -rf "$WORK"
	echo "stopped everything; removed $WORK"
	exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# start NAME COMMAND...: run COMMAND in its own session (process group), logging to $WORK/NAME.log.
start() {
	local name=$1
	shift
	setsid "$@" >"$WORK/$name.log" 2>&1 </dev/null &
	PIDS+=("$!")
}

say "test Kubernetes API server and etcd on 127.0.0.1 (the first run builds them: several minutes)"
ASSETS=$(hack/k8s-assets.sh | tail -n 1)
KUBECONFIG=$(HTC_ASSETS_DIR="$ASSETS" hack/apiserver-up.sh "$WORK/apiserver" | tail -n 1)
export KUBECONFIG
kubectl() { "$ASSETS/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }
# webhook_denies FILE: the webhook denies a server-side dry run of FILE (the
# API server picks a new ValidatingWebhookConfiguration up asynchronously).
webhook_denies() {
	local out
	out=$(kubectl apply --dry-run=server -f "$1" 2>&1) && return 1
	[[ "$out" == *"denied the request"* ]]
}
# condition_is TYPE STATUS: the config's condition TYPE has STATUS.
condition_is() {
	local got
	got=$(kubectl -n htc-system get haproxytemplateconfig htc -o "jsonpath={.status.conditions[?(@.type==\"$1\")].status}")
	[[ "$got" == "$2" ]]
}

say "a local HTTP backend on 127.0.0.1"
read -r BACKEND_PORT HTTP_PORT WEBHOOK_PORT HEALTH_PORT METRICS_PORT < <(hack/free-ports.sh 5) ||
	die "cannot find free ports on 127.0.0.1"
mkdir -p "$WORK/www"
echo "hello from the demo backend behind HAProxy" >"$WORK/www/index.html"
start backend python3 -m http.server --bind 127.0.0.1 --directory "$WORK/www" "$BACKEND_PORT"
wait_for 10 "the backend" curl -sf "http://127.0.0.1:$BACKEND_PORT/"
echo "backend on http://127.0.0.1:$BACKEND_PORT"

say "the CRD and the example Ingress library (examples/ingress/config.yaml), frontend on 127.0.0.1"
run kubectl apply -f charts/htc/crds/ >/dev/null
kubectl wait --for=condition=Established --timeout=30s crd/haproxytemplateconfigs.haproxy-template.io >/dev/null
kubectl create namespace htc-system >/dev/null
wait_for 15 "the HAProxyTemplateConfig kind" kubectl apply -f examples/ingress/config.yaml
run kubectl -n htc-system patch haproxytemplateconfig htc --type merge \
	-p "{\"spec\":{\"extraContext\":{\"bindAddress\":\"127.0.0.1\",\"httpPort\":$HTTP_PORT}}}"

say "the htc controller: webhook on https://127.0.0.1, publishing to $WORK/haproxy"
mkdir -p "$WORK/certs" "$WORK/run"
(
	cd "$WORK/certs"
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=htc-demo-ca \
		-keyout ca.key -out ca.crt 2>/dev/null
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
		-keyout tls.key -out tls.csr 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >ext.cnf
	openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile ext.cnf -out tls.crt 2>/dev/null
)
SOCKET="$WORK/run/master.sock"
start controller "$HTC" controller --kubeconfig "$KUBECONFIG" \
	--config-namespace htc-system --config-name htc \
	--webhook-bind-address 127.0.0.1 --webhook-port "$WEBHOOK_PORT" \
	--webhook-cert-file "$WORK/certs/tls.crt" --webhook-key-file "$WORK/certs/tls.key" \
	--health-probe-bind-address "127.0.0.1:$HEALTH_PORT" --metrics-bind-address "127.0.0.1:$METRICS_PORT" \
	--output-dir "$WORK/haproxy" --haproxy-master-socket "$SOCKET"
wait_for 60 "the controller to be ready" curl -sf "http://127.0.0.1:$HEALTH_PORT/readyz"
wait_for 30 "the published haproxy.cfg" test -s "$WORK/haproxy/haproxy.cfg"
echo "ready; it wrote $(ls "$WORK/haproxy" | tr '\n' ' ')"

say "HAProxy in master-worker mode on the published configuration"
printf '\033[1m$ haproxy -v\033[0m\n'; haproxy -v | sed -n 1p
start haproxy haproxy -W -S "$SOCKET" -f "$WORK/haproxy/haproxy.cfg"
wait_for 15 "HAProxy's master socket" test -S "$SOCKET"

CA_BUNDLE=$(base64 -w0 <"$WORK/certs/ca.crt")
kubectl apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: htc-demo}
webhooks:
  - name: ingresses.validate.htc
    clientConfig: {url: "https://127.0.0.1:$WEBHOOK_PORT/validate", caBundle: "$CA_BUNDLE"}
    rules: [{apiGroups: [networking.k8s.io], apiVersions: [v1], resources: [ingresses], operations: [CREATE, UPDATE]}]
    failurePolicy: Fail
    sideEffects: None
    admissionReviewVersions: [v1]
    timeoutSeconds: 10
YAML
echo "registered the ValidatingWebhookConfiguration htc-demo (Ingresses, failurePolicy Fail)"

say "an Ingress for hello.example.com, routed to the backend through an ExternalName Service"
cat >"$WORK/hello.yaml" <<YAML
apiVersion: v1
kind: Service
metadata: {name: hello, namespace: default}
spec: {type: ExternalName, externalName: localhost, ports: [{name: http, port: $BACKEND_PORT}]}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: hello, namespace: default}
spec:
  ingressClassName: htc
  rules:
    - host: hello.example.com
      http:
        paths:
          - {path: /, pathType: Prefix, backend: {service: {name: hello, port: {name: http}}}}
YAML
run kubectl apply -f "$WORK/hello.yaml"

say "a request through HAProxy reaches the backend"
printf '\033[1m$ curl -H "Host: hello.example.com" http://127.0.0.1:%s/\033[0m\n' "$HTTP_PORT"
wait_for 30 "the route through HAProxy" curl -sf -H "Host: hello.example.com" "http://127.0.0.1:$HTTP_PORT/"
curl -sS -H "Host: hello.example.com" "http://127.0.0.1:$HTTP_PORT/"
grep -n "hello" "$WORK/haproxy/haproxy.cfg" "$WORK"/haproxy/maps/*.map | sed "s|$WORK/||" || true

say "kubectl applies a broken Ingress (its Service 'api' does not exist): the webhook denies it"
wait_for 20 "the API server to call the webhook" webhook_denies examples/ingress/bad-ingress.yaml
set +e
run kubectl apply -f examples/ingress/bad-ingress.yaml
code=$?
set -e
((code != 0)) || die "the broken Ingress was admitted"
echo "(kubectl exit code $code; HAProxy still routes hello.example.com: $(curl -s -o /dev/null -w '%{http_code}' -H 'Host: hello.example.com' "http://127.0.0.1:$HTTP_PORT/"))"

say "the config's status"
# The route answers as soon as HAProxy's new worker runs, a moment before the
# controller verified the reload and wrote Published.
wait_for 30 "the Published condition" condition_is Published True
run kubectl -n htc-system get haproxytemplateconfig htc \
	-o jsonpath='{range .status.conditions[*]}{.type}={.status} ({.reason}): {.message}{"\n"}{end}'

if [[ -t 0 && "${HTC_DEMO_WAIT:-1}" != 0 ]]; then
	say "try it yourself in another terminal, then press Enter here to stop and clean up"
	echo "  export KUBECONFIG=$KUBECONFIG"
	echo "  $ASSETS/kubectl get ingress -A"
	echo "  curl -H 'Host: hello.example.com' http://127.0.0.1:$HTTP_PORT/"
	echo "  cat $WORK/haproxy/haproxy.cfg"
	read -r _
fi
