"""`swarmkit verify` wall time (no Spark) for 3 brokers and, after adding a node, for 4.

Run as root: .venv/bin/python benchmarks/verify_bench.py [--runs N]

Builds its own sandbox 'vb' (hosts vb1.., 10.251.0.0/24), `swarm_up` + `deploy` (tansu engine),
times `verify` N times (median), adds a node, `swarm_up` + `deploy` again, times `verify` for 4
brokers, and prints one table. The sandbox is always removed, also when something fails.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swarmkit.checks import verify
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import load_inventory
from swarmkit.ops import deploy
from swarmkit.sandbox import hosts as sandbox
from swarmkit.swarm import bootstrap as swarm

NAME = "vb"
PREFIX = "vb"
SUBNET = "10.251.0.0/24"


def time_verify(inventory_path: str, runs: int) -> list[float]:
    """Wall time of each of ``runs`` verify passes; a failing pass stops the benchmark."""
    inventory = load_inventory(inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        report = verify.verify(inventory, verify.VerifyOptions(), docker=docker)
        times.append(time.perf_counter() - started)
        if not report.ok:
            failing = [f"{b.node}: {b.detail}" for b in report.brokers if not b.ok] or list(report.problems)
            raise SystemExit(f"verify failed on a healthy sandbox: {'; '.join(failing) or report.topics}")
    return times


def up_and_deploy(inventory_path: str) -> int:
    """Join every host of the inventory and deploy; returns the number of brokers serving."""
    inventory = load_inventory(inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    swarm.swarm_up(inventory, docker=docker)
    result = deploy.deploy(inventory, deploy.DeployOptions(), docker=docker)
    return sum(1 for node in result.nodes if node.task_id)


def measure(runs: int, directory: Path, console: Console) -> list[tuple[int, list[float]]]:
    sandbox.down(NAME)  # leftovers of a crashed run
    try:
        built = sandbox.up(3, NAME, PREFIX, SUBNET, str(directory / f"{NAME}.yaml"), engine="tansu", managers=1)
        rows = []
        for step in ("3 hosts", "add a node"):
            if step == "add a node":
                console.print("adding a node...")
                sandbox.add_node(NAME)  # rewrites the sandbox's inventory with the new host
            console.print(f"{step}: swarm up + deploy...")
            brokers = up_and_deploy(built.inventory_path)
            console.print(f"timing verify with {brokers} brokers, {runs} runs...")
            rows.append((brokers, time_verify(built.inventory_path, runs)))
        return rows
    finally:
        sandbox.down(NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="verify passes per size (the median is shown)")
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory(prefix="swarmkit-verify-bench-") as scratch:
        rows = measure(args.runs, Path(scratch), console)
    baseline = statistics.median(rows[0][1])
    table = Table(title=f"swarmkit verify wall time, no Spark (median of {args.runs} runs)")
    for column in ("brokers", "verify wall time (s)", "min-max (s)", "ratio vs 3 brokers"):
        table.add_column(column, justify="right")
    for brokers, times in rows:
        median = statistics.median(times)
        table.add_row(str(brokers), f"{median:.3f}", f"{min(times):.3f}-{max(times):.3f}", f"{median / baseline:.2f}x")
    console.print(table)


if __name__ == "__main__":
    main()
