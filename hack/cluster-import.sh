#!/usr/bin/env bash
# Imports an OCI image archive into the test cluster's containerd (the k8s.io
# namespace, where the kubelet finds images) under a name pods can use:
#
#   hack/cluster-import.sh ARCHIVE NAME[:TAG]
#   hack/cluster-import.sh bin/htc-image.oci.tar haproxy-template/htc:dev
#
# NAME is normalized as the kubelet does (haproxy-template/htc ->
# docker.io/haproxy-template/htc, busybox -> docker.io/library/busybox; TAG
# defaults to latest), so a pod's image: haproxy-template/htc:dev with
# imagePullPolicy Never or IfNotPresent runs it. The archive must hold one
# image (hack/image.sh's and hack/oci-image.sh's do). Importing an archive
# again under the same name replaces the image. The cluster must be up
# (hack/cluster-up.sh); the caller holds the cluster lock or the script takes
# it. The last line of stdout is the normalized name.
set -euo pipefail
trap 'exit 130' INT
trap 'exit 143' TERM
_NAME=cluster-import.sh
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=hack/cluster-lib.sh
source "$HERE/cluster-lib.sh"

[[ $# == 2 ]] || die "usage: hack/cluster-import.sh ARCHIVE NAME[:TAG]"
ARCHIVE=$1 NAME=$2
[[ -f $ARCHIVE ]] || die "$ARCHIVE: no such file"
take_lock
alive containerd || die "the test cluster is not up (hack/cluster-up.sh)"

# Normalize like the kubelet (docker's reference rules).
ref=$NAME
[[ ${ref##*/} == *:* || $ref == *@* ]] || ref=$ref:latest
first=${ref%%/*}
if [[ $ref != */* ]]; then
	ref=docker.io/library/$ref
elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then
	ref=docker.io/$ref
fi

tmp=localhost/htc-import/tmp$$
out=$(CTR images import --base-name "$tmp" "$ARCHIVE" 2>&1) || die "ctr images import $ARCHIVE failed: $out"
mapfile -t imported < <(CTR images ls -q | grep -F "$tmp:" || true)
[[ ${#imported[@]} == 1 ]] || {
	for i in "${imported[@]}"; do CTR images rm "$i" >/dev/null 2>&1 || true; done
	die "$ARCHIVE holds ${#imported[@]} images, not one"
}
CTR images tag --force "${imported[0]}" "$ref" >/dev/null
CTR images rm "${imported[0]}" >/dev/null
echo "$ref"
