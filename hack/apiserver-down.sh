#!/usr/bin/env bash
# Stops the kube-apiserver and etcd started by hack/apiserver-up.sh DIR: TERM, then
# KILL after 10 s, and waits until they are gone. Only processes named in DIR's pid
# files (and whose command line refers to DIR) are signalled. Safe to run twice.
# State under DIR (etcd data, certs, logs, kubeconfig) is kept; remove DIR to reset.
set -euo pipefail

die() { echo "apiserver-down.sh: $*" >&2; exit 1; }

[[ $# -eq 1 && -n "$1" ]] || die "usage: apiserver-down.sh DIR"
[[ -d "$1" ]] || exit 0
DIR=$(cd "$1" && pwd)

# running PID NAME: PID is a live (non-zombie) NAME process belonging to DIR.
running() {
	local state cmdline
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ "$state" != Z ]] || return 1
	cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ "$cmdline" == *"$2"* && "$cmdline" == *"$DIR/"* ]]
}

stop() { # stop NAME
	local pidfile="$DIR/$1.pid" pid i
	[[ -f "$pidfile" ]] || return 0
	pid=$(<"$pidfile")
	if [[ "$pid" =~ ^[0-9]+$ ]] && running "$pid" "$1"; then
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do
			running "$pid" "$1" || break
			sleep 0.1
		done
		if running "$pid" "$1"; then
			echo "apiserver-down.sh: $1 (pid $pid) ignored TERM for 10 s, sending KILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			for ((i = 0; i < 50; i++)); do
				running "$pid" "$1" || break
				sleep 0.1
			done
			! running "$pid" "$1" || die "$1 (pid $pid) still running after KILL"
		fi
		# The process is no longer our parent's child; wait (max 5 s) until whoever
		# inherited it has reaped the zombie, so pgrep no longer lists it.
		for ((i = 0; i < 50; i++)); do
			[[ -e "/proc/$pid" ]] || break
			sleep 0.1
		done
	fi
	rm -f "$pidfile"
}

# apiserver first, so it does not log etcd connection errors while stopping.
stop kube-apiserver
stop etcd
