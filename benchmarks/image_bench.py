"""Build time and size of the swarmkit/kafka image: cold (empty jar/JRE cache) against cached.

Run as root: .venv/bin/python benchmarks/image_bench.py [--runs N] [--json]

Three cases, each built on this machine's engine under a throw-away tag that is removed afterwards:
  cold        an empty SWARMKIT_CACHE (Maven copies the jars, jlink makes the runtime) and no Docker
              layer cache.  Maven's own ~/.m2 is left as it is: with a warm ~/.m2 nothing is
              downloaded (the report says which it was); a first run on a new machine also
              downloads ~80 MB from Maven Central.
  new engine  the cache filled, but no Docker layer cache: what a freshly started engine (each
              sandbox host) pays to build the image.
  cached      the cache filled and the engine's layers reused: a rebuild with nothing changed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.images import image

LOCAL = Engine.connect("unix:///var/run/docker.sock")
M2_MARKER = Path.home() / ".m2/repository/org/apache/kafka/kafka_2.13" / image.KAFKA_VERSION


def timed(action: Callable[[], object]) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def build_once(tag: str, layer_cache: bool) -> tuple[float, float]:
    """(seconds to resolve the recipe, seconds to build) for one build under ``tag``."""
    started = time.monotonic()
    recipe = image.kafka_recipe()
    resolved = time.monotonic() - started
    with image.build_context(recipe) as context:
        built = timed(lambda: LOCAL.client.legacy_build(context, tags=tag, pull=False, cache=layer_cache))
    return resolved, built


def directory_size(path: Path) -> int:
    return sum(entry.stat().st_size for entry in path.rglob("*") if entry.is_file())


def measure(runs: int) -> dict[str, object]:
    """All three cases in a temporary cache; every image built here is removed at the end."""
    tags = [f"swarmkit/kafka-bench:{uuid.uuid4().hex[:8]}" for _ in range(2 + runs)]
    m2 = "warm" if M2_MARKER.is_dir() else "cold"
    previous = os.environ.get("SWARMKIT_CACHE")
    try:
        with tempfile.TemporaryDirectory(prefix="swarmkit-bench-cache-") as cache:
            os.environ["SWARMKIT_CACHE"] = cache
            cold = build_once(tags[0], layer_cache=False)
            new_engine = build_once(tags[1], layer_cache=False)
            cached = [build_once(tag, layer_cache=True) for tag in tags[2:]]
            parts = {name: directory_size(path) for path, name in image.kafka_recipe().directories}
            size = LOCAL.client.image.inspect(tags[0]).size
    finally:
        if previous is None:
            os.environ.pop("SWARMKIT_CACHE", None)
        else:
            os.environ["SWARMKIT_CACHE"] = previous
        built = [tag for tag in tags if dockerapi.has_image(LOCAL, tag)]
        if built:
            LOCAL.client.image.remove(built, force=True)
    median = (statistics.median(r for r, _ in cached), statistics.median(b for _, b in cached))
    return {
        "image": image.KAFKA_TAG,
        "image_bytes": size,
        "parts_bytes": parts,
        "m2": m2,
        "cold_s": {"resolve": round(cold[0], 2), "build": round(cold[1], 2)},
        "new_engine_s": {"resolve": round(new_engine[0], 2), "build": round(new_engine[1], 2)},
        "cached_s": {"resolve": round(median[0], 3), "build": round(median[1], 2), "runs": runs},
    }


def show(result: dict[str, object], console: Console) -> None:
    table = Table(title=f"{result['image']} build (~/.m2 {result['m2']}), {result['image_bytes'] / 1e6:.0f} MB image")
    for column in ("case", "resolve jars + JRE (s)", "docker build (s)", "total (s)"):
        table.add_column(column, justify="right")
    for case, key in (("cold", "cold_s"), ("new engine", "new_engine_s"), ("cached (median)", "cached_s")):
        times = result[key]
        table.add_row(case, f"{times['resolve']:.3f}", f"{times['build']:.2f}", f"{times['resolve'] + times['build']:.2f}")
    console.print(table)
    parts = ", ".join(f"{name} {size / 1e6:.0f} MB" for name, size in result["parts_bytes"].items())
    console.print(f"content: {parts}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cached builds to take the median of")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    console.print("building the Kafka image cold, on a new engine and cached...")
    result = measure(args.runs)
    if args.json:
        print(json.dumps(result))
    else:
        show(result, console)


if __name__ == "__main__":
    main()
