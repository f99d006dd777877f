"""Fault drills for users: what a replicated cluster does when a host is cut off, a disk fills, a link slows.

Run as root: .venv/bin/python benchmarks/drills.py [--json] [--hold 60] [--producer KEY=VALUE ...]

Builds a fresh 3-host apache sandbox 'dk' (hosts dk1.., 10.214.0.0/24, each host's broker data disk 256 MB),
deploys RF 3 / min ISR 2, and runs each fault under an idempotent acks=all producer (1,000 records/s over
6 partitions), read back in full afterwards (tests/integration/fault_drills.py): a link limited to 1 mbit/s,
a full data disk, a broker host partitioned from everything for --hold seconds, the quorum leader's host
partitioned for --hold seconds.  Per fault: records acknowledged, lost and duplicated, the longest write
pause any partition saw, the time from heal to every partition back at full ISR, whether `verify --timeout 30`
named the node and the fault (and how long it took), and which services had a task replaced.  --producer sets
librdkafka settings of the drills' producer (e.g. request.timeout.ms=10000), to compare a client's own share.  Prints a table,
or with --json one object.  The sandbox is always removed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the drill harness lives with the tests

from swarmkit.hosts.inventory import load_inventory  # noqa: E402
from swarmkit.hosts.session import Session  # noqa: E402
from swarmkit.ops.deploy import up  # noqa: E402
from swarmkit.ops.plan import DeployOptions, plan  # noqa: E402
from tests.integration.fault_drills import DrillResult, drill, quorum_leader_host, tolerate_partitions  # noqa: E402
from tests.integration.sandboxes import fresh_sandbox  # noqa: E402

NAME = "dk"
SUBNET = "10.214.0.0/24"


def pressure() -> str:
    return Path("/proc/pressure/cpu").read_text().splitlines()[0] + f"; load {Path('/proc/loadavg').read_text().split()[:3]}"


def run(hold: float, client: dict[str, object]) -> dict:
    before = pressure()
    with (
        tempfile.TemporaryDirectory() as scratch,
        fresh_sandbox(NAME, 3, SUBNET, NAME, Path(scratch), engine="apache", managers=3, data_limit="256m") as created,
    ):
        inventory = load_inventory(created.inventory_path)
        started = time.monotonic()
        assert up(plan(inventory, DeployOptions(topics="orders:6:3")), Session.of(inventory)).ok
        tolerate_partitions(inventory)
        deployed_s = time.monotonic() - started
        leader = quorum_leader_host(inventory)
        other = next(h.name for h in inventory.hosts if h.name != leader)
        results: list[DrillResult] = [
            drill(inventory, NAME, "slow", other, 0, "slow", client),
            drill(inventory, NAME, "disk-full", other, 0, "disk", client),
            drill(inventory, NAME, "partition", other, hold, "cut", client),
            drill(inventory, NAME, "partition", quorum_leader_host(inventory), hold, "leader", client),
        ]
    return {
        "benchmark": "drills",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "hold_s": hold,
        "producer": client,
        "deploy_s": round(deployed_s, 1),
        "pressure_before": before,
        "pressure_after": pressure(),
        "drills": [r.to_dict() for r in results],
    }


def show(report: dict) -> None:
    table = Table(
        title=f"fault drills ({report['date']}, RF 3, min ISR 2, acks=all idempotent, faults held {report['hold_s']:g} s)"
    )
    for column in (
        "fault",
        "node",
        "acked",
        "lost",
        "dup",
        "longest pause",
        "verify named it",
        "in sync after heal",
        "tasks replaced",
    ):
        table.add_column(column)
    for row in report["drills"]:
        named = f"{'yes' if row['named'] else 'NO'} ({row['verify_s']:.1f} s, exit {row['verify_exit']})"
        in_sync = f"{row['in_sync_s']:.1f} s" if row["in_sync_s"] >= 0 else "not within 120 s"
        cells = (row["fault"], row["node"], str(row["acknowledged"]), str(row["lost"]), str(row["duplicated"]))
        table.add_row(*cells, f"{row['longest_pause_s']:.1f} s", named, in_sync, ", ".join(row["restarted"]) or "none")
    Console().print(table)
    print(f"CPU pressure before: {report['pressure_before']}\nCPU pressure after:  {report['pressure_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds each partition is held (default 60)")
    parser.add_argument("--producer", action="append", default=[], metavar="KEY=VALUE", help="a librdkafka producer setting")
    args = parser.parse_args()
    report = run(args.hold, dict(setting.split("=", 1) for setting in args.producer))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        show(report)


if __name__ == "__main__":
    main()
