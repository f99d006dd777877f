"""Fault drills for users: what a replicated cluster does when a host is cut off, a disk fills, a link slows.

Run as root: .venv/bin/python benchmarks/drills.py [--json] [--hold 60] [--busy-minutes 10] [--producer KEY=VALUE ...]

Builds a fresh 3-host apache sandbox 'dk' (hosts dk1.., 10.214.0.0/24, each host's broker data disk 256 MB),
deploys RF 3 / min ISR 2, and runs each fault under an idempotent acks=all producer (1,000 records/s over
6 partitions), read back in full afterwards (tests/integration/fault_drills.py): a link limited to 1 mbit/s,
a full data disk, a broker host partitioned from everything for --hold seconds, the quorum leader's host
partitioned for --hold seconds.  Per fault: records acknowledged, lost and duplicated, the longest write
pause any partition saw, the time from heal to every partition back at full ISR and to every controller caught up
with the quorum's leader again (the next drill starts after both), whether `verify --timeout 30`
named the node and the fault (and how long it took), and which services had a task replaced.  --producer sets
librdkafka settings of the drills' producer over the drills' own (socket.timeout.ms 7000, tests/integration/fault_drills.py),
to compare a client's own share.  With --busy-minutes, before the drills: one core kept busy (scripts/busy.sh) that long
under the same producer, and every broker the controllers fenced meanwhile counted from their logs ("Fencing broker N
... because its session has timed out"): a busy machine must fence none.  --only picks drills
(slow, disk-full, partition, leader) and --repeat runs them that many times on the same cluster; --logs DIR keeps
every controller's and broker's log of each drill there (what the cluster did while a partition paused), since the
sandbox is always removed.  Prints a table, or with --json one object.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the drill harness lives with the tests

from swarmkit import waits  # noqa: E402
from swarmkit.hosts.inventory import Inventory, load_inventory  # noqa: E402
from swarmkit.hosts.session import Session  # noqa: E402
from swarmkit.kafka.admin import ensure_topics  # noqa: E402
from swarmkit.ops.deploy import up  # noqa: E402
from swarmkit.ops.plan import DeployOptions, plan  # noqa: E402
from swarmkit.sandbox.state import Sandbox  # noqa: E402
from swarmkit.stack.topics import TopicSpec  # noqa: E402
from tests.integration.fault_drills import (  # noqa: E402
    CLIENT,
    PARTITIONS,
    DrillResult,
    bootstrap,
    drill,
    quorum_leader_host,
)
from tests.integration.kafka_traffic import CountingProducer  # noqa: E402
from tests.integration.sandboxes import fresh_sandbox  # noqa: E402

NAME = "dk"
SUBNET = "10.214.0.0/24"
ROOT = Path(__file__).resolve().parents[1]
FENCED = "because its session has timed out"  # the active controller's line when it fences a silent broker
DRILLS = ("slow", "disk-full", "partition", "leader")


def pressure() -> str:
    return Path("/proc/pressure/cpu").read_text().splitlines()[0] + f"; load {Path('/proc/loadavg').read_text().split()[:3]}"


@dataclass(frozen=True)
class Choice:
    """Which drills to run, how often, and where to keep the cluster's logs of each."""

    only: tuple[str, ...] = DRILLS
    repeat: int = 1
    logs: Path | None = None


def run(hold: float, client: dict[str, object], busy_minutes: float, choice: Choice) -> dict:
    before = pressure()
    with (
        tempfile.TemporaryDirectory() as scratch,
        fresh_sandbox(NAME, 3, SUBNET, NAME, Path(scratch), engine="apache", managers=3, data_limit="256m") as created,
    ):
        inventory = load_inventory(created.inventory_path)
        started = time.monotonic()
        assert up(plan(inventory, DeployOptions(topics="orders:6:3")), Session.of(inventory)).ok
        deployed_s = time.monotonic() - started
        busy = fencing_when_busy(created, inventory, busy_minutes, client) if busy_minutes else None
        results = [
            one_drill(created, inventory, which, f"{which}-{round_}", (hold, client, choice.logs))
            for round_ in range(1, choice.repeat + 1)
            for which in choice.only
        ]
    return {
        "benchmark": "drills",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "hold_s": hold,
        "producer": client,
        "deploy_s": round(deployed_s, 1),
        "busy": busy,
        "pressure_before": before,
        "pressure_after": pressure(),
        "drills": [r.to_dict() for r in results],
    }


def one_drill(
    created: Sandbox, inventory: Inventory, which: str, topic: str, setting: tuple[float, dict[str, object], Path | None]
) -> DrillResult:
    """One drill on the host it is about: the quorum leader's for "leader", another host for the rest."""
    hold, client, logs = setting
    leader, since = quorum_leader_host(inventory), datetime.now(UTC)
    node = leader if which == "leader" else next(h.name for h in inventory.hosts if h.name != leader)
    kind = "partition" if which == "leader" else which
    try:
        return drill(inventory, NAME, kind, node, hold if kind == "partition" else 0, topic, client)
    finally:
        if logs:
            keep_logs(created, since, logs / topic)


