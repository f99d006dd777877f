"""Real Apache Kafka on the sandbox against tansu: time to a verified cluster, broker memory, verify.

Run as root: .venv/bin/python benchmarks/real_kafka_bench.py [--runs N] [--json]

For each engine (tansu first, the baseline, then apache) it builds a fresh 3-host sandbox 'kb'
(hosts kb1.., 10.252.0.0/24), times `sandbox up` (images built and distributed), `up` with a
topic of 3 replicas (apache) and the first passing `verify`; for apache it then reads each broker
and controller JVM's resident memory, times `verify` N times on 3 brokers, adds a host, runs `up`
and times `verify` on 4. First it times the Kafka image build (cold, new engine, cached) with
benchmarks/image_bench.py. Prints the tables, or with --json one object. The sandbox is always removed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import image_bench  # beside this script: the image build rows
from rich.console import Console
from rich.table import Table

from swarmkit.checks.verify import VerifyOptions, verify
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox

NAME = "kb"
SUBNET = "10.252.0.0/24"
TOPICS = {"apache": "bench:6:3", "tansu": "bench:6:1"}


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def verify_times(inventory: Inventory, runs: int) -> list[float]:
    times = []
    for _ in range(runs):
        seconds, report = timed(lambda: verify(Session.of(inventory), VerifyOptions()))
        if not report.ok:
            raise SystemExit(f"verify failed on a healthy cluster: {json.dumps(report.to_dict())[:2000]}")
        times.append(seconds)
    return times


def verified_within(inventory: Inventory, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not verify(Session.of(inventory), VerifyOptions()).ok:
        if time.monotonic() > deadline:
            raise SystemExit("the cluster did not verify within 180 s")
        time.sleep(0.5)


def jvm_rss_mib(inventory: Inventory) -> dict[str, list[float]]:
    """Resident memory of every broker and controller JVM, read from /proc by the container's pid."""
    found: dict[str, list[float]] = {"broker": [], "controller": []}
    for host in inventory.hosts:
        for container in DockerHosts.from_inventory(inventory)[host].client.container.list():
            service = container.config.labels.get("com.docker.swarm.service.name", "")
            kind = "broker" if service.endswith("_broker") else "controller" if "_controller-" in service else ""
            if kind:
                status = Path(f"/proc/{container.state.pid}/status").read_text()
                rss_kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
                found[kind].append(rss_kib / 1024)
    return found


def engine_run(engine: str, runs: int, directory: Path, console: Console) -> dict[str, Any]:
    sandbox.down(NAME)
    try:
        console.print(f"{engine}: sandbox up...")
        sandbox_s, built = timed(lambda: sandbox.up(3, NAME, NAME, SUBNET, str(directory / "kb.yaml"), engine=engine))
        inventory = load_inventory(built.inventory_path)
        console.print(f"{engine}: up...")
        up_s, _ = timed(lambda: up(plan(inventory, DeployOptions(topics=TOPICS[engine])), Session.of(inventory)))
        verify_s, _ = timed(lambda: verified_within(inventory))
        row: dict[str, Any] = {"sandbox_up_s": sandbox_s, "up_s": up_s, "first_verify_s": verify_s}
        row["to_verified_s"] = sandbox_s + up_s + verify_s
        if engine == "apache":
            row["rss_mib"] = jvm_rss_mib(inventory)
            row["verify_3_s"] = verify_times(inventory, runs)
            console.print("apache: add a node, up, verify on 4 brokers...")
            sandbox.add_node(NAME)
            grown = load_inventory(built.inventory_path)
            up(plan(grown, DeployOptions(topics=TOPICS[engine])), Session.of(grown))
            verified_within(grown)
            row["verify_4_s"] = verify_times(grown, runs)
        return row
    finally:
        sandbox.down(NAME)


def print_table(result: dict[str, Any], console: Console) -> None:
    tansu, apache = result["tansu"], result["apache"]
    table = Table(title="Apache Kafka vs tansu on a 3-host sandbox (one run each; verify: median)")
    for column in ("measure", "tansu", "apache", "apache / tansu"):
        table.add_column(column, justify="right")
    for key, label in (
        ("sandbox_up_s", "sandbox up, images included (s)"),
        ("up_s", "swarmkit up (s)"),
        ("first_verify_s", "until verify passes (s)"),
        ("to_verified_s", "sandbox up -> cluster verified (s)"),
    ):
        table.add_row(label, f"{tansu[key]:.1f}", f"{apache[key]:.1f}", f"{apache[key] / tansu[key]:.2f}x")
    for kind, values in apache["rss_mib"].items():
        table.add_row(f"{kind} JVM RSS (MiB, median of {len(values)})", "-", f"{statistics.median(values):.0f}", "")
    v3, v4 = statistics.median(apache["verify_3_s"]), statistics.median(apache["verify_4_s"])
    table.add_row("verify, 3 brokers (s)", "-", f"{v3:.2f}", "")
    table.add_row("verify, 4 brokers (s)", "-", f"{v4:.2f}", f"{v4 / v3:.2f}x vs 3")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="verify passes per size (the median is shown)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    console.print("image build: cold, new engine, cached...")
    result: dict[str, Any] = {"image": image_bench.measure(runs=3)}
    with tempfile.TemporaryDirectory(prefix="swarmkit-kafka-bench-") as scratch:
        result |= {engine: engine_run(engine, args.runs, Path(scratch), console) for engine in ("tansu", "apache")}
    result["ratio_to_verified"] = result["apache"]["to_verified_s"] / result["tansu"]["to_verified_s"]
    if args.json:
        print(json.dumps(result))
    else:
        image_bench.show(result["image"], console)
        print_table(result, console)


if __name__ == "__main__":
    main()
