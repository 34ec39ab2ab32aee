#!/usr/bin/env bash
# Starts the test cluster: a real single-node Kubernetes v1.34.4 on this
# machine, without Docker, from cached binaries. Needs root.
#
#   KUBECONFIG=$(hack/cluster-up.sh | tail -1)
#   hack/cluster-import.sh bin/htc-image.oci.tar haproxy-template/htc:dev
#   ... kubectl, helm ...
#   hack/cluster-down.sh
#
# What runs (each its own session, pid in /var/lib/htc-cluster/NAME.pid, log
# in NAME.log): containerd (Debian's, with its CRI plugin, cgroupfs, runc),
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet and
# kube-proxy (iptables mode). Pods get 10.244.0.0/16 on the bridge htc0
# (10.244.0.1, the bridge CNI plugin with host-local IPAM), Services
# 10.96.0.0/16. The apiserver listens on https://10.244.0.1:6443 (pods reach
# it through the kubernetes Service); host tools use the printed kubeconfig
# (admin, system:masters), also at /var/lib/htc-cluster/admin.kubeconfig.
# There is no DNS in the cluster and no registry: images are imported
# (hack/cluster-import.sh) and pods use imagePullPolicy Never or IfNotPresent.
#
# The walls of these machines (notes/cluster.md): no CAP_SYS_RESOURCE, so
# containerd must not lower oom_score_adj (restrict_oom_score_adj); cgroup v1
# without systemd (cgroupfs everywhere); containerd 1.6 with kubelet 1.34
# (pinned).
#
# Network rule: nothing the cluster sends leaves the machine. Pods have
# routes to the pod and Service CIDRs only, an empty resolv.conf, and the
# chain HTC-CLUSTER (FORWARD, INPUT) rejects what a pod sends anywhere but to
# pods and the bridge address; the Service CIDR is routed onto the bridge,
# so a Service address kube-proxy has not programmed yet stays inside too.
#
# One cluster per machine: the script takes the lock (see cluster-lib.sh),
# runs cluster-down.sh first (whatever an earlier session left), and runs it
# again when it fails. The apt packages, the binaries (hack/k8s-assets.sh
# --cluster) and the pause image (hack/cluster-images.sh) come first, each
# installed or built once. The last line of stdout is the kubeconfig.
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM
_NAME=cluster-up.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster-lib.sh
source "$HERE/cluster-lib.sh"
D=$CLUSTER_DIR

"$HERE/cluster-deps.sh"
take_lock
ASSETS=$("$HERE/k8s-assets.sh" --cluster | tail -1) || die "hack/k8s-assets.sh --cluster failed"
IMAGES=$("$HERE/cluster-images.sh" | tail -1) || die "hack/cluster-images.sh failed"
"$HERE/cluster-down.sh" || die "cluster-down.sh could not remove what an earlier cluster left (see above)"

for r in "$POD_CIDR" "$SVC_CIDR"; do
	# A route other than the default one means the machine uses the range.
	route=$(ip route show to match "${r%/*}" | grep -v '^default' || true)
	[[ -z $route ]] || die "$r is already routed on this machine ($route); the test cluster needs it"
done

