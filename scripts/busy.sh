#!/usr/bin/env bash
# A busy machine on purpose: keeps N cores fully busy (default 1) while COMMAND runs, then stops them;
# without a command, until interrupted.  Users' laptops, CI runners and servers are busy machines: the
# main job's end-to-end test and benchmarks/busy_machine.py run under it.
#   bash scripts/busy.sh [--cores N] [COMMAND [ARG...]]
set -euo pipefail
cores=1
if [ "${1:-}" = --cores ]; then
    cores="${2:?--cores needs a number}"
    shift 2
fi
case "$cores" in '' | *[!0-9]*) echo "busy.sh: --cores takes a whole number, not '$cores'" >&2; exit 2 ;; esac
burners=()
stop() { ((${#burners[@]})) && kill "${burners[@]}" 2>/dev/null; wait "${burners[@]}" 2>/dev/null || true; }
trap stop EXIT
trap 'exit 130' INT TERM
for _ in $(seq 1 "$cores"); do
    (while :; do :; done) &
    burners+=($!)
done
echo "busy.sh: $cores busy core(s), pids ${burners[*]}" >&2
if (($#)); then
    "$@"
else
    wait
fi
