#!/usr/bin/env bash
# Stops the test cluster of hack/cluster-up.sh and removes everything it
# made, on a running cluster, on the leftovers of a crashed one, or on
# nothing (then it only checks):
#
#   hack/cluster-down.sh
#
#   processes     by the pids in /var/lib/htc-cluster/*.pid (when their
#                 command line names the cluster's directory), the
#                 containerd shims of its socket, what runs in its pods'
#                 cgroups
#   containers    every task and container of containerd's k8s.io namespace
#   mounts        every mount under /var/lib/htc-cluster (rootfs overlays,
#                 network namespaces, volumes), deepest first
#   iptables      the chains HTC-CLUSTER-* and kubelet's and kube-proxy's
#                 KUBE-* (kube-proxy --cleanup first), IPv4 and IPv6
#   network       the bridge htc0 (the pods' veths go with their network
#                 namespaces), the Service CIDR route, conntrack entries
#   cgroups       kubepods* in every hierarchy
#   files         /var/lib/htc-cluster, and what kubelet and containerd
#                 write at fixed paths (/var/lib/kubelet/device-plugins,
#                 /var/log/containers' links, /run/containerd/{s,fifo,runc},
#                 libcni's cache) when empty
#   sysctls       restored to what cluster-up.sh found
#
# Then it checks that nothing is left and fails, naming it, when something is.
# It takes the cluster lock like cluster-up.sh (or uses the caller's).
set -uo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM
_NAME=cluster-down.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster-lib.sh
source "$HERE/cluster-lib.sh"
D=$CLUSTER_DIR
[[ $(id -u) == 0 ]] || die "needs root"
take_lock

# stop NAME: TERM, up to 20 s, then KILL; only the process of D/NAME.pid.
stop() {
	local pid i
	[[ -s $D/$1.pid ]] || return 0
	pid=$(<"$D/$1.pid")
	if [[ $pid =~ ^[0-9]+$ ]] && running "$pid" "$1"; then
		kill -TERM "$pid" 2>/dev/null
		for ((i = 0; i < 200; i++)); do running "$pid" "$1" || break; sleep 0.1; done
		if running "$pid" "$1"; then
			log "$1 (pid $pid) ignored TERM for 20 s: KILL"
			kill -KILL "$pid" 2>/dev/null
			for ((i = 0; i < 50; i++)); do running "$pid" "$1" || break; sleep 0.1; done
		fi
	fi
	rm -f "$D/$1.pid"
}

# pids_of_shims: containerd shims serving this cluster's containerd.
pids_of_shims() {
	grep -lsaF "$D/containerd.sock" /proc/[0-9]*/cmdline | xargs -r grep -lsa containerd-shim | cut -d/ -f3
}

# pod_cgroups: the pods' cgroup directories, deepest first.
pod_cgroups() {
	local h
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		[[ -d ${h}kubepods ]] && find "${h}kubepods" -depth -type d
	done 2>/dev/null | sort -u -r
}

# Nothing may start pods again while they are torn down.
stop kube-controller-manager
stop kube-scheduler
stop kubelet
if alive containerd; then
	for c in $(CTR tasks ls -q 2>/dev/null); do
		CTR tasks kill -a -s SIGKILL "$c" >/dev/null 2>&1
	done
	for c in $(CTR containers ls -q 2>/dev/null); do
		CTR tasks delete -f "$c" >/dev/null 2>&1
		CTR containers delete "$c" >/dev/null 2>&1
	done
fi
if [[ -s $D/kube-proxy.pid ]]; then
	stop kube-proxy
	for a in "$HOME"/.cache/htc/k8s-*/kube-proxy; do
		[[ -x $a ]] && "$a" --cleanup >/dev/null 2>&1 && break
	done
fi
stop containerd
stop kube-apiserver
stop etcd
for p in $(pids_of_shims); do
	log "killing leftover shim $p"
	kill -KILL "$p" 2>/dev/null
done
# What still runs in the pods' cgroups (a container a dead shim left).
for cg in $(pod_cgroups); do
	for p in $(cat "$cg/cgroup.procs" 2>/dev/null); do
		log "killing leftover pod process $p ($(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline" | cut -c1-60))"
		kill -KILL "$p" 2>/dev/null
	done
