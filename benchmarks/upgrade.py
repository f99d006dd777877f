"""A whole Kafka upgrade of 6 nodes (3 controllers, 3 brokers) under acks=all traffic: wall time, the longest
write pause any partition saw, records acknowledged.

Run as root: .venv/bin/python benchmarks/upgrade.py [--json]

Builds a fresh 3-host sandbox 'ub' (three managers, hosts ub1.., 10.251.0.0/24) on Kafka 4.3.1, deploys a
topic of 6 partitions at RF 3 / min ISR 2, starts an idempotent acks=all producer (200 records/s) and runs
`swarmkit upgrade --version 4.4.0` to the end (finalize included).  Each acknowledgement's time is kept
per partition: a partition's longest pause is the longest gap between two of its acknowledgements during
the upgrade.  Prints a table, or with --json one object.  The sandbox is always removed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from rich.console import Console
from rich.table import Table

from swarmkit.hosts.inventory import load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.ops.upgrade import UpgradeOptions, upgrade
from swarmkit.sandbox import hosts as sandbox

NAME = "ub"
SUBNET = "10.251.0.0/24"
TOPIC, PARTITIONS = "bench", 6
RATE = 200.0  # records per second


class TimedProducer:
    """acks=all, idempotent; every acknowledgement's time kept by partition."""

    def __init__(self, bootstrap: str) -> None:
        self.acks: dict[int, list[float]] = defaultdict(list)
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._producer = Producer(
            {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5,
             "message.timeout.ms": 120_000}
        )  # fmt: skip
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _acked(self, error: Any, message: Any) -> None:
        if error is None:
            self.acks[message.partition()].append(time.monotonic())
        else:
            self.errors.append(error.str())

    def _run(self) -> None:
        sent, started = 0, time.monotonic()
        while not self._stop.is_set():
            try:
                self._producer.produce(TOPIC, str(sent).encode(), on_delivery=self._acked)
                sent += 1
            except BufferError:
                self._producer.poll(0.1)
            self._producer.poll(0)
            self._stop.wait(max(0.0, sent / RATE - (time.monotonic() - started)))
        self._producer.flush(130)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(150)


def longest_pause(times: list[float], start: float, end: float) -> float:
    """The longest stretch from ``start`` to ``end`` without an acknowledgement."""
    inside = [start] + [t for t in times if start <= t <= end] + [end]
    return max(b - a for a, b in zip(inside, inside[1:]))


def measure(directory: Path, console: Console) -> dict[str, Any]:
    sandbox.down(NAME)
    try:
        console.print("sandbox up (Kafka 4.3.1), up...")
        built = sandbox.up(3, NAME, NAME, SUBNET, str(directory / "ub.yaml"), "apache", 3, kafka_version="4.3.1")
        inventory = load_inventory(built.inventory_path)
        topics = f"{TOPIC}:{PARTITIONS}:3:min.insync.replicas=2"
        assert up(plan(inventory, DeployOptions(topics=topics)), Session.of(inventory)).ok
        producer = TimedProducer(",".join(f"{h.address}:9094" for h in inventory.hosts))
        time.sleep(5)  # traffic flowing before the upgrade starts
        console.print("upgrade --version 4.4.0...")
        started = time.monotonic()
        report = upgrade(Session.of(inventory, progress=lambda d, t, m: console.print(m)), UpgradeOptions(version="4.4.0"))
        ended = time.monotonic()
        producer.stop()
        pauses = {p: longest_pause(producer.acks[p], started, ended) for p in range(PARTITIONS)}
        acknowledged = sum(1 for times in producer.acks.values() for t in times if started <= t <= ended)
        return {
            "ok": report.ok,
            "upgrade_s": round(ended - started, 1),
            "longest_pause_s": round(max(pauses.values()), 2),
            "pause_by_partition_s": {p: round(s, 2) for p, s in pauses.items()},
            "acknowledged": acknowledged,
            "producer_errors": len(producer.errors),
            "finalized": {k: list(v) for k, v in report.finalized.items()},
        }
    finally:
        sandbox.down(NAME)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    with tempfile.TemporaryDirectory(prefix="swarmkit-upgrade-bench-") as scratch:
        result = measure(Path(scratch), console)
    if args.json:
        print(json.dumps(result))
        return
    table = Table(title="swarmkit upgrade 4.3.1 -> 4.4.0, 3 controllers + 3 brokers, acks=all at 200 records/s")
    table.add_column("measure")
    table.add_column("value", justify="right")
    table.add_row("whole upgrade, finalize included (s)", f"{result['upgrade_s']:.1f}")
    table.add_row("longest write pause of any partition (s)", f"{result['longest_pause_s']:.2f}")
    table.add_row("records acknowledged during it", str(result["acknowledged"]))
    table.add_row("producer errors", str(result["producer_errors"]))
    console.print(table)


if __name__ == "__main__":
    main()
