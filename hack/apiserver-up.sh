#!/usr/bin/env bash
# Starts etcd and kube-apiserver on 127.0.0.1 (free ports), all state under DIR:
#
#   KUBECONFIG=$(hack/apiserver-up.sh "$DIR" | tail -1)
#   ...
#   hack/apiserver-down.sh "$DIR"
#
# DIR/etcd (data), DIR/certs (apiserver serving cert, service account key),
# DIR/token.csv, DIR/*.log, DIR/*.pid, DIR/kubeconfig (admin token, system:masters).
# The last line of stdout is the kubeconfig path. If the apiserver of DIR is already
# up and ready, the script only prints that line. On failure it stops whatever it
# started and shows the end of the relevant log.
#
# No controller-manager runs: namespaces stay Terminating after deletion, and the
# ServiceAccount admission plugin is disabled because no "default" service
# accounts get created.
set -euo pipefail

die() { echo "apiserver-up.sh: $*" >&2; exit 1; }

[[ $# -eq 1 && -n "$1" ]] || die "usage: apiserver-up.sh DIR"
mkdir -p "$1" || die "cannot create $1"
DIR=$(cd "$1" && pwd)
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KUBECONFIG_FILE="$DIR/kubeconfig"
READY_TIMEOUT=${HTC_APISERVER_READY_TIMEOUT:-60}

for cmd in openssl python3 curl setsid; do
	command -v "$cmd" >/dev/null || die "$cmd not found in PATH"
done

# alive PIDFILE NAME: the process of PIDFILE is running, is NAME and belongs to DIR.
alive() {
	local pid cmdline state
	[[ -s "$1" ]] || return 1
	pid=$(<"$1")
	[[ "$pid" =~ ^[0-9]+$ ]] || return 1
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ "$state" != Z ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ "$cmdline" == *"$2"* && "$cmdline" == *"$DIR/"* ]]
}

