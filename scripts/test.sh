#!/usr/bin/env bash
# The whole test suite on a fresh machine: setup (packages, .venv, dockerd), then unit,
# integration (real multi-host sandbox) and end-to-end tests (the README's main job, Spark included).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
exec .venv/bin/pytest -ra "$@"
