"""The main job on a quiet machine and with cores kept busy: sandbox -> cluster verified, and what it costs.

Run as root: .venv/bin/python benchmarks/busy_machine.py [--busy 0,1] [--idle-seconds 60] [--json]

For each number of busy cores (scripts/busy.sh keeps them busy for the whole round) a fresh 3-host
apache sandbox 'bm' (10.251.0.0/24) gets `swarmkit up --topics bench:6:3` and `swarmkit verify`, run as
a user runs them (the CLI, in subprocesses).  Measured per round: seconds from nothing to a verified
cluster; whether it converged with no broker or controller task restarted; the CPU seconds the `up`
process used (its Docker CLI children included); each broker's JVM start -> serving (from its log's
timestamps); the idle cluster's CPU (its Kafka JVMs over --idle-seconds right after verify, while their
JIT compilers still work, then over the next --idle-seconds, in total and per JVM; percent of one core;
other Kafka processes on the machine are not counted); and
`verify`'s wall time (median of 3).  /proc/pressure/cpu is read before and after each round.
Prints a table, or with --json one object whose `ratios` compare each busy round with the quiet one.
The sandbox is always removed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import tempfile
import time
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.state import Sandbox

ROOT = Path(__file__).resolve().parents[1]
SWARMKIT = str(ROOT / ".venv" / "bin" / "swarmkit")
NAME = "bm"
SUBNET = "10.251.0.0/24"
KAFKA_TIME = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")


def pressure() -> str:
    return Path("/proc/pressure/cpu").read_text().splitlines()[0]


@contextmanager
def busy(cores: int):
    """scripts/busy.sh keeping ``cores`` cores busy while the block runs."""
    if not cores:
        yield
        return
    burner = subprocess.Popen(["bash", str(ROOT / "scripts" / "busy.sh"), "--cores", str(cores)], stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        burner.terminate()
        burner.wait()


def run_cli(*args: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of one swarmkit command; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([SWARMKIT, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"swarmkit {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def restarted_tasks(built: Sandbox) -> int:
    docker = built.hosts[0].docker.client
    return sum(1 for service in docker.service.list() for task in docker.service.ps(service) if task.desired_state != "running")


def _kafka_time(line: str) -> datetime | None:
    found = KAFKA_TIME.match(line)
    return datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f") if found else None


def jvm_start_to_serving(built: Sandbox) -> dict[str, float]:
    """Per broker: from the JVM's first log line to 'Kafka Server started'."""
    seconds = {}
    for host in built.hosts:
        for container in host.docker.client.container.list(filters=[("label", "com.docker.swarm.service.name=kafka_broker")]):
            lines = host.docker.client.container.logs(container).splitlines()
            stamps = [stamp for line in lines if (stamp := _kafka_time(line))]
            started = next((_kafka_time(line) for line in lines if "Kafka Server started" in line), None)
            if stamps and started:
                seconds[host.name] = (started - stamps[0]).total_seconds()
    return seconds


def kafka_jvms(built: Sandbox) -> dict[str, int]:
    """The process id of each Kafka JVM in the sandbox's containers, by host and service.  Only this
    sandbox's: other clusters on the machine (other engineers', other sandboxes) are not counted."""
    pids = {}
    for host in built.hosts:
        for container in host.docker.client.container.list():
            pid = container.state.pid
            if pid and b"kafka.Kafka" in Path(f"/proc/{pid}/cmdline").read_bytes():  # the entrypoints exec the JVM
                service = container.config.labels.get("com.docker.swarm.service.name", container.name)
                pids[f"{host.name}/{service}"] = pid
    return pids


def cpu_seconds(pid: int) -> float:
    """CPU seconds one process has used so far (user and system)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cpu(built: Sandbox, seconds: float) -> dict[str, float]:
    """Percent of one core each of the sandbox's Kafka JVMs uses over ``seconds`` with no client traffic."""
    pids = kafka_jvms(built)
    before = {name: cpu_seconds(pid) for name, pid in pids.items()}
    time.sleep(seconds)
    return {name: 100 * (cpu_seconds(pid) - before[name]) / seconds for name, pid in sorted(pids.items())}


