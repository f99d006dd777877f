#!/usr/bin/env bash
# Runbook: retire one server from the cluster, then check every broker that stays.
#
#   scripts/runbooks/remove-node.sh INVENTORY NAME [-- REMOVE_NODE_OPTIONS...]
#
# `swarmkit remove-node` refuses (exit 2, nothing changed) a manager, or a server whose
# partitions would not keep their replicas on the others; otherwise it moves the server's
# replicas to the least loaded brokers, drains it (a controlled shutdown of its broker),
# unregisters the broker and takes the node out of the swarm. Then `swarmkit verify` checks the
# brokers that stay, with INVENTORY minus NAME (a copy beside it, removed afterwards: take NAME
# out of INVENTORY yourself; this script never edits it).
# Exit codes: 0 retired and every remaining broker verified; otherwise the failing command's
# (1 a failed operation or check, 2 bad usage or input).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 2 ] && [ -f "$1" ] || { sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
inventory="$1" name="$2"
shift 2
[ "${1:-}" != "--" ] || shift

show_retired=$(cat <<'PY'
moved = doc["moved_partitions"]
gone = "left the swarm" if doc["left_swarm"] else "removed from the swarm (its engine did not answer)"
print(f"broker {doc['broker_id']} on {doc['host']}: {len(moved)} partition(s) moved ({', '.join(moved) or 'none'}),"
      f" unregistered, {gone}, in {doc['total_s']} s")
PY
)
without_host=$(cat <<'PY'
import sys, yaml
document = yaml.safe_load(open(sys.argv[1]))
document["hosts"] = [host for host in document["hosts"] if host["name"] != sys.argv[2]]
yaml.safe_dump(document, open(sys.argv[3], "w"), sort_keys=False)
PY
)

step "swarmkit remove-node $name -i $inventory $*"
rc=0
json=$("$swarmkit" remove-node "$name" -i "$inventory" --json "$@") || rc=$?
parse "$show_retired" <<<"$json" || { ((rc != 0)) || rc=1; }
((rc == 0)) || exit "$rc"

# beside INVENTORY, so that its relative paths (TLS files) still hold
staying="$(dirname "$inventory")/.$(basename "$inventory" .yaml)-without-$name.yaml"
trap 'rm -f "$staying"' EXIT
"$python" -c "$without_host" "$inventory" "$name" "$staying"
step "swarmkit verify (the inventory without $name)"
"$swarmkit" verify -i "$staying" || exit $?
echo "remove $name from $inventory now; its data volume stays on that server until you delete it"
