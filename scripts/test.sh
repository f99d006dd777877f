#!/usr/bin/env bash
# The whole test suite on a fresh machine: setup (packages, .venv, dockerd), then unit,
# integration (real multi-host sandbox) and end-to-end tests (the README's main job, Spark included).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
# Habits before behaviour: lint, format and types (configured in pyproject.toml), a few seconds.
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy
# The slowest tests are listed at the end: the suite must stay well under 30 minutes.
exec .venv/bin/pytest -ra --durations=25 "$@"
