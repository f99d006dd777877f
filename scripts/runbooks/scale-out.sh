#!/usr/bin/env bash
# Runbook: scale a swarmkit Kafka cluster out by one server, then check every broker.
#
#   scripts/runbooks/scale-out.sh INVENTORY [--add-node] [--sandbox NAME] [--spark] [-- UP_OPTIONS...]
#
# Real servers: add the new server to INVENTORY, then run this. `swarmkit up` joins it to the
# swarm, gives it a broker id and deploys (no other broker restarts); `swarmkit verify` checks
# every broker from this machine and says what changed since the last verified run.
# Sandbox: --add-node first runs `swarmkit sandbox add-node`, which adds a host and rewrites the
# sandbox's own inventory (so INVENTORY must be that file).
#
#   --add-node       sandbox only: add one host before `swarmkit up`
#   --sandbox NAME   sandbox name (default: $SWARMKIT_SANDBOX, else sk)
#   --spark          also run the PySpark job through every broker (`verify --spark`)
#   -- UP_OPTIONS    passed to `swarmkit up` as they are: repeat the options of the first deploy
#                    (e.g. -- --topics orders:6:3), or the stack changes
#   env SWARMKIT, PYTHON: as in lib.sh
#
# Exit codes: 0 every broker verified; 1 a failed check (preflight, deploy or verify);
# 2 bad usage or input. A failing swarmkit command's own exit code is passed on.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
sandbox_name="${SWARMKIT_SANDBOX:-sk}"
add_node=false
inventory=""
verify_args=()
up_args=()

usage() {
    sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}
while (($#)); do
    case "$1" in
        --add-node) add_node=true ;;
        --sandbox) (($# >= 2)) || usage; sandbox_name="$2"; shift ;;
        --spark) verify_args+=(--spark) ;;
        -h | --help) usage ;;
        --) shift; up_args=("$@"); break ;;
        -*) echo "unknown option: $1" >&2; usage ;;
        *) [ -z "$inventory" ] || usage; inventory="$1" ;;
    esac
    shift
done
[ -n "$inventory" ] || usage
[ -f "$inventory" ] || { echo "no such inventory: $inventory" >&2; exit 2; }

check_sandbox=$(cat <<'PY'
import os
if not doc["exists"]:
    sys.exit(f"no sandbox '{doc['name']}': build one with `swarmkit sandbox up --name {doc['name']}`")
if os.path.realpath(doc["inventory_path"]) != os.path.realpath(sys.argv[1]):
    sys.exit(f"sandbox '{doc['name']}' writes {doc['inventory_path']}, not {sys.argv[1]}: nothing was changed")
print(" ".join(host["name"] for host in doc["hosts"]))
PY
)

show_added=$(cat <<'PY'
before = set(sys.argv[1].split())
for host in doc["hosts"]:
    if host["name"] not in before:
        print(f"added {host['name']} at {host['address']} (Docker {host['engine_version']}), not in the swarm yet")
PY
)

show_preflight_failures=$(cat <<'PY'
for f in doc.get("failures", []):
    what = (f"{f['from']} cannot reach {f['to']} on {f['port']}/{f['protocol']} ({f['detail']})"
            if f["check"] == "reachable" else f"{f['to']}: {f['detail']}")
    print(f"preflight failed: {what}; fix: {f['fix']}")
PY
)

show_up=$(cat <<'PY'
swarm = doc["swarm"]
for action in swarm["actions"]:
    if action["action"] != "member":
        print(f"swarm: {action['host']}: {action['action']} ({action['role']})")
if not swarm["changed"]:
    print("swarm: unchanged, every host was already a member")
for node in doc["nodes"]:
    kind = "new id" if node["new_id"] else "kept id"
    print(f"broker id {node['broker_id']:>4} on {node['host']:<10} {kind:<8} identity {node['identity']:<9}"
          f" advertises {node['advertised'] or '-'}")
for topic in doc["topics"]:
    print(f"topic {topic['name']} on {topic['bootstrap']}: {topic['status']} {topic['detail']}".rstrip())
print(f"deployed in {doc['deploy_s']} s; every broker serving {doc['converge_s']} s later")
PY
)

show_verify=$(cat <<'PY'
yes = lambda flag: "yes" if flag else "NO"
for change in doc["changes"] or ["none since the last verified run"]:
    print(f"change: {change}")
print(f"{'node':<10} {'advertised':<24} {'resolves':<8} {'reachable':<9} {'metadata':<8} {'task':<8} status")
for b in doc["brokers"]:
    status = "ok" if b["ok"] else f"FAILED: {b['detail']} -- fix: {b['fix']}"
    print(f"{b['node']:<10} {b['advertised'] or '-':<24} {yes(b['resolves']):<8} {yes(b['reachable']):<9}"
          f" {yes(b['metadata_ok']):<8} {b['task'] or '-':<8} {status}")
for topic in doc["topics"]:
    if not topic["ok"]:
        print(f"topic {topic['topic']} on {topic['broker']}: {topic['detail']}")
for row in (doc.get("spark") or {}).get("brokers", []):
    print(f"spark {row['broker']}: produced {row['produced']}, consumed {row['consumed']},"
          f" checksum {'ok' if row['checksum_ok'] else 'BAD'}, p99 {row['latency_p99_ms']} ms")
if doc.get("spark_error"):
    print(f"spark: {doc['spark_error']}")
print(f"{len(doc['brokers'])} brokers: " + ("all verified" if doc["ok"] else "VERIFICATION FAILED"))
PY
)

# --- 1. (sandbox) one more host ---------------------------------------------------------------------
if $add_node; then
    step "sandbox '$sandbox_name': add a host"
    before=$("$swarmkit" sandbox status --name "$sandbox_name" --json |
        parse "$check_sandbox" "$inventory") || exit 2
    "$swarmkit" sandbox add-node --name "$sandbox_name" --json | parse "$show_added" "$before"
fi

# --- 2. swarmkit up: preflight, join, broker ids, deploy, topics ----------------------------------
step "swarmkit up -i $inventory ${up_args[*]:-}"
up_rc=0
up_json=$("$swarmkit" up -i "$inventory" --json "${up_args[@]}") || up_rc=$?
if ((up_rc != 0)); then
    parse "$show_preflight_failures" <<<"$up_json" 2>/dev/null || true
    echo "swarmkit up failed (exit $up_rc): nothing verified" >&2
    exit "$up_rc"
fi
parse "$show_up" <<<"$up_json"

# --- 3. swarmkit verify: every broker from this machine ------------------------------------------
step "swarmkit verify -i $inventory ${verify_args[*]:-}"
verify_rc=0
verify_json=$("$swarmkit" verify -i "$inventory" --json "${verify_args[@]}") || verify_rc=$?
parse "$show_verify" <<<"$verify_json" || true
if ((verify_rc != 0)); then
    echo "swarmkit verify failed (exit $verify_rc)" >&2
    exit "$verify_rc"
fi
