#!/usr/bin/env bash
# free-ports.sh N: prints N distinct free loopback ports on one line.
#
# They come from [10000, 20000): below the kernel's ephemeral range, so that
# no outgoing connection (etcd's and the apiserver's own while they start,
# say) and no port-0 listener takes one before the process it is for binds
# it; and below [20000, ephemeral) that the Go tests' FreeAddr reserves from
# (internal/testutil/ports.go), so the two never meet. All N are bound at
# once while they are picked, so they are distinct.
set -euo pipefail
[[ $# -eq 1 && "$1" =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 N" >&2; exit 2; }
exec python3 -c '
import random, socket, sys
n, ss = int(sys.argv[1]), []
for _ in range(1000):
    if len(ss) == n:
        break
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(10000, 20000)))
        ss.append(s)
    except OSError:
        s.close()
if len(ss) < n:
    raise SystemExit("free-ports.sh: no %d free ports in [10000, 20000)" % n)
print(*[s.getsockname()[1] for s in ss])
' "$1"
