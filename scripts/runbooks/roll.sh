#!/usr/bin/env bash
# Runbook: restart, upgrade or reconfigure every broker, one at a time, without losing a write.
#
#   scripts/runbooks/roll.sh INVENTORY [-- ROLL_OPTIONS...]
#   e.g. scripts/runbooks/roll.sh servers.yaml -- --image apache/kafka:4.4.1
#        scripts/runbooks/roll.sh servers.yaml -- --set log.retention.hours=48
#
# Checks the cluster first (status.sh: a roll needs every broker serving and every partition in
# sync), runs `swarmkit roll --json`, prints each broker's old and new container and how long it
# took to be back and in sync, then checks the cluster again. Exit codes: 0 rolled and healthy;
# 1 not healthy before or after, or the roll stopped at a broker that did not come back (the ones
# not rolled keep serving); 2 bad usage or input (nothing changed).
set -euo pipefail
here="$(dirname "${BASH_SOURCE[0]}")"
. "$here/lib.sh"

[ $# -ge 1 ] && [ -f "$1" ] || { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
inventory="$1"
shift
[ "${1:-}" != "--" ] || shift

show_roll=$(cat <<'PY'
for b in doc["brokers"]:
    state = "back, registered, in sync" if b["ok"] else f"DID NOT COME BACK: {b['detail']}"
    print(f"broker {b['broker_id']} on {b['node']:<10} {b['old_container']} -> {b['new_container'] or '-':<12} {b['seconds']:6.1f} s  {state}")
for node in doc["not_rolled"]:
    print(f"not rolled: {node} (still serving)")
change = ([f"image {doc['image']}"] if doc["image"] else []) + [f"{k}={v}" for k, v in doc["env"].items()]
print("spec change: " + (", ".join(change) if change else "none (restart)"))
print(f"rolled in {doc['total_s']} s" if doc["ok"] else f"ROLL STOPPED: {doc['hint']}")
PY
)

"$here/status.sh" "$inventory" >/dev/null || { echo "the cluster is not healthy: not rolling (run $here/status.sh $inventory)" >&2; exit 1; }
step "swarmkit roll -i $inventory $*"
rc=0
json=$("$swarmkit" roll -i "$inventory" --json "$@") || rc=$?
parse "$show_roll" <<<"$json" || true
((rc == 0)) || exit "$rc"
"$here/status.sh" "$inventory"
