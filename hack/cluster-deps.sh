#!/usr/bin/env bash
# Installs, with apt-get and only when missing, the Debian packages the test
# cluster of hack/cluster-up.sh runs on, and checks what else it needs:
#
#   containerd  runc  containernetworking-plugins  iptables  conntrack
#   umoci (the images)  gcc, libc6-dev (the pause image)  openssl  curl
#
# Idempotent: when everything is there it only checks (well under a second).
# It fails with one line naming what is missing when this machine cannot run
# the cluster: not root, no apt-get, not Linux with cgroups, a package that
# does not install. It never skips.
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM

die() { echo "cluster-deps.sh: THE TEST CLUSTER CANNOT RUN ON THIS MACHINE: $*" >&2; exit 1; }

[[ $(uname -s) == Linux ]] || die "it needs Linux (this is $(uname -s))"
[[ $(id -u) == 0 ]] || die "it needs root (kubelet, containerd, network namespaces, iptables); run make test as root"
[[ -d /sys/fs/cgroup ]] || die "no /sys/fs/cgroup"
command -v go >/dev/null || die "go not found in PATH"

# package -> a file it installs that the cluster uses
declare -A FILES=(
	[containerd]=/usr/bin/containerd
	[runc]=/usr/sbin/runc
	[containernetworking-plugins]=/usr/lib/cni/bridge
	[iptables]=/usr/sbin/iptables
	[conntrack]=/usr/sbin/conntrack
	[umoci]=/usr/bin/umoci
	[gcc]=/usr/bin/gcc
	[libc6-dev]=/usr/lib/x86_64-linux-gnu/libc.a
	[openssl]=/usr/bin/openssl
	[curl]=/usr/bin/curl
)
arch=$(dpkg --print-architecture 2>/dev/null || true)
[[ $arch == arm64 ]] && FILES[libc6-dev]=/usr/lib/aarch64-linux-gnu/libc.a

missing=()
for p in "${!FILES[@]}"; do
	[[ -e ${FILES[$p]} ]] || missing+=("$p")
done
if ((${#missing[@]})); then
	command -v apt-get >/dev/null || die "apt-get not found; install ${missing[*]} by hand"
	echo "cluster-deps.sh: installing ${missing[*]} with apt-get" >&2
	# One apt at a time (other test scripts install too; apt-get itself
	# waits up to 5 min for dpkg's lock).
	exec 8>/var/lock/htc-apt.lock
	flock -w 600 8 || die "another apt-get of the tests held /var/lock/htc-apt.lock for 10 min"
	{
		apt-get -o DPkg::Lock::Timeout=300 update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}"
	} >&2 || die "apt-get install ${missing[*]} failed (see above)"
	for p in "${missing[@]}"; do
		[[ -e ${FILES[$p]} ]] || die "package $p is installed but ${FILES[$p]} is missing"
	done
fi
echo "cluster-deps.sh: ok" >&2
