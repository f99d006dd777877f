"""A new client's first metadata request over SASL_SSL against one over plain text, on the same 3-broker cluster.

Run as root: .venv/bin/python benchmarks/sasl_login.py [--connections N] [--rounds R] [--inventory INV] [--json]

Without --inventory it builds its own Apache Kafka sandbox 'sl' (hosts sl1.., 10.203.0.0/24) and
removes it at the end, also when something fails.  Each round deploys the cluster in each mode in turn
(`swarmkit up --security`, which rolls every broker; the modes alternate which goes first), then opens N
new clients per broker, one after the other, each asking its broker for metadata once: a TCP connection,
and in sasl_ssl a TLS handshake and a SCRAM login, then the answer.  Prints a table and, with --json, one
object: the median milliseconds per connection in each mode, ``ratio`` (sasl_ssl / plaintext) and
``extra_ms`` (sasl_ssl - plaintext; the goal is at most 50 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from clusters import measured_cluster
from confluent_kafka.admin import AdminClient
from rich.console import Console
from rich.table import Table

from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.security import pki

NAME = "sl"
SUBNET = "10.203.0.0/24"
MODES = ("plaintext", "sasl_ssl")
GOAL_EXTRA_MS = 50.0


def first_answer_ms(bootstrap: str, settings: dict[str, Any]) -> float:
    """One new client, one metadata request: its wall time, connection and login included."""
    started = time.perf_counter()
    AdminClient({"bootstrap.servers": bootstrap, **settings}).list_topics(timeout=30)
    return (time.perf_counter() - started) * 1000


def measure_mode(inventory: Inventory, mode: str, connections: int) -> dict[str, float]:
    deployed = up(plan(inventory, DeployOptions(security=mode, topics="bench:3:3", timeout=600)), Session.of(inventory))
    if not deployed.ok:
        raise SystemExit(f"up --security {mode} failed: {deployed.deploy.problems}")
    security = pki.admin_by_address(inventory, "kafka", mode) if mode != "plaintext" else None
    settings = security.librdkafka() if security else {}
    pressure = Path("/proc/pressure/cpu").read_text().split()[1]
    times = [first_answer_ms(f"{host.address}:9094", settings) for host in inventory.hosts for _ in range(connections)]
    return {"median_ms": statistics.median(times), "max_ms": max(times), "load": os.getloadavg()[0], "cpu_pressure": pressure}


def measure(inventory: Inventory, connections: int, rounds: int) -> list[dict[str, dict[str, float]]]:
    results = []
    for number in range(rounds):
        order = MODES if number % 2 == 0 else MODES[::-1]
        results.append({mode: measure_mode(inventory, mode, connections) for mode in order})
    return results


def summary(results: list[dict[str, dict[str, float]]], connections: int) -> dict[str, object]:
    median = {mode: statistics.median(r[mode]["median_ms"] for r in results) for mode in MODES}
    extra = median["sasl_ssl"] - median["plaintext"]
    return {
        "connections_per_broker": connections,
        "rounds": results,
        "plaintext_ms": round(median["plaintext"], 1),
        "sasl_ssl_ms": round(median["sasl_ssl"], 1),
        "ratio": round(median["sasl_ssl"] / median["plaintext"], 2),
        "extra_ms": round(extra, 1),
        "goal_met": extra <= GOAL_EXTRA_MS,
    }


def show(result: dict[str, Any], console: Console) -> None:
    table = Table(title=f"a new client's first metadata answer, {result['connections_per_broker']} per broker, 3 brokers")
    for column in ("round", "mode", "median ms", "max ms", "load", "cpu pressure"):
        table.add_column(column, justify="right")
    for number, measured in enumerate(result["rounds"], 1):
        for mode, row in measured.items():
            cells = (f"{row['median_ms']:.1f}", f"{row['max_ms']:.1f}", f"{row['load']:.1f}", str(row["cpu_pressure"]))
            table.add_row(str(number), mode, *cells)
    console.print(table)
    console.print(
        f"median: sasl_ssl {result['sasl_ssl_ms']} ms vs plaintext {result['plaintext_ms']} ms per connection: "
        f"ratio {result['ratio']}, {result['extra_ms']} ms more (goal: at most {GOAL_EXTRA_MS:g} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=20, help="new clients per broker and mode")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--inventory", help="an existing Apache Kafka cluster (it is redeployed in each mode)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    with measured_cluster(args.inventory, NAME, SUBNET) as inventory:
        result = summary(measure(inventory, args.connections, args.rounds), args.connections)
    show(result, console)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