done

# Mounts under D, deepest first (network namespaces, rootfs overlays, volumes).
if [[ -d $D ]]; then
	findmnt -rn -o TARGET | grep -F "$D/" | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || log "cannot unmount $m"
	done
fi

# iptables: ours, then kubelet's and kube-proxy's.
for ipt in iptables ip6tables; do
	command -v $ipt >/dev/null || continue
	for t in filter nat mangle raw; do
		chains=$($ipt -w 10 -t $t -S 2>/dev/null | awk '$1=="-N" && $2 ~ /^(KUBE-|HTC-CLUSTER-)/ {print $2}')
		[[ -n $chains ]] || continue
		# rules of other chains that jump to them
		$ipt -w 10 -t $t -S | awk '$1=="-A" && $2 !~ /^(KUBE-|HTC-CLUSTER-)/ && / -j (KUBE-|HTC-CLUSTER-)/' | sed 's/^-A/-D/' |
			while read -r rule; do eval "$ipt -w 10 -t $t $rule"; done
		for c in $chains; do $ipt -w 10 -t $t -F "$c" 2>/dev/null; done
		for c in $chains; do $ipt -w 10 -t $t -X "$c" 2>/dev/null; done
	done
done

ip route del "$SVC_CIDR" dev "$BRIDGE" 2>/dev/null
ip link del "$BRIDGE" 2>/dev/null
if command -v conntrack >/dev/null; then
	for r in "$POD_CIDR" "$SVC_CIDR"; do
		conntrack -D -s "$r" >/dev/null 2>&1
		conntrack -D -d "$r" >/dev/null 2>&1
	done
fi

for cg in $(pod_cgroups); do rmdir "$cg" 2>/dev/null; done

# Files at fixed paths outside D, removed only when nothing else is in them.
[[ -d /var/log/containers ]] && find /var/log/containers -maxdepth 1 -lname "$D/*" -delete 2>/dev/null
rmdir /var/log/containers 2>/dev/null
rm -f /var/lib/kubelet/device-plugins/kubelet.sock /var/lib/kubelet/device-plugins/DEPRECATION \
	/var/lib/cni/results/htc-* /var/lib/cni/results/cni-loopback-*
rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet /var/lib/cni/results /var/lib/cni \
	/run/containerd/s /run/containerd/fifo /run/containerd/runc/k8s.io /run/containerd/runc \
	/run/containerd/io.containerd.runtime.v2.task/k8s.io /run/containerd/io.containerd.runtime.v2.task \
	/run/containerd 2>/dev/null

if [[ -s $D/sysctl.saved ]]; then
	while IFS= read -r kv; do sysctl -qw "$kv" 2>/dev/null || log "cannot restore $kv"; done <"$D/sysctl.saved"
fi
rm -rf "$D" 2>/dev/null

# ---- nothing left?
left=()
mounts=$(findmnt -rn -o TARGET | grep -cF "$D/")
((mounts == 0)) || left+=("$mounts mounts under $D")
[[ ! -e $D ]] || left+=("$D")
[[ -z $(pids_of_shims) ]] || left+=("shims $(pids_of_shims | xargs)")
ip link show "$BRIDGE" >/dev/null 2>&1 && left+=("bridge $BRIDGE")
[[ -z $(pod_cgroups) ]] || left+=("cgroups $(pod_cgroups | head -3 | xargs)")
for ipt in iptables ip6tables; do
	command -v $ipt >/dev/null || continue
	for t in filter nat mangle raw; do
		n=$($ipt -w 10 -t $t -S 2>/dev/null | grep -cE '^-N (KUBE-|HTC-CLUSTER-)')
		((n == 0)) || left+=("$n $ipt $t chains")
	done
done
for p in $(grep -lsaF "$D/" /proc/[0-9]*/cmdline | cut -d/ -f3); do
	[[ $p != "$$" ]] && cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$p/cmdline") && left+=("process $p: ${cmdline:0:80}")
done
((${#left[@]} == 0)) || die "left behind: ${left[*]}"
log "done: nothing left"
