#!/usr/bin/env bash
# The offline demo: render the example Ingress library over a small cluster
# state, run its embedded tests, and show the admission decision for a good
# and a bad Ingress — no cluster needed.
set -euo pipefail
HTC=${1:-bin/htc}
EX=examples/ingress
say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }

say htc validate -f $EX/config.yaml
"$HTC" validate -f $EX/config.yaml

say "htc render -f $EX/config.yaml --state $EX/state | sed -n 1,40p"
"$HTC" render -f $EX/config.yaml --state $EX/state | sed -n 1,40p

say htc check -f $EX/config.yaml --state $EX/state --object $EX/good-ingress.yaml
"$HTC" check -f $EX/config.yaml --state $EX/state --object $EX/good-ingress.yaml

say htc check -f $EX/config.yaml --state $EX/state --object $EX/bad-ingress.yaml
set +e
"$HTC" check -f $EX/config.yaml --state $EX/state --object $EX/bad-ingress.yaml
code=$?
set -e
echo "(exit code $code: the webhook would deny this Ingress with the reason above)"
[ "$code" -eq 1 ]