def one_round(cores: int, idle_seconds: float, directory: Path, console: Console) -> dict[str, Any]:
    inventory = str(directory / f"{NAME}.yaml")
    sandbox.down(NAME)
    result: dict[str, Any] = {"busy_cores": cores, "pressure_before": pressure()}
    with busy(cores):
        started = time.perf_counter()
        console.print(f"{cores} busy core(s): sandbox...")
        built = sandbox.up(3, NAME, NAME, SUBNET, inventory, engine="apache", managers=3)
        console.print(f"{cores} busy core(s): up...")
        result["up_s"], result["up_cpu_s"] = run_cli("up", "-i", inventory, "--topics", "bench:6:3")
        result["verify_first_s"], _ = run_cli("verify", "-i", inventory)
        result["to_verified_s"] = time.perf_counter() - started
        result["restarted_tasks"] = restarted_tasks(built)
        result["jvm_start_to_serving_s"] = jvm_start_to_serving(built)
        result["verify_s"] = statistics.median(run_cli("verify", "-i", inventory)[0] for _ in range(3))
        console.print(f"{cores} busy core(s): the idle cluster for twice {idle_seconds:g} s...")
        result["idle_first_core_pct"] = sum(idle_cpu(built, idle_seconds).values())  # its JITs still compiling
        result["idle_core_pct_per_jvm"] = idle_cpu(built, idle_seconds)
        result["idle_cluster_core_pct"] = sum(result["idle_core_pct_per_jvm"].values())
    result["pressure_after"] = pressure()
    return result


def measure(busy_cores: list[int], idle_seconds: float, console: Console) -> dict[str, Any]:
    rounds = []
    with tempfile.TemporaryDirectory(prefix="swarmkit-busy-bench-") as scratch:
        try:
            rounds = [one_round(cores, idle_seconds, Path(scratch), console) for cores in busy_cores]
        finally:
            sandbox.down(NAME)
    quiet = rounds[0]
    ratios = {
        f"busy{r['busy_cores']}_vs_busy{quiet['busy_cores']}": {
            key: r[key] / quiet[key] for key in ("to_verified_s", "up_s", "up_cpu_s", "verify_s") if quiet[key]
        }
        for r in rounds[1:]
    }
    return {"rounds": rounds, "ratios": ratios}


def print_table(result: dict[str, Any], console: Console) -> None:
    table = Table(title="the main job with busy cores (apache, fresh 3-host sandbox)")
    table.add_column("measure")
    for r in result["rounds"]:
        table.add_column(f"{r['busy_cores']} busy", justify="right")
    rows = (
        ("sandbox -> cluster verified, s", "to_verified_s", "{:.1f}"),
        ("swarmkit up, s", "up_s", "{:.1f}"),
        ("swarmkit up CPU (with its children), s", "up_cpu_s", "{:.1f}"),
        ("tasks restarted", "restarted_tasks", "{}"),
        ("idle cluster CPU right after verify, % of one core", "idle_first_core_pct", "{:.1f}"),
        ("idle cluster CPU the next window, % of one core", "idle_cluster_core_pct", "{:.1f}"),
        ("verify wall (median of 3), s", "verify_s", "{:.2f}"),
    )
    for label, key, form in rows:
        table.add_row(label, *(form.format(r[key]) for r in result["rounds"]))
    table.add_row(
        "JVM start -> serving per broker, s",
        *(", ".join(f"{v:.1f}" for v in r["jvm_start_to_serving_s"].values()) for r in result["rounds"]),
    )
    for name in result["rounds"][0]["idle_core_pct_per_jvm"]:
        table.add_row(f"  idle {name}, %", *(f"{r['idle_core_pct_per_jvm'].get(name, 0):.1f}" for r in result["rounds"]))
    console.print(table)
    for name, ratio in result["ratios"].items():
        console.print(f"{name}: " + ", ".join(f"{key} {value:.2f}x" for key, value in ratio.items()))
    for r in result["rounds"]:
        console.print(f"{r['busy_cores']} busy: pressure before {r['pressure_before']} / after {r['pressure_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--busy", default="0,1", help="comma-separated busy core counts; the first is the baseline")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    result = measure([int(n) for n in args.busy.split(",")], args.idle_seconds, console)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, console)


if __name__ == "__main__":
    main()
