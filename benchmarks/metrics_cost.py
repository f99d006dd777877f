"""What the metrics agent costs the brokers: acks=all produce throughput and broker CPU with and without it.

Run as root: .venv/bin/python benchmarks/metrics_cost.py [--seconds 15] [--runs 3] [--idle-seconds 30] [--json]

A fresh 3-host apache sandbox 'hvd' (10.207.0.0/24, three managers) gets `up --topics bench:6:3` and
`metrics up` (timed: what it adds to a demo).  Then three phases on the same cluster, A/B/A so that drift
shows: A with the JMX exporter agent in every broker (the default, on the official image's path: the jar from the
per-node volume, not from the image) and Prometheus scraping it every 15 s; B with the brokers' agent off
(SWARMKIT_METRICS_AGENT emptied at deploy: same image, same bits; the controllers keep theirs, they carry no
produce traffic); A again.  Each phase redeploys, waits
until every broker serves, warms the brokers up with one unmeasured produce window, then measures the
brokers' CPU over --idle-seconds with no traffic and, --runs times, one acks=all producer on this machine
writing 1 KiB records as fast as the cluster takes them for --seconds: acknowledged MB/s and the brokers'
CPU seconds per MB.  In the A phases it reads Prometheus's scrape_duration_seconds of every target.
Prints a table, or with --json one object whose `ratios` compare each A phase with B (the baseline).
/proc/pressure/cpu and the load average are read before and after.  The sandbox is always removed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from busy_machine import cpu_seconds, kafka_jvms, pressure  # beside this script
from confluent_kafka import Producer
from rich.console import Console
from rich.table import Table

from swarmkit.hosts import dockerapi
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import deploy, up
from swarmkit.ops.metrics import metrics_up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.state import Sandbox
from swarmkit.stack.metrics import AGENT_PORT

NAME = "hvd"
SUBNET = "10.207.0.0/24"
TOPIC = "bench"
TOPICS = f"{TOPIC}:6:3"
RECORD = 1024
AGENT_OFF = (("SWARMKIT_METRICS_AGENT", ""),)  # the brokers' entrypoint then adds no agent (docs/metrics.md)
SCRAPE_TIMEOUT = 120.0
QUEUE = {"queue.buffering.max.kbytes": 8192}  # about a second of backlog: the window's end is the cluster's
SCRAPES = 40
SCRAPE_EVERY = 15.0  # prometheus.SCRAPE_INTERVAL_S, the default
SCRAPER = """
import sys, time, urllib.request
for _ in range(5):  # the exporter's first answers are slow (its JIT): not measured
    urllib.request.urlopen("http://127.0.0.1:%s/metrics", timeout=30).read()
started = time.perf_counter()
for _ in range(int(sys.argv[1])):
    urllib.request.urlopen("http://127.0.0.1:%s/metrics", timeout=30).read()
print(time.perf_counter() - started)
"""


def situation() -> str:
    return f"{pressure()}; load {' '.join(Path('/proc/loadavg').read_text().split()[:3])}"


def query(url: str, promql: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}api/v1/query?{urllib.parse.urlencode({'query': promql})}", timeout=5) as answer:
        return json.loads(answer.read())["data"]["result"]


def brokers_scraped(url: str) -> int:
    return len(query(url, 'up{job="kafka-broker"} == 1'))


def wait_scraped(url: str, brokers: int) -> None:
    """Until Prometheus scrapes ``brokers`` brokers (3 with the agent, 0 without)."""
    deadline = time.monotonic() + SCRAPE_TIMEOUT
    while brokers_scraped(url) != brokers:
        if time.monotonic() > deadline:
            raise SystemExit(f"Prometheus does not scrape {brokers} brokers after {SCRAPE_TIMEOUT:g} s")
        time.sleep(2)


def broker_pids(built: Sandbox) -> dict[str, int]:
    return {name: pid for name, pid in kafka_jvms(built).items() if name.endswith("_broker")}


def brokers_cpu(pids: dict[str, int]) -> float:
    return sum(cpu_seconds(pid) for pid in pids.values())


def produce(bootstrap: str, seconds: float) -> int:
    """Records acknowledged by all in-sync replicas while writing as fast as the cluster takes them."""
    acked = 0

    def delivered(error: object, _message: object) -> None:
        nonlocal acked
        acked += error is None

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5, **QUEUE})
    payload = os.urandom(RECORD)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce(TOPIC, payload, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    if producer.flush(300):
        raise SystemExit("the producer's queue did not drain within 300 s")
    return acked


def broker_history(built: Sandbox) -> str:
    """Every broker task the swarm has kept, for a run in which a broker's JVM went away."""
    state = dockerapi.service_state(built.hosts[0].docker, "kafka_broker")
    tasks = sorted(state.tasks, key=lambda t: t.created_at) if state else []
    return "\n".join(f"{t.created_at} {t.name} {t.state} (desired {t.desired_state}) {t.message} {t.error}" for t in tasks)


