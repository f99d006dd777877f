#!/usr/bin/env bash
# Runbook: is the cluster healthy right now? Reads only.
#
#   scripts/runbooks/status.sh INVENTORY [-- STATUS_OPTIONS...]
#
# Runs `swarmkit status -i INVENTORY --json` and prints one line per node, broker, controller and
# topic. Exit codes: 0 every broker runs and is registered, the quorum has a leader and no
# partition is under-replicated or offline; 1 something is not; 2 bad usage; another code:
# status itself could not read the cluster (its own exit code).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ $# -ge 1 ] && [ -f "$1" ] || { sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
inventory="$1"
shift
[ "${1:-}" != "--" ] || shift

show_status=$(cat <<'PY'
bad = []
for n in doc["nodes"]:
    print(f"node {n['host'] or n['hostname']:<10} {n['role'] or '-':<8} {n['state']:<8} {n['availability'] or '-':<7} {n['address'] or '-'}")
for b in doc["brokers"]:
    print(f"broker {b['broker_id']} on {b['node']:<10} {b['advertised'] or '-':<20} registered {'yes' if b['registered'] else 'NO'}"
          f"  task {b['task']:<8} since {b['since'] or '-'}  {b['image']}")
    if not b["registered"] or b["task"] != "running":
        bad.append(f"broker {b['broker_id']} on {b['node']}")
quorum = doc["quorum"]
if quorum is not None:
    voters = {v["node_id"]: v for v in quorum["voters"]}
    for node_id, host in doc["controllers"]:
        v = voters.get(node_id)
        print(f"controller {node_id} on {host:<10} {v['status'] if v else 'NOT A VOTER'}" + (f" lag {v['lag']}" if v else ""))
    if quorum["leader"] < 0:
        bad.append("the controller quorum (no leader)")
for t in doc["topics"]:
    print(f"topic {t['topic']:<20} {t['partitions']:>3} partitions x {t['replication_factor']}:"
          f" under-replicated {t['under_replicated']}, offline {t['offline']}")
    if t["under_replicated"] or t["offline"]:
        bad.append(f"topic {t['topic']}")
if doc["kafka_error"]:
    bad.append(f"the brokers ({doc['kafka_error']})")
print("HEALTHY" if not bad else "NOT HEALTHY: " + "; ".join(bad))
sys.exit(1 if bad else 0)
PY
)

step "swarmkit status -i $inventory $*"
rc=0
json=$("$swarmkit" status -i "$inventory" --json "$@") || rc=$?
parse "$show_status" <<<"$json" || { ((rc != 0)) || rc=1; }
exit "$rc"
