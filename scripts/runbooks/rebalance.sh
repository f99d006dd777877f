#!/usr/bin/env bash
# Runbook: after a scale-out, give every broker its share of replicas and leaders, then check.
#
#   scripts/runbooks/rebalance.sh INVENTORY [-- REBALANCE_OPTIONS...]   (e.g. -- --topics orders --throttle 50)
#
# `swarmkit rebalance` moves replicas (Kafka's reassignment tool) so that per topic every broker
# holds and leads within one partition of even, waits until the moves are in sync, and elects the
# preferred leaders; then `swarmkit verify` shows replicas and leaders per broker.
# Exit codes: 0 balanced and verified; otherwise the failing command's (1 a failed operation or
# check, 2 bad usage or input).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 1 ] && [ -f "$1" ] || { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
inventory="$1"
shift
[ "${1:-}" != "--" ] || shift

show_balance=$(cat <<'PY'
moved = doc["moved_partitions"]
print(f"{len(moved)} partition(s) moved ({', '.join(moved) or 'none: already balanced'}) in {doc['total_s']} s")
for broker, replicas in sorted(doc["replicas_per_broker"].items(), key=lambda item: int(item[0])):
    print(f"broker {broker}: {replicas} replicas, leads {doc['leaders_per_broker'].get(broker, 0)}")
for refused in doc["election_refused"]:
    print(f"preferred leader not elected: {refused}")
sys.exit(0 if doc["ok"] else 1)
PY
)

step "swarmkit rebalance -i $inventory $*"
rc=0
json=$("$swarmkit" rebalance -i "$inventory" --json "$@") || rc=$?
parse "$show_balance" <<<"$json" || { ((rc != 0)) || rc=1; }
((rc == 0)) || exit "$rc"
step "swarmkit verify -i $inventory"
"$swarmkit" verify -i "$inventory"