readyz() { # readyz PORT TOKEN
	[[ "$(curl -sk --max-time 1 -H "Authorization: Bearer $2" "https://127.0.0.1:$1/readyz" 2>/dev/null)" == ok ]]
}

# Already running?
if alive "$DIR/kube-apiserver.pid" kube-apiserver || alive "$DIR/etcd.pid" etcd; then
	if alive "$DIR/kube-apiserver.pid" kube-apiserver && alive "$DIR/etcd.pid" etcd &&
		[[ -s "$DIR/port" && -s "$DIR/token" && -s "$KUBECONFIG_FILE" ]] &&
		readyz "$(<"$DIR/port")" "$(<"$DIR/token")"; then
		echo "$KUBECONFIG_FILE"
		exit 0
	fi
	die "etcd/kube-apiserver of $DIR are running but not ready; run hack/apiserver-down.sh $DIR first"
fi
rm -f "$DIR/kube-apiserver.pid" "$DIR/etcd.pid"

ASSETS=${HTC_ASSETS_DIR:-}
if [[ -z "$ASSETS" || ! -x "$ASSETS/kube-apiserver" || ! -x "$ASSETS/etcd" ]]; then
	ASSETS=$("$HERE/k8s-assets.sh" | tail -1) || die "hack/k8s-assets.sh failed"
fi
[[ -x "$ASSETS/kube-apiserver" && -x "$ASSETS/etcd" ]] || die "kube-apiserver/etcd not found in $ASSETS"

mkdir -p "$DIR/certs" "$DIR/etcd"
chmod 700 "$DIR/etcd"

# Free loopback ports: etcd client, etcd peer, apiserver (see free-ports.sh).
read -r ETCD_PORT PEER_PORT PORT < <("$HERE/free-ports.sh" 3) || die "cannot find free ports on 127.0.0.1"

if [[ ! -s "$DIR/certs/sa.key" ]]; then
	openssl genrsa -out "$DIR/certs/sa.key.tmp" 2048 2>/dev/null || die "openssl genrsa failed"
	mv "$DIR/certs/sa.key.tmp" "$DIR/certs/sa.key"
fi
if [[ ! -s "$DIR/token" ]]; then
	openssl rand -hex 24 >"$DIR/token.tmp" || die "openssl rand failed"
	mv "$DIR/token.tmp" "$DIR/token"
fi
TOKEN=$(<"$DIR/token")
echo "$TOKEN,admin,admin,\"system:masters\"" >"$DIR/token.csv"
echo "$PORT" >"$DIR/port"

# start NAME CMD...: detached (own session), output to DIR/NAME.log, pid to DIR/NAME.pid.
start() {
	local name=$1
	shift
	setsid bash -c 'echo $$ >"$0"; exec "$@"' "$DIR/$name.pid" "$@" \
		</dev/null >>"$DIR/$name.log" 2>&1 &
	local i
	for ((i = 0; i < 500; i++)); do
		[[ -s "$DIR/$name.pid" ]] && return 0
		sleep 0.02
	done
	die "$name did not start within 10 s"
}

failed() { # failed NAME MESSAGE: show the log, stop everything, exit 1
	echo "apiserver-up.sh: $2; last lines of $DIR/$1.log:" >&2
	tail -20 "$DIR/$1.log" >&2 || true
	"$HERE/apiserver-down.sh" "$DIR" >&2 || true
	exit 1
}

start_ts=$(date +%s.%N)
: >"$DIR/etcd.log"
start etcd "$ASSETS/etcd" \
	--name=htc \
	--data-dir="$DIR/etcd" \
	--listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
	--advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls="http://127.0.0.1:$PEER_PORT" \
	--initial-advertise-peer-urls="http://127.0.0.1:$PEER_PORT" \
	--initial-cluster="htc=http://127.0.0.1:$PEER_PORT" \
	--unsafe-no-fsync \
	--log-level=warn

deadline=$((SECONDS + 30))
while :; do
	alive "$DIR/etcd.pid" etcd || failed etcd "etcd exited"
	[[ "$(curl -sf --max-time 1 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null)" == *'"health":"true"'* ]] && break
	((SECONDS < deadline)) || failed etcd "etcd not healthy after 30 s"
	sleep 0.2
done

: >"$DIR/kube-apiserver.log"
start kube-apiserver "$ASSETS/kube-apiserver" \
	--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
	--bind-address=127.0.0.1 \
	--advertise-address=127.0.0.1 \
	--secure-port="$PORT" \
	--cert-dir="$DIR/certs" \
	--service-account-issuer=https://kubernetes.default.svc \
	--service-account-key-file="$DIR/certs/sa.key" \
	--service-account-signing-key-file="$DIR/certs/sa.key" \
	--token-auth-file="$DIR/token.csv" \
	--authorization-mode=AlwaysAllow \
	--service-cluster-ip-range=10.0.0.0/24 \
	--disable-admission-plugins=ServiceAccount \
	--allow-privileged=true

deadline=$((SECONDS + READY_TIMEOUT))
while :; do
	alive "$DIR/kube-apiserver.pid" kube-apiserver || failed kube-apiserver "kube-apiserver exited"
	alive "$DIR/etcd.pid" etcd || failed etcd "etcd exited"
	readyz "$PORT" "$TOKEN" && break
	((SECONDS < deadline)) || failed kube-apiserver "kube-apiserver not ready after ${READY_TIMEOUT} s"
	sleep 0.2
done

# The apiserver generated a self-signed serving cert + CA in DIR/certs/apiserver.crt.
[[ -s "$DIR/certs/apiserver.crt" ]] || failed kube-apiserver "no $DIR/certs/apiserver.crt"
CA_DATA=$(base64 -w0 <"$DIR/certs/apiserver.crt")
cat >"$KUBECONFIG_FILE.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: htc
  cluster:
    server: https://127.0.0.1:$PORT
    certificate-authority-data: $CA_DATA
users:
- name: admin
  user:
    token: $TOKEN
contexts:
- name: htc
  context:
    cluster: htc
    user: admin
    namespace: default
current-context: htc
EOF
chmod 600 "$KUBECONFIG_FILE.tmp"
mv "$KUBECONFIG_FILE.tmp" "$KUBECONFIG_FILE"

echo "apiserver-up.sh: ready on https://127.0.0.1:$PORT after $(python3 -c "import time; print(round(time.time() - $start_ts, 1))") s" >&2
echo "$KUBECONFIG_FILE"