def produce_run(built: Sandbox, bootstrap: str, seconds: float) -> dict[str, float]:
    pids = broker_pids(built)
    cpu, started = brokers_cpu(pids), time.perf_counter()
    acked = produce(bootstrap, seconds)
    if (now := broker_pids(built)) != pids:
        raise SystemExit(f"a broker's JVM went away during the run: {pids} -> {now}\n{broker_history(built)}")
    elapsed, used = time.perf_counter() - started, brokers_cpu(pids) - cpu
    megabytes = acked * RECORD / 1e6
    return {"mb_per_s": megabytes / elapsed, "broker_cpu_s_per_mb": used / megabytes, "broker_cores": used / elapsed}


def scrape_cpu(pid: int, idle_seconds: float = 10.0) -> dict[str, float]:
    """One broker's CPU per read of its /metrics, read SCRAPES times in a row from inside its network
    namespace (the port is on the overlay only), less what the idle broker uses in as long."""
    before = cpu_seconds(pid)
    time.sleep(idle_seconds)
    idle_rate = (cpu_seconds(pid) - before) / idle_seconds
    before = cpu_seconds(pid)
    done = subprocess.run(
        ["nsenter", f"--net=/proc/{pid}/ns/net", sys.executable, "-c", SCRAPER % (AGENT_PORT, AGENT_PORT), str(SCRAPES)],
        capture_output=True,
        text=True,
        check=True,
    )
    used, wall = cpu_seconds(pid) - before, float(done.stdout)
    return {"cpu_ms": 1000 * max(used - idle_rate * wall, 0.0) / SCRAPES, "wall_ms": 1000 * wall / SCRAPES}


def scrape_seconds(url: str) -> dict[str, float]:
    """Prometheus's own timing of its last scrape of each Kafka target, summed and the slowest."""
    values = [float(s["value"][1]) for s in query(url, 'scrape_duration_seconds{job=~"kafka-.*"}')]
    return {"targets": len(values), "sum_s": sum(values), "max_s": max(values), "mean_s": statistics.mean(values)}


def phase(built: Sandbox, inventory: Inventory, url: str, agent: bool, args: argparse.Namespace) -> dict[str, Any]:
    options = DeployOptions(topics=TOPICS, extra_env=() if agent else AGENT_OFF)
    deploy(plan(inventory, options), Session.of(inventory))
    wait_scraped(url, 3 if agent else 0)
    bootstrap = ",".join(f"{host.name}:9094" for host in inventory.hosts)
    produce(bootstrap, args.seconds)  # the JITs of freshly started brokers: not measured
    pids = broker_pids(built)
    idle_before = brokers_cpu(pids)
    time.sleep(args.idle_seconds)
    result: dict[str, Any] = {"agent": agent, "idle_broker_core_pct": 100 * (brokers_cpu(pids) - idle_before) / args.idle_seconds}
    runs = [produce_run(built, bootstrap, args.seconds) for _ in range(args.runs)]
    result["runs"] = runs
    result |= {key: statistics.median(run[key] for run in runs) for key in runs[0]}
    if agent:
        result["scrape"] = scrape_seconds(url)
        per_broker = [scrape_cpu(pid) for pid in broker_pids(built).values()]
        result["scrape_cpu_ms"] = statistics.mean(b["cpu_ms"] for b in per_broker)
        result["scrape_wall_ms"] = statistics.mean(b["wall_ms"] for b in per_broker)
        # what scraping every 15 s takes from a broker as busy as in the produce runs
        result["scrape_share_pct"] = 100 * result["scrape_cpu_ms"] / 1000 / SCRAPE_EVERY / (result["broker_cores"] / 3)
    result["situation"] = situation()
    return result


def phase_names(order: str) -> list[tuple[str, bool]]:
    """ "ABA" -> A1 (agent), B1 (none), A2 (agent)."""
    seen: dict[str, int] = {}
    names = []
    for letter in order.upper():
        seen[letter] = seen.get(letter, 0) + 1
        names.append((f"{letter}{seen[letter]}", letter == "A"))
    return names


