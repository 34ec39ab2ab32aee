#!/usr/bin/env bash
# Builds, once, the Debian root filesystem the htc image is made of — Debian
# trixie (minbase) with HAProxy 3.0 LTS from Debian's own haproxy package and
# the system's CA certificates (ca-certificates: what "ca-file @system-ca"
# reads, e.g. a Gateway API BackendTLSPolicy's wellKnownCACertificates
# System), a non-root user 65532, no documentation, manuals or locales — and a haproxy
# that runs from it on this machine, so that tests check configurations with
# exactly the HAProxy the image carries.
#
#   DIR=$(hack/haproxy-rootfs.sh | tail -1)
#   "$DIR/bin/haproxy" -v          # HAProxy version 3.0.x
#
# The last line of stdout is the cache directory
# ${HTC_CACHE_DIR:-$HOME/.cache/htc}/rootfs/<key>, where <key> is a hash of this
# script (the recipe) and the architecture. It holds:
#
#   rootfs.tar       the root filesystem (the image's base layer; no /dev nodes)
#   root/            the same, unpacked
#   bin/haproxy      runs root/usr/sbin/haproxy through root's own dynamic
#                    loader and libraries (see below)
#   packages.txt     "name version" of every installed package
#   haproxy.version  the haproxy package version, e.g. 3.0.11-1+deb13u5
#
# When the directory is complete the script only prints it. A cold build takes
# 30 s to 2 min (mmdebstrap from the package mirror, as root; mmdebstrap is
# installed with apt-get when missing). Exit status 3 means the package mirror
# could not be reached, 4 that this machine cannot build it (not root, not
# Debian): the script says so loudly, callers may fall back or skip.
#
# Why a loader wrapper and not chroot or patchelf: tests must run the image's
# haproxy on files anywhere on this machine, so no chroot. bin/haproxy execs
# root's ld-linux with --library-path root's libraries, and --argv0 set to
# bin/haproxy's own absolute path. That last part matters: in master-worker
# mode (haproxy -W) the master re-executes argv[0] after starting and on
# every reload (execvp). A patchelf'ed copy works as long as it is started by
# an absolute path, but started as plain "haproxy" its master re-executes
# whatever "haproxy" PATH finds first — measured here: the host's
# /usr/sbin/haproxy 2.6 took over silently. Through the wrapper the master
# always re-executes the wrapper, i.e. the same 3.0 binary (checked by
# TestIntegrationReloadKeepsTheBinary in pkg/haproxy/master, which fails with
# the patchelf'ed copy).
set -euo pipefail
# An interrupted check must stop the script, not look like a missing cache and start a build.
trap 'exit 130' INT
trap 'exit 143' TERM

SUITE=trixie
# HAProxy 3.0 LTS: Debian trixie's haproxy package. The checker in the image,
# the HAProxy the chart publishes to (the same image) and the tests' checker
# all run this one binary.
HAPROXY_PACKAGE='haproxy=3.0.*'
HTC_UID=65532

die() { echo "haproxy-rootfs.sh: $*" >&2; exit 1; }
cannot() { echo "haproxy-rootfs.sh: CANNOT BUILD THE IMAGE'S ROOT FILESYSTEM HERE: $*" >&2; exit 4; }

arch=$(dpkg --print-architecture 2>/dev/null) || cannot "dpkg not found: this script needs a Debian-based machine"
case "$arch" in
amd64) triplet=x86_64-linux-gnu loader=lib64/ld-linux-x86-64.so.2 ;;
arm64) triplet=aarch64-linux-gnu loader=lib/ld-linux-aarch64.so.1 ;;
*) cannot "unsupported architecture $arch (amd64 and arm64 are known)" ;;
esac

self="${BASH_SOURCE[0]}"
# Comments are not part of the recipe: editing them rebuilds nothing.
key=$({ grep -v '^[[:space:]]*#' "$self"; echo "$arch"; } | sha256sum | cut -c1-16)
CACHE=${HTC_CACHE_DIR:-$HOME/.cache/htc}
DIR="$CACHE/rootfs/$key"

rootfs_ok() {
	[[ -f "$DIR/.complete" && -x "$DIR/bin/haproxy" ]] || return 1
	local out
	out=$("$DIR/bin/haproxy" -v 2>/dev/null) || return 1
	[[ "$out" == "HAProxy version 3.0."* ]]
}

if rootfs_ok; then
	echo "$DIR"
	exit 0
fi

mkdir -p "$CACHE/rootfs" || die "cannot create $CACHE/rootfs"
exec 9>"$CACHE/rootfs/.lock"
flock 9 || die "cannot lock $CACHE/rootfs/.lock"
if rootfs_ok; then
	echo "$DIR"
	exit 0
