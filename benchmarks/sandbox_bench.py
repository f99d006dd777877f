"""How long `swarmkit sandbox up` takes for 3 and 6 hosts (and `down`), printed as a table.

Run as root: .venv/bin/python benchmarks/sandbox_bench.py
The 3-host run is the baseline; the ratio column compares each run with it.
"""

from __future__ import annotations

import tempfile
import time

from rich.console import Console
from rich.table import Table

from swarmkit.sandbox import hosts as sandbox

NAME = "bench"
SUBNET = "10.248.0.0/24"


def timed(action) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for nodes in (3, 6):
            sandbox.down(NAME)
            try:
                up = timed(
                    lambda nodes=nodes: sandbox.up(
                        nodes, NAME, "bench", SUBNET, f"{scratch}/inventory.yaml", engine="tansu", managers=1
                    )
                )
            finally:
                down = timed(lambda: sandbox.down(NAME))
            rows.append((nodes, up, down))
    baseline = rows[0][1]
    table = Table(title="swarmkit sandbox up / down (wall time, images built and pushed included)")
    for column in ("hosts", "up (s)", "up vs 3 hosts", "down (s)"):
        table.add_column(column, justify="right")
    for nodes, up, down in rows:
        table.add_row(str(nodes), f"{up:.2f}", f"{up / baseline:.2f}x", f"{down:.2f}")
    Console().print(table)


if __name__ == "__main__":
    main()