def ratios(phases: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Each agent phase against the mean of the phases without it (the baseline)."""
    keys = ("mb_per_s", "broker_cpu_s_per_mb", "idle_broker_core_pct")
    baseline = {key: statistics.mean(p[key] for p in phases if not p["agent"]) for key in keys}
    return {p["phase"]: {key: p[key] / baseline[key] for key in keys} for p in phases if p["agent"]}


def measure(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    result: dict[str, Any] = {"situation_before": situation()}
    sandbox.down(NAME)
    try:
        with tempfile.TemporaryDirectory(prefix="swarmkit-metrics-bench-") as scratch:
            console.print("sandbox, up...")
            built = sandbox.up(3, NAME, NAME, SUBNET, str(Path(scratch) / f"{NAME}.yaml"), engine="apache", managers=3)
            inventory = load_inventory(built.inventory_path)
            started = time.perf_counter()
            if not up(plan(inventory, DeployOptions(topics=TOPICS)), Session.of(inventory)).ok:
                raise SystemExit("up failed")
            result["up_s"] = time.perf_counter() - started
            server = metrics_up(Session.of(inventory))
            result["metrics_up_s"] = server.total_s
            phases = []
            for name, agent in phase_names(args.phases):
                console.print(f"phase {name}: agent {'on' if agent else 'off'}... ({situation()})")
                phases.append({"phase": name, **phase(built, inventory, server.url, agent, args)})
    finally:
        sandbox.down(NAME)
    result |= {"phases": phases, "ratios": ratios(phases), "situation_after": situation()}
    return result


def print_table(result: dict[str, Any], console: Console) -> None:
    table = Table(title="the JMX exporter agent in the brokers: A on and scraped every 15 s, B off")
    table.add_column("measure")
    for p in result["phases"]:
        table.add_column(f"{p['phase']} ({'agent' if p['agent'] else 'no agent'})", justify="right")
    rows = (
        ("acks=all produce, MB/s (median)", "mb_per_s", "{:.2f}", 1),
        ("brokers' CPU while producing, cores", "broker_cores", "{:.2f}", 1),
        ("brokers' CPU per MB, ms", "broker_cpu_s_per_mb", "{:.1f}", 1000),
        ("idle brokers' CPU, % of one core", "idle_broker_core_pct", "{:.1f}", 1),
    )
    for label, key, form, scale in rows:
        table.add_row(label, *(form.format(p[key] * scale) for p in result["phases"]))
    table.add_row("produce runs, MB/s", *(", ".join(f"{r['mb_per_s']:.2f}" for r in p["runs"]) for p in result["phases"]))
    table.add_row(
        "scrape of all Kafka targets: sum / slowest, ms",
        *(
            f"{p['scrape']['sum_s'] * 1000:.0f} / {p['scrape']['max_s'] * 1000:.0f} ({p['scrape']['targets']})"
            if "scrape" in p
            else "-"
            for p in result["phases"]
        ),
    )
    agent_rows = (
        ("one broker's CPU per read of its /metrics, ms", "scrape_cpu_ms", "{:.1f}"),
        ("one read of a broker's /metrics, wall ms", "scrape_wall_ms", "{:.1f}"),
        ("a broker's CPU going to 15 s scrapes while producing, %", "scrape_share_pct", "{:.2f}"),
    )
    for label, key, form in agent_rows:
        table.add_row(label, *(form.format(p[key]) if key in p else "-" for p in result["phases"]))
    console.print(table)
    for name, ratio in result["ratios"].items():
        console.print(
            f"{name} / B (mean of the phases without the agent): "
            + ", ".join(f"{key} {value:.3f}x" for key, value in ratio.items())
        )
    console.print(f"up {result['up_s']:.1f} s; metrics up {result['metrics_up_s']:.1f} s")
    console.print(f"before: {result['situation_before']}\nafter:  {result['situation_after']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of one produce run")
    parser.add_argument("--runs", type=int, default=3, help="produce runs per phase (the median is shown)")
    parser.add_argument("--idle-seconds", type=float, default=30.0, help="the idle window per phase")
    parser.add_argument("--phases", default="ABA", help="A: the brokers' agent on and scraped, B: off (the baseline)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    result = measure(args, console)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, console)


if __name__ == "__main__":
    main()
