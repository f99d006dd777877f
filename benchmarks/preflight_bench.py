"""Preflight wall time on 3- and 6-host sandboxes: the probed pairs grow quadratically, the wall time should not.

Run as root: .venv/bin/python benchmarks/preflight_bench.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import load_inventory
from swarmkit.network.preflight import plan_probes, run_preflight
from swarmkit.sandbox import hosts as sandbox

NAME = "pfb"
SUBNET = "10.233.0.0/24"
SIZES = (3, 6)


def measure(nodes: int, runs: int, directory: Path) -> tuple[int, list[float]]:
    """Build a fresh sandbox of ``nodes`` hosts, run preflight ``runs`` times, always tear it down."""
    sandbox.down(NAME)
    try:
        built = sandbox.up(nodes, NAME, NAME, SUBNET, str(directory / f"{NAME}{nodes}.yaml"), engine="tansu", managers=1)
        inventory = load_inventory(built.inventory_path)
        docker = DockerHosts.from_inventory(inventory)
        times = []
        for _ in range(runs):
            started = time.monotonic()
            report = run_preflight(inventory, docker=docker)
            times.append(time.monotonic() - started)
            if not report.ok:
                raise SystemExit(f"preflight failed on a fresh sandbox: {report.failures[0].summary}")
        return len(plan_probes(inventory.hosts, report.ports)), times
    finally:
        sandbox.down(NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="preflight runs per size (the first also pulls the probe image)")
    args = parser.parse_args()
    console = Console()
    table = Table(title="swarmkit preflight wall time")
    for column in ("hosts", "probes", "first run (s)", "median (s)", "min (s)"):
        table.add_column(column, justify="right")
    with tempfile.TemporaryDirectory(prefix="swarmkit-bench-") as scratch:
        for nodes in SIZES:
            console.print(f"building a {nodes}-host sandbox and running preflight {args.runs} times...")
            probes, times = measure(nodes, args.runs, Path(scratch))
            table.add_row(str(nodes), str(probes), f"{times[0]:.2f}", f"{statistics.median(times):.2f}", f"{min(times):.2f}")
    console.print(table)


if __name__ == "__main__":
    main()