def keep_logs(created: Sandbox, since: datetime, into: Path) -> None:
    """Every Kafka container's log since ``since``, one file per host and container."""
    into.mkdir(parents=True, exist_ok=True)
    for host, container, logs in kafka_logs(created, since):
        (into / f"{host}-{container}.log").write_text(logs)


def fencing_when_busy(created: Sandbox, inventory: Inventory, minutes: float, client: dict[str, object]) -> dict:
    """One core kept busy for ``minutes`` under the drills' producer: the brokers the controllers fenced meanwhile
    (their log lines) and the producer's longest write pause."""
    assert ensure_topics(f"{inventory.hosts[0].name}:9094", [TopicSpec("busy", PARTITIONS, 3)])[0].ok
    since, before = datetime.now(UTC), pressure()
    producer = CountingProducer(bootstrap(inventory), "busy", config=client).start()
    burner = subprocess.Popen(["bash", str(ROOT / "scripts" / "busy.sh"), "--cores", "1"], stderr=subprocess.DEVNULL)
    try:
        waits.hold(minutes * 60)
    finally:
        burner.terminate()
        burner.wait(30)
        producer.stop()
    lines = fencing_lines(created, since)
    print(f"busy for {minutes:g} min: {len(lines)} broker(s) fenced", *lines, sep="\n", file=sys.stderr)
    return {
        "minutes": minutes,
        "fenced": len(lines),
        "lines": lines[:10],
        "acknowledged": len(producer.acknowledged),
        "longest_pause_s": round(max(producer.longest_pause.values(), default=0.0), 1),
        "pressure_before": before,
        "pressure_after": pressure(),
    }


def fencing_lines(created: Sandbox, since: datetime) -> list[str]:
    """Every controller's log lines since ``since`` that fence a broker whose session timed out (all hosts)."""
    return [
        f"{host}: {line}"
        for host, container, logs in kafka_logs(created, since)
        if "_controller-" in container
        for line in logs.splitlines()
        if FENCED in line
    ]


def kafka_logs(created: Sandbox, since: datetime) -> list[tuple[str, str, str]]:
    """(host, container name, its log since ``since``) of every controller and broker container on every host."""
    found = []
    for host in created.hosts:
        docker = host.docker.client
        for container in docker.container.list(all=True):
            if "_controller-" in container.name or "_broker" in container.name:
                found.append((host.name, container.name, str(docker.container.logs(container, since=since, timestamps=True))))
    return found


def _after_heal(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds >= 0 else "not within 120 s"


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
        "quorum after heal",
        "tasks replaced",
    ):
        table.add_column(column)
    for row in report["drills"]:
        named = f"{'yes' if row['named'] else 'NO'} ({row['verify_s']:.1f} s, exit {row['verify_exit']})"
        in_sync, quorum = _after_heal(row["in_sync_s"]), _after_heal(row["quorum_s"])
        cells = (row["fault"], row["node"], str(row["acknowledged"]), str(row["lost"]), str(row["duplicated"]))
        began, ended = row["longest_pause_window"]
        pause = f"{row['longest_pause_s']:.1f} s ({began:g}-{ended:g} s in)"
        settled = f"settled {row['settled_s']:.1f} s after heal" if row["settled_s"] >= 0 else "not settled in 180 s"
        table.add_row(*cells, pause, named, in_sync, quorum, f"{', '.join(row['restarted']) or 'none'} ({settled})")
    Console().print(table)
    if busy := report["busy"]:
        print(
            f"one core busy for {busy['minutes']:g} min under the producer: {busy['fenced']} broker(s) fenced, "
            f"{busy['acknowledged']} records acknowledged, longest write pause {busy['longest_pause_s']} s"
            f"\n  CPU pressure before: {busy['pressure_before']}\n  CPU pressure after:  {busy['pressure_after']}"
        )
    print(f"CPU pressure before: {report['pressure_before']}\nCPU pressure after:  {report['pressure_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--hold", type=float, default=60.0, help="seconds each partition is held (default 60)")
    parser.add_argument("--producer", action="append", default=[], metavar="KEY=VALUE", help="a librdkafka producer setting")
    parser.add_argument("--busy-minutes", type=float, default=0.0, help="minutes of one busy core before the drills (default 0)")
    parser.add_argument("--only", default=",".join(DRILLS), help=f"drills to run, of {','.join(DRILLS)} (default all)")
    parser.add_argument("--repeat", type=int, default=1, help="how many times the drills run on the same cluster")
    parser.add_argument("--logs", type=Path, help="a directory to keep every Kafka container's log of each drill in")
    args = parser.parse_args()
    client = CLIENT | dict(setting.split("=", 1) for setting in args.producer)
    only = tuple(args.only.split(","))
    if unknown := set(only) - set(DRILLS):
        parser.error(f"--only: no drill {', '.join(sorted(unknown))}; the drills are {', '.join(DRILLS)}")
    with contextlib.redirect_stdout(sys.stderr):  # the drills' own lines: stdout is the table or the one object
        report = run(args.hold, client, args.busy_minutes, Choice(only, args.repeat, args.logs))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        show(report)


if __name__ == "__main__":
    main()
