#!/usr/bin/env bash
# Runbook: take a cluster down, keeping its data for the next `swarmkit up` (or purging it).
#
#   scripts/runbooks/down.sh INVENTORY [--purge-data] [-- DOWN_OPTIONS...]
#
# Runs `swarmkit down -i INVENTORY --json` (the brokers first, then the rest of the stack; waits
# until no container of it is left on any node) and prints what was removed and what was kept.
# --purge-data also deletes every node's data and identity volumes, the broker ids and the cluster
# id (passed to swarmkit with --yes: naming it here is the confirmation). Exit codes: 0 done;
# 1 an engine did not answer or the stack was not deployed (nothing changed); 2 bad usage.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 1 ] && [ -f "$1" ] || { sed -n '2,11p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
inventory="$1"
shift
args=()
if [ "${1:-}" = "--purge-data" ]; then
    args+=(--purge-data --yes)
    shift
fi
[ "${1:-}" != "--" ] || shift

show_down=$(cat <<'PY'
print("removed services: " + (", ".join(doc["removed_services"]) or "none (nothing was deployed)"))
print(f"brokers stopped after {doc['brokers_gone_s']} s; no container of stack {doc['stack']} left after {doc['total_s']} s")
if doc["purged"]:
    for host, volumes in doc["volumes"].items():
        print(f"{host}: deleted volumes {', '.join(volumes) or '(none)'}")
    for node, labels in doc["labels"].items():
        print(f"{node}: removed labels {', '.join(labels)}")
    print("purged: the next `swarmkit up` starts an empty cluster")
else:
    print("kept: data and identity volumes, broker ids, cluster id: `swarmkit up` brings the same cluster back")
PY
)

step "swarmkit down -i $inventory ${args[*]:-} $*"
rc=0
json=$("$swarmkit" down -i "$inventory" --json "${args[@]}" "$@") || rc=$?
parse "$show_down" <<<"$json" || true
exit "$rc"
