# Shared by the runbooks in this directory (sourced, not run): the commands they call, and the
# parsing of swarmkit's JSON with the venv's python (no jq needed).
#   env SWARMKIT, PYTHON: the swarmkit command and the python that parses its JSON
#   (default: this checkout's .venv/bin/swarmkit and .venv/bin/python)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
swarmkit="${SWARMKIT:-$root/.venv/bin/swarmkit}"
python="${PYTHON:-$root/.venv/bin/python}"

step() { printf '\n== %s\n' "$*"; }

# Every `swarmkit ... --json` prints one object; a command that could not run prints
# {"ok": false, "error": ..., "hint": ...}, which ends the snippet with that message.
read_doc=$(cat <<'PY'
import json, sys
text = sys.stdin.read()
if not text.strip():
    sys.exit("(no JSON on stdout: see the error above)")
doc = json.loads(text)
if "error" in doc:
    sys.exit(f"{doc['error']} ({doc['hint']})" if doc.get("hint") else doc["error"])
PY
)

# parse SNIPPET [ARGS...]: run a python snippet on the JSON read from stdin (as `doc`)
parse() {
    local snippet="$1"
    shift
    "$python" -c "$read_doc"$'\n'"$snippet" "$@"
}
