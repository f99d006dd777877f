#!/usr/bin/env bash
# Runbook: retire one server from a swarmkit Kafka cluster, then check every broker that stays.
#
#   scripts/runbook-remove-node.sh INVENTORY NAME [-- REMOVE_NODE_OPTIONS...]
#
# `swarmkit remove-node` refuses (exit 2, nothing changed) a manager, or a server whose
# partitions would not keep their replicas on the others; otherwise it moves the server's
# replicas to the least loaded brokers, drains it (a controlled shutdown of its broker),
# unregisters the broker and takes the node out of the swarm. Then `swarmkit verify` checks the
# brokers that stay, with INVENTORY minus NAME (a temporary copy: remove NAME from INVENTORY
# yourself afterwards; this script never edits it).
#   env SWARMKIT, PYTHON: the swarmkit command and the python that parses its JSON
#                    (default: this checkout's .venv/bin/swarmkit and .venv/bin/python)
#
# Exit codes: 0 retired and every remaining broker verified; otherwise the failing command's
# (1 a failed operation or check, 2 bad usage or input).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
swarmkit="${SWARMKIT:-$root/.venv/bin/swarmkit}"
python="${PYTHON:-$root/.venv/bin/python}"

usage() {
    sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
(($# >= 2)) || usage
inventory="$1" name="$2"
shift 2
extra=()
if (($#)); then
    [ "$1" = "--" ] || usage
    shift
    extra=("$@")
fi
[ -f "$inventory" ] || { echo "no such inventory: $inventory" >&2; exit 2; }

printf '== swarmkit remove-node %s -i %s %s\n' "$name" "$inventory" "${extra[*]:-}"
show_result=$(cat <<'PY'
import json, sys
doc = json.loads(sys.stdin.read() or '{"ok": false, "error": "no JSON on stdout: see the error above"}')
if not doc["ok"]:
    sys.exit(f"remove-node failed (exit {sys.argv[1]}): {doc['error']}" + (f" ({doc['hint']})" if doc.get("hint") else ""))
moved = doc["moved_partitions"]
print(f"broker {doc['broker_id']} on {doc['host']}: {len(moved)} partition(s) moved ({', '.join(moved) or 'none'}),"
      f" unregistered, {'left the swarm' if doc['left_swarm'] else 'removed from the swarm (its engine did not answer)'},"
      f" in {doc['total_s']} s")
PY
)
without_host=$(cat <<'PY'
import sys, yaml
document = yaml.safe_load(open(sys.argv[1]))
document["hosts"] = [host for host in document["hosts"] if host["name"] != sys.argv[2]]
yaml.safe_dump(document, open(sys.argv[3], "w"), sort_keys=False)
PY
)

rc=0
result=$("$swarmkit" remove-node "$name" -i "$inventory" --json "${extra[@]}") || rc=$?
"$python" -c "$show_result" "$rc" <<<"$result" || true
((rc == 0)) || exit "$rc"

# beside INVENTORY, so that its relative paths (TLS files) still hold
staying="$(dirname "$inventory")/.$(basename "$inventory" .yaml)-without-$name.yaml"
trap 'rm -f "$staying"' EXIT
"$python" -c "$without_host" "$inventory" "$name" "$staying"
printf '\n== swarmkit verify (the inventory without %s)\n' "$name"
rc=0
"$swarmkit" verify -i "$staying" || rc=$?
((rc == 0)) && echo "remove $name from $inventory now; its data volume stays on that server until you delete it"
exit "$rc"
