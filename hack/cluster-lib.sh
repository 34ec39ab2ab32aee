# shellcheck shell=bash
# The test cluster's fixed names, sourced by hack/cluster-up.sh,
# cluster-down.sh and cluster-import.sh (see cluster-up.sh). One cluster per
# machine: the bridge, the CIDRs, the kubelet's ports and /run/containerd
# are machine-wide, so everything here is fixed, and a lock makes the
# sessions that use the cluster (up, tests, down) take turns.

# State of the cluster (PKI, etcd, containerd's root and state, kubelet, logs,
# pid files); down removes it.
CLUSTER_DIR=/var/lib/htc-cluster
# The lock a session holds from before up until after down.
CLUSTER_LOCK=/run/lock/htc-cluster.lock
# Who holds it (pid and command), for the message of whoever waits.
CLUSTER_OWNER=/run/lock/htc-cluster.owner
NODE=htc-node
BRIDGE=htc0
POD_CIDR=10.244.0.0/16
GW=10.244.0.1
SVC_CIDR=10.96.0.0/16
KUBERNETES_SVC_IP=10.96.0.1
# The apiserver listens on the bridge address (pods reach it through the
# kubernetes Service), etcd on a loopback address of its own: fixed ports
# that no test on 127.0.0.1 can take.
APISERVER_PORT=6443
ETCD_ADDR=127.0.88.1
# The sysctls kubelet, kube-proxy and the bridge CNI change; up saves them,
# down restores them.
SYSCTLS=(net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables
	net.ipv4.conf.all.route_localnet vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops
	kernel.keys.root_maxkeys kernel.keys.root_maxbytes)

_t0=$(date +%s.%N)
log() { printf '%s [%5.1fs] %s\n' "$_NAME" "$(awk -v a="$_t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" "$*" >&2; }
die() { echo "$_NAME: $*" >&2; exit 1; }

# take_lock: the caller of a script either holds the lock and passes its
# file descriptor in HTC_CLUSTER_LOCK_FD (the Go tests, make cluster-demo),
# or the script takes it on fd 9 for its own run, waiting at most
# HTC_CLUSTER_LOCK_WAIT seconds (default 1800).
take_lock() {
	if [[ -n ${HTC_CLUSTER_LOCK_FD:-} ]]; then
		[[ $HTC_CLUSTER_LOCK_FD =~ ^[0-9]+$ && $(readlink "/proc/$$/fd/$HTC_CLUSTER_LOCK_FD" 2>/dev/null) == "$CLUSTER_LOCK" ]] ||
			die "HTC_CLUSTER_LOCK_FD=$HTC_CLUSTER_LOCK_FD is not an open $CLUSTER_LOCK"
		flock -n "$HTC_CLUSTER_LOCK_FD" || die "the lock on fd $HTC_CLUSTER_LOCK_FD is held by someone else: $(cat "$CLUSTER_OWNER" 2>/dev/null)"
		return
	fi
	mkdir -p "$(dirname "$CLUSTER_LOCK")"
	exec 9>>"$CLUSTER_LOCK"
	if ! flock -n 9; then
		log "waiting for the cluster lock $CLUSTER_LOCK, held by: $(cat "$CLUSTER_OWNER" 2>/dev/null)"
		flock -w "${HTC_CLUSTER_LOCK_WAIT:-1800}" 9 ||
			die "the cluster lock $CLUSTER_LOCK is still held after ${HTC_CLUSTER_LOCK_WAIT:-1800} s by: $(cat "$CLUSTER_OWNER" 2>/dev/null)"
	fi
	echo "pid $$ ($_NAME) since $(date -u +%FT%TZ)" >"$CLUSTER_OWNER"
	export HTC_CLUSTER_LOCK_FD=9
}

# running PID NAME: PID is a live (non-zombie) NAME process of the cluster
# (its command line names NAME and the cluster's directory).
running() {
	local state cmdline
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ $state != Z ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"$2"* && $cmdline == *"$CLUSTER_DIR/"* ]]
}

# alive NAME: the process of CLUSTER_DIR/NAME.pid is running.
alive() {
	local pid
	[[ -s $CLUSTER_DIR/$1.pid ]] || return 1
	pid=$(<"$CLUSTER_DIR/$1.pid")
	[[ $pid =~ ^[0-9]+$ ]] && running "$pid" "$1"
}

CTR() { ctr -a "$CLUSTER_DIR/containerd.sock" -n k8s.io "$@"; }