fi

[[ $(id -u) == 0 ]] || cannot "it needs root (mmdebstrap in root mode); run once as root to fill the cache"
if ! command -v mmdebstrap >/dev/null; then
	echo "haproxy-rootfs.sh: installing mmdebstrap with apt-get" >&2
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap; } >&2 ||
		die "apt-get install mmdebstrap failed"
fi

WORK="$CACHE/rootfs/.build.$$"
rm -rf "$WORK"
mkdir -p "$WORK/bin"
trap 'rm -rf "$WORK"' EXIT

echo "haproxy-rootfs.sh: building the Debian $SUITE root filesystem with $HAPROXY_PACKAGE into $DIR (30 s to 2 min)" >&2

# Debian's slim images exclude the same paths (docs but their copyright
# files, manuals, info pages, locales); the dpkg options stay in the root
# filesystem (/etc/dpkg/dpkg.cfg.d/99mmdebstrap), so packages installed later
# follow them too. The user: /etc/passwd lines rather than useradd, so the
# entry is the same whatever the passwd package does.
if ! mmdebstrap --variant=minbase --mode=root --format=tar --skip=output/dev \
	--include="$HAPROXY_PACKAGE,ca-certificates" \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/groff/*' \
	--dpkgopt='path-exclude=/usr/share/lintian/*' \
	--dpkgopt='path-exclude=/usr/share/linda/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--customize-hook="echo 'htc:x:$HTC_UID:$HTC_UID:htc:/nonexistent:/usr/sbin/nologin' >>\"\$1/etc/passwd\"" \
	--customize-hook="echo 'htc:x:$HTC_UID:' >>\"\$1/etc/group\"" \
	--customize-hook="chroot \"\$1\" dpkg-query -W -f '\${Package} \${Version}\n' >'$WORK/packages.txt'" \
	--customize-hook='rm -rf "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1"/var/log/*' \
	"$SUITE" "$WORK/rootfs.tar" >"$WORK/mmdebstrap.log" 2>&1; then
	if grep -qE 'Could not resolve|Temporary failure resolving|Failed to fetch|Unable to connect|Could not connect|Connection failed|Network is unreachable|No route to host|Connection timed out' "$WORK/mmdebstrap.log"; then
		cat >&2 <<EOF
haproxy-rootfs.sh: ################################################################
haproxy-rootfs.sh: ##  THE PACKAGE MIRROR IS UNREACHABLE: cannot build the Debian
haproxy-rootfs.sh: ##  $SUITE root filesystem with HAProxy 3.0 (mmdebstrap failed).
haproxy-rootfs.sh: ##  No image, and no HAProxy 3.0 for the tests, on this machine.
haproxy-rootfs.sh: ################################################################
EOF
		grep -E 'Could not resolve|Temporary failure|Failed to fetch|Unable to connect|Could not connect|Connection|unreachable|No route' "$WORK/mmdebstrap.log" | head -5 >&2
		exit 3
	fi
	tail -20 "$WORK/mmdebstrap.log" >&2
	die "mmdebstrap failed (log above)"
fi

mkdir "$WORK/root"
tar -C "$WORK/root" -xf "$WORK/rootfs.tar" || die "cannot unpack $WORK/rootfs.tar"
sed -n 's/^haproxy //p' "$WORK/packages.txt" >"$WORK/haproxy.version"
[[ -s "$WORK/haproxy.version" ]] || die "haproxy is not in the built root filesystem"

# The wrapper names its final location: it is moved there below.
root="$DIR/root"
cat >"$WORK/bin/haproxy" <<EOF
#!/bin/sh
# HAProxy $(cat "$WORK/haproxy.version") from the htc image's root filesystem,
# run through that root filesystem's own loader and libraries.
# Written by hack/haproxy-rootfs.sh; --argv0 makes a master-worker master re-execute this file.
exec '$root/$loader' --argv0 '$DIR/bin/haproxy' --library-path '$root/usr/lib/$triplet:$root/lib/$triplet' '$root/usr/sbin/haproxy' "\$@"
EOF
chmod 0755 "$WORK/bin/haproxy"
touch "$WORK/.complete"
rm -f "$WORK/mmdebstrap.log"

rm -rf "$DIR"
mv "$WORK" "$DIR"
trap - EXIT
rootfs_ok || die "the haproxy built into $DIR does not run ($DIR/bin/haproxy -v)"
echo "haproxy-rootfs.sh: $(sed -n 1p <("$DIR/bin/haproxy" -v)) ($(du -sh "$DIR/root" | cut -f1) root filesystem)" >&2
echo "$DIR"
