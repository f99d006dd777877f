"""`swarmkit verify` wall time (no Spark) for 3 brokers and, after adding a node, for 4.

Run as root: .venv/bin/python benchmarks/verify_bench.py [--runs N] [--engine apache] [--inventory INV]

Builds its own sandbox 'vb' (hosts vb1.., 10.251.0.0/24), `swarm_up` + `deploy` (tansu engine unless
--engine apache: 3 managers, so 3 controllers), times `verify` N times (median), adds a node,
`swarm_up` + `deploy` again, times `verify` for 4 brokers, and prints one table. The sandbox is
always removed, also when something fails. With --inventory, only `verify` of that deployed
cluster is timed (nothing built or removed); with --cli as well, each pass is the command
`swarmkit verify -i INV` run as a user runs it (interpreter start and imports included), and its CPU
seconds are shown too: run it with PYTHONPATH=TREE to time one work tree's code against another's.
Each row shows /proc/pressure/cpu and the load average: quiet means near 0.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from swarmkit.checks import verify
from swarmkit.hosts.inventory import load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops import deploy
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.swarm import bootstrap as swarm

NAME = "vb"
PREFIX = "vb"
SUBNET = "10.251.0.0/24"


def time_verify(inventory_path: str, runs: int) -> list[float]:
    """Wall time of each of ``runs`` verify passes; a failing pass stops the benchmark."""
    session = Session.of(load_inventory(inventory_path))
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        report = verify.verify(session, verify.VerifyOptions())
        times.append(time.perf_counter() - started)
        if not report.ok:
            raise SystemExit(f"verify failed on a healthy sandbox: {'; '.join(report.problems)}")
    return times


def time_verify_cli(inventory_path: str, runs: int) -> tuple[list[float], list[float]]:
    """(wall, CPU) seconds of each of ``runs`` `swarmkit verify -i INV` commands; a failing one stops the benchmark."""
    swarmkit = str(Path(sys.executable).with_name("swarmkit"))
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(
            [swarmkit, "verify", "-i", inventory_path], capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode != 0:
            raise SystemExit(f"swarmkit verify failed on a healthy cluster:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return walls, cpus


def up_and_deploy(inventory_path: str) -> int:
    """Join every host of the inventory and deploy; returns the number of brokers serving."""
    session = Session.of(load_inventory(inventory_path))
    swarm.swarm_up(session.inventory, docker=session.docker)
    result = deploy.deploy(plan(session.inventory, DeployOptions()), session)
    return sum(1 for node in result.nodes if node.task_id)


def cpu_pressure() -> str:
    """The machine's CPU pressure (share of time some task waited for a core, last 10 s / 60 s)."""
    try:
        some = Path("/proc/pressure/cpu").read_text().split()
    except OSError:
        return "n/a"
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{some[1].split('=')[1]}/{some[2].split('=')[1]} %, load {load}"


def measure(runs: int, directory: Path, console: Console, engine: str) -> list[tuple[int, list[float], str]]:
    sandbox.down(NAME)  # leftovers of a crashed run
    try:
        managers = 3 if engine == "apache" else 1
        built = sandbox.up(3, NAME, PREFIX, SUBNET, str(directory / f"{NAME}.yaml"), engine=engine, managers=managers)
        rows = []
        for step in ("3 hosts", "add a node"):
            if step == "add a node":
                console.print("adding a node...")
                sandbox.add_node(NAME)  # rewrites the sandbox's inventory with the new host
            console.print(f"{step}: swarm up + deploy...")
            brokers = up_and_deploy(built.inventory_path)
            console.print(f"timing verify with {brokers} brokers, {runs} runs...")
            times = time_verify(built.inventory_path, runs)
            rows.append((brokers, times, cpu_pressure()))
        return rows
    finally:
        sandbox.down(NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="verify passes per size (the median is shown)")
    parser.add_argument("--engine", choices=("tansu", "apache"), default="tansu", help="the sandbox's broker engine")
    parser.add_argument("--inventory", help="time verify of this deployed cluster only (no sandbox built)")
    parser.add_argument("--cli", action="store_true", help="with --inventory: time the command `swarmkit verify -i INV`")
    args = parser.parse_args()
    console = Console()
    if args.inventory and args.cli:
        print_cli(args.inventory, args.runs, console)
        return
    if args.inventory:
        times = time_verify(args.inventory, args.runs)
        rows = [(len(load_inventory(args.inventory).hosts), times, cpu_pressure())]
    else:
        with tempfile.TemporaryDirectory(prefix="swarmkit-verify-bench-") as scratch:
            rows = measure(args.runs, Path(scratch), console, args.engine)
    baseline = statistics.median(rows[0][1])
    table = Table(title=f"swarmkit verify wall time, no Spark (median of {args.runs} runs)")
    for column in ("brokers", "verify wall time (s)", "min-max (s)", "ratio vs 3 brokers", "cpu pressure 10s/60s"):
        table.add_column(column, justify="right")
    for brokers, times, pressure in rows:
        median = statistics.median(times)
        row = (f"{median:.3f}", f"{min(times):.3f}-{max(times):.3f}", f"{median / baseline:.2f}x", pressure)
        table.add_row(str(brokers), *row)
    console.print(table)


def print_cli(inventory_path: str, runs: int, console: Console) -> None:
    pressure_before = cpu_pressure()
    walls, cpus = time_verify_cli(inventory_path, runs)
    table = Table(
        title=f"`swarmkit verify -i INV` as a command (median of {runs}; code from {os.environ.get('PYTHONPATH', 'the venv')})"
    )
    for column in ("brokers", "wall (s)", "min-max (s)", "CPU (s)", "pressure before", "pressure after"):
        table.add_column(column, justify="right")
    spread = f"{min(walls):.3f}-{max(walls):.3f}"
    brokers = str(len(load_inventory(inventory_path).hosts))
    table.add_row(
        brokers, f"{statistics.median(walls):.3f}", spread, f"{statistics.median(cpus):.2f}", pressure_before, cpu_pressure()
    )
    console.print(table)


if __name__ == "__main__":
    main()
