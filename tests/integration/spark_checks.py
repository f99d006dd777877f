"""What the Spark tests on a replicated cluster read back (test_real_kafka): the job's report checked partition
by partition, its page in chromium, its tasks per host, and Prometheus's view of `verify --every`."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from swarmkit.checks.verify import SPARK_TOPIC
from swarmkit.kafka.admin import partition_states
from swarmkit.sandbox.state import SandboxHost
from swarmkit.traffic.spark import SparkReport
from tests.integration import browser

ARTIFACTS = Path(__file__).parents[2] / "reports" / "test-artifacts"  # git-ignored


@contextlib.contextmanager
def listening(host: SandboxHost, port: int) -> Iterator[None]:
    """Something else holding a port on a sandbox host (a process in its network namespace), stopped afterwards."""
    code = (
        f"import socket,time; s=socket.socket(); s.bind(('0.0.0.0',{port})); s.listen(); print('up',flush=True); time.sleep(120)"
    )
    process = subprocess.Popen(
        ["nsenter", f"--net=/var/run/netns/{host.netns}", sys.executable, "-c", code], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "up"
        yield
    finally:
        process.kill()
        process.wait()


def task_hosts(events: Path) -> Counter[str]:
    """Tasks per host, from the event log Spark wrote beside the report (one SparkListenerTaskEnd per task)."""
    hosts: Counter[str] = Counter()
    for log in events.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                hosts[event["Task Info"]["Host"]] += 1
    return hosts


def every_partition_checked_through_its_leader(job: SparkReport, bootstrap: str) -> None:
    """Each broker's line of the job covers exactly the partitions of verify's topic it leads, each checked in full."""
    leaders = {p.partition: p.leader for p in partition_states(bootstrap)[1] if p.topic == SPARK_TOPIC}
    assert set(leaders.values()) == {b.node_id for b in job.brokers}, "the test needs leaders on every broker"
    checked = []
    for broker in job.brokers:
        assert broker.reachable and broker.produced == broker.consumed and broker.checksum_ok
        assert {p.partition for p in broker.partitions} == {p for p, node in leaders.items() if node == broker.node_id}
        assert all(p.ok and p.consumed == p.expected > 0 for p in broker.partitions)
        assert broker.latency_p99_ms >= broker.latency_p50_ms > 0
        checked += [p.partition for p in broker.partitions]
    assert sorted(checked) == sorted(leaders)
    assert job.write_s > 0 and job.read_s > 0 and job.check_s > 0


def page_shows_every_chart(page: Path, nodes: set[str]) -> None:
    """Opened in chromium: a bar per broker and series in the DOM, each series' colour on the screenshot, which
    is kept beside the page."""
    opened = browser.open_page(page, page.with_suffix(".png"))
    assert set(re.findall(r'<g class="node" data-node="([^"]*)" data-verdict="ok"', opened.dom)) == nodes
    drawn = Counter(re.findall(r'<rect class="bar" data-series="([^"]*)"', opened.dom))
    drawn.pop("lag", None)  # one per consumer group and topic, if any group committed
    series = ("produce", "consume", "p50", "p99", "metadata request", "leaders", "replicas", "log directory", "free")
    assert drawn == {s: len(nodes) for s in series}
    for colour in ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#455a64", "#9e9d24"):
        assert opened.colours[browser.rgb(colour)] > 100, f"{colour} is not on the screenshot {opened.screenshot}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def prometheus_series(url: str, query: str) -> dict[str, float]:
    """node -> value of a query's series, as Prometheus on the swarm answers it now."""
    with urllib.request.urlopen(f"{url}api/v1/query?{urllib.parse.urlencode({'query': query})}", timeout=5) as answer:
        results = json.loads(answer.read())["data"]["result"]
    return {r["metric"].get("node", ""): float(r["value"][1]) for r in results}