failed=1
cleanup() {
	if ((failed)); then
		log "failed; last lines of the logs:"
		for f in "$D"/*.log; do [[ -s $f ]] && { echo "--- $f" >&2; tail -5 "$f" >&2; }; done
		"$HERE/cluster-down.sh" || true
	fi
}
trap cleanup EXIT

mkdir -p "$D"/{pki,etcd,containerd,cni/net.d,cni/ipam,kubelet,pod-logs,runc}
chmod 700 "$D" "$D/etcd" "$D/pki"
for s in "${SYSCTLS[@]}"; do
	v=$(sysctl -n "$s" 2>/dev/null) && printf '%s=%s\n' "$s" "$v"
done >"$D/sysctl.saved"

# start NAME CMD...: detached (own session), output to D/NAME.log, pid to
# D/NAME.pid, without the lock's file descriptor: a cluster left running by a
# session that died must not keep the lock from the next one, which brings
# it down.
start() {
	local name=$1 i
	shift
	setsid bash -c 'eval "exec $1>&-"; echo $$ >"$0"; shift; exec "$@"' "$D/$name.pid" "$HTC_CLUSTER_LOCK_FD" "$@" </dev/null >>"$D/$name.log" 2>&1 &
	for ((i = 0; i < 500; i++)); do
		[[ -s $D/$name.pid ]] && return 0
		sleep 0.02
	done
	die "$name did not start within 10 s"
}
# wait_for NAME SECONDS CMD...: until CMD succeeds, while NAME runs.
wait_for() {
	local name=$1 deadline=$((SECONDS + $2))
	shift 2
	until "$@" >/dev/null 2>&1; do
		alive "$name" || { tail -20 "$D/$name.log" >&2; die "$name exited"; }
		((SECONDS < deadline)) || { tail -20 "$D/$name.log" >&2; die "$name not ready after $2 s: $*"; }
		sleep 0.2
	done
}

# ---- PKI and credentials: one CA, the apiserver's serving certificate, the
# apiserver's client certificate for kubelets, a service account key, tokens.
P=$D/pki
openssl genrsa -out "$P/ca.key" 2048 2>/dev/null
openssl req -x509 -new -key "$P/ca.key" -subj /CN=htc-test-cluster-ca -days 30 -out "$P/ca.crt"
sign() { # sign NAME SUBJECT EXTENSIONS
	openssl genrsa -out "$P/$1.key" 2048 2>/dev/null
	openssl req -new -key "$P/$1.key" -subj "$2" -out "$P/$1.csr"
	openssl x509 -req -in "$P/$1.csr" -CA "$P/ca.crt" -CAkey "$P/ca.key" -CAcreateserial -days 30 \
		-extfile <(printf '%s\n' "$3") -out "$P/$1.crt" 2>/dev/null
}
sign apiserver /CN=kube-apiserver "subjectAltName=IP:$GW,IP:$KUBERNETES_SVC_IP,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth"
sign kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "extendedKeyUsage=clientAuth"
openssl genrsa -out "$P/sa.key" 2048 2>/dev/null
openssl rsa -in "$P/sa.key" -pubout -out "$P/sa.pub" 2>/dev/null
: >"$D/tokens.csv"
for id in admin kcm sched kubelet proxy; do
	case $id in
	admin) user=admin group=system:masters ;;
	kcm) user=system:kube-controller-manager group= ;;
	sched) user=system:kube-scheduler group= ;;
	kubelet) user=system:node:$NODE group=system:nodes ;;
	proxy) user=system:kube-proxy group= ;;
	esac
	tok=$(openssl rand -hex 24)
	echo "$tok,$user,$user${group:+,\"$group\"}" >>"$D/tokens.csv"
	cat >"$D/$id.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: htc-test, cluster: {server: "https://$GW:$APISERVER_PORT", certificate-authority: "$P/ca.crt"}}]
users: [{name: $id, user: {token: "$tok"}}]
contexts: [{name: htc-test, context: {cluster: htc-test, user: $id, namespace: default}}]
current-context: htc-test
EOF
	chmod 600 "$D/$id.kubeconfig"
done
K() { "$ASSETS/kubectl" --kubeconfig "$D/admin.kubeconfig" "$@"; }

# ---- the bridge first: the apiserver and the kubelet listen on its address.
ip link add "$BRIDGE" type bridge
ip addr add "$GW/16" dev "$BRIDGE"
sysctl -qw "net.ipv6.conf.$BRIDGE.disable_ipv6=1" 2>/dev/null || true
ip link set "$BRIDGE" up
ip route add "$SVC_CIDR" dev "$BRIDGE"
sysctl -qw net.bridge.bridge-nf-call-iptables=1 net.ipv4.ip_forward=1
for c in FORWARD INPUT; do
	iptables -N "HTC-CLUSTER-$c"
	iptables -I "$c" 1 -j "HTC-CLUSTER-$c"
done
iptables -A HTC-CLUSTER-FORWARD -s "$POD_CIDR" ! -d "$POD_CIDR" -j REJECT
iptables -A HTC-CLUSTER-FORWARD -d "$POD_CIDR" ! -s "$POD_CIDR" -j REJECT
iptables -A HTC-CLUSTER-INPUT -s "$POD_CIDR" ! -d "$GW" -j REJECT
: >"$D/resolv.conf"

# ---- containerd
cat >"$D/containerd/config.toml" <<EOF
version = 2
root = "$D/containerd/root"
state = "$D/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "$D/containerd.sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/htc/pause:1"
  netns_mounts_under_state_dir = true
  # No CAP_SYS_RESOURCE in this VM: nothing may lower an oom_score_adj, and
  # the -998 containerd sets on sandboxes fails every pod in runc init.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$D/runc"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni/net.d"
[plugins."io.containerd.internal.v1.opt"]
  path = "$D/containerd/opt"
EOF
# Routes to the pod and Service CIDRs only: no default route out of a pod.
cat >"$D/cni/net.d/10-htc.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "htc", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$D/cni/ipam",
            "ranges": [[{"subnet": "$POD_CIDR", "gateway": "$GW"}]],
            "routes": [{"dst": "$SVC_CIDR", "gw": "$GW"}]}}
]}
EOF
start containerd containerd --config "$D/containerd/config.toml"
wait_for containerd 60 ctr -a "$D/containerd.sock" version
CTR images import --base-name localhost/htc/pause "$IMAGES/pause.oci.tar" >/dev/null
CTR images tag --force localhost/htc/pause:latest localhost/htc/pause:1 >/dev/null
log "containerd up"

# ---- etcd, kube-apiserver
start etcd "$ASSETS/etcd" --name=htc --data-dir="$D/etcd" \
	--listen-client-urls="http://$ETCD_ADDR:2379" --advertise-client-urls="http://$ETCD_ADDR:2379" \
	--listen-peer-urls="http://$ETCD_ADDR:2380" --initial-advertise-peer-urls="http://$ETCD_ADDR:2380" \
	--initial-cluster="htc=http://$ETCD_ADDR:2380" \
	--unsafe-no-fsync --log-level=warn
wait_for etcd 60 curl -sf --max-time 2 "http://$ETCD_ADDR:2379/health"
start kube-apiserver "$ASSETS/kube-apiserver" \
	--etcd-servers="http://$ETCD_ADDR:2379" \
	--bind-address="$GW" --advertise-address="$GW" --secure-port="$APISERVER_PORT" \
	--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" \
	--client-ca-file="$P/ca.crt" \
	--kubelet-client-certificate="$P/kubelet-client.crt" --kubelet-client-key="$P/kubelet-client.key" \
	--kubelet-preferred-address-types=InternalIP \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
	--token-auth-file="$D/tokens.csv" \
	--authorization-mode=Node,RBAC \
	--service-cluster-ip-range="$SVC_CIDR" \
	--enable-aggregator-routing=true \
	--allow-privileged=true
wait_for kube-apiserver 180 K get --raw /readyz
log "kube-apiserver ready on https://$GW:$APISERVER_PORT"

start kube-controller-manager "$ASSETS/kube-controller-manager" \
	--kubeconfig="$D/kcm.kubeconfig" \
	--authentication-kubeconfig="$D/kcm.kubeconfig" --authorization-kubeconfig="$D/kcm.kubeconfig" \
	--bind-address=127.0.0.1 --secure-port=0 \
	--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
	--use-service-account-credentials=true \
	--service-cluster-ip-range="$SVC_CIDR" \
	--leader-elect=false
start kube-scheduler "$ASSETS/kube-scheduler" \
	--kubeconfig="$D/sched.kubeconfig" \
	--authentication-kubeconfig="$D/sched.kubeconfig" --authorization-kubeconfig="$D/sched.kubeconfig" \
	--bind-address=127.0.0.1 --secure-port=0 \
	--leader-elect=false

# ---- kubelet: its ports on the bridge address only.
cat >"$D/kubelet/config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $GW
port: 10250
readOnlyPort: 0
healthzBindAddress: $GW
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$D/containerd.sock
failSwapOn: false
failCgroupV1: false
podLogsDir: $D/pod-logs
clusterDomain: cluster.local
resolvConf: $D/resolv.conf
registerNode: true
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
EOF
start kubelet "$ASSETS/kubelet" \
	--config="$D/kubelet/config.yaml" --kubeconfig="$D/kubelet.kubeconfig" \
	--root-dir="$D/kubelet" --cert-dir="$D/kubelet/pki" \
	--hostname-override="$NODE" --node-ip="$GW" -v=1

# ---- kube-proxy (iptables mode), its ports on the bridge address only.
cat >"$D/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$D/proxy.kubeconfig"}
mode: iptables
clusterCIDR: $POD_CIDR
hostnameOverride: $NODE
bindAddress: $GW
healthzBindAddress: $GW:10256
metricsBindAddress: $GW:10249
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
nodePortAddresses: ["$GW/32"]
EOF
start kube-proxy "$ASSETS/kube-proxy" --config="$D/kube-proxy.yaml"

node_ready() { [[ $(K get node "$NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}') == True ]]; }
wait_for kubelet 300 node_ready
log "node $NODE Ready"
wait_for kube-controller-manager 120 K -n default get serviceaccount default
# kube-proxy answers its healthz once it programmed the Services, the
# kubernetes Service (how pods reach the apiserver) among them.
wait_for kube-proxy 120 curl -sf --max-time 2 "http://$GW:10256/healthz"
cat >"$D/env" <<EOF
KUBECONFIG=$D/admin.kubeconfig
KUBECTL=$ASSETS/kubectl
CONTAINERD_ADDRESS=$D/containerd.sock
EOF
failed=0
log "cluster ready"
echo "$D/admin.kubeconfig"
