"""The Spark verify job's records/s over sasl_ssl against plain text, on the same 3-broker cluster.

Run as root: .venv/bin/python benchmarks/spark_security.py [--records N] [--rounds R] [--inventory INV] [--json]

Without --inventory it builds its own Apache Kafka sandbox 'sx' (hosts sx1.., 10.226.0.0/24) and
removes it at the end, also when something fails. Each round deploys the cluster in each mode in
turn (`swarmkit up --security`, which rolls every broker) and runs `verify --spark` with N records per
broker; the modes alternate which goes first from round to round. Prints a table and, with --json,
one object: the median records/s per mode and ``ratio`` (sasl_ssl / plaintext).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

from clusters import measured_cluster
from rich.console import Console
from rich.table import Table

from swarmkit.checks.verify import VerifyOptions, verify
from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan

NAME = "sx"
SUBNET = "10.226.0.0/24"
MODES = ("plaintext", "sasl_ssl")


def spark_rate(inventory: Inventory, mode: str, records: int) -> dict[str, float]:
    """Deploy in ``mode``, then one Spark verify run; its records/s end to end and its start-up."""
    deployed = up(plan(inventory, DeployOptions(security=mode, topics="bench:6:3", timeout=600)), Session.of(inventory))
    if not deployed.ok:
        raise SystemExit(f"up --security {mode} failed: {deployed.deploy.problems}")
    report = verify(Session.of(inventory), VerifyOptions(timeout=15.0, spark=True, spark_records=records))
    if not report.ok or report.spark is None:
        raise SystemExit(f"verify --spark over {mode} failed: {'; '.join(report.problems) or 'no Spark report'}")
    spark = report.spark.to_dict()
    return {"records_per_s": spark["records_per_s"], "startup_s": spark["spark_startup_s"], "load": os.getloadavg()[0]}


def measure(inventory: Inventory, records: int, rounds: int) -> list[dict[str, dict[str, float]]]:
    results = []
    for number in range(rounds):
        order = MODES if number % 2 == 0 else MODES[::-1]
        results.append({mode: spark_rate(inventory, mode, records) for mode in order})
    return results


def summary(results: list[dict[str, dict[str, float]]], records: int) -> dict[str, object]:
    median = {mode: statistics.median(r[mode]["records_per_s"] for r in results) for mode in MODES}
    return {
        "records_per_broker": records,
        "rounds": results,
        "plaintext_records_per_s": median["plaintext"],
        "sasl_ssl_records_per_s": median["sasl_ssl"],
        "ratio": round(median["sasl_ssl"] / median["plaintext"], 3),
    }


def show(result: dict[str, object], console: Console) -> None:
    table = Table(title=f"Spark verify job, {result['records_per_broker']:,} records per broker, 3 brokers x 3 replicas")
    for column in ("round", "mode", "records/s", "Spark start-up s", "load"):
        table.add_column(column, justify="right")
    rounds: list[dict[str, dict[str, float]]] = result["rounds"]  # type: ignore[assignment]
    for number, measured in enumerate(rounds, 1):
        for mode, row in measured.items():
            table.add_row(str(number), mode, f"{row['records_per_s']:,.0f}", f"{row['startup_s']:.1f}", f"{row['load']:.1f}")
    console.print(table)
    console.print(
        f"median: sasl_ssl {result['sasl_ssl_records_per_s']:,.0f} vs plaintext "
        f"{result['plaintext_records_per_s']:,.0f} records/s, ratio {result['ratio']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=300_000, help="records per broker and run")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--inventory", help="an existing Apache Kafka cluster (it is redeployed in each mode)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    with measured_cluster(args.inventory, NAME, SUBNET) as inventory:
        result = summary(measure(inventory, args.records, args.rounds), args.records)
    show(result, console)
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
