"""The Spark verify job on a replicated Apache Kafka cluster (a 3-host sandbox, topics with 3 replicas):
the streaming mode restarted from its checkpoint, `verify --spark` on the swarm's own Spark cluster
(`swarmkit spark up|down`) with tasks on every node, every partition checked through its leader and the
run's page drawn, and last a scale-out (`verify --spark` in local mode through the added broker). One
sandbox for all of Spark: each is a few minutes of a 2-core machine."""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.checks.verify import SPARK_TOPIC, VerifyOptions, verify
from swarmkit.errors import SwarmkitError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import partition_states
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.traffic import spark as sparkjob
from swarmkit.traffic import spark_cluster
from swarmkit.traffic.spark_streaming import StreamOptions, run_streaming_job
from swarmkit.waits import Pause
from tests.integration import browser
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

TOPIC = "sparkv"
STREAM_TOPIC = "stream"
BROKERS = ["sa1:9094", "sa2:9094", "sa3:9094"]
NODES = {"sa1", "sa2", "sa3"}
STACK = spark_cluster.stack_name("kafka")
SWARMKIT = str(Path(sys.executable).with_name("swarmkit"))
ARTIFACTS = Path(__file__).parents[3] / "reports" / "test-artifacts"  # git-ignored
sa = module_sandbox("sa", 3, "10.237.0.0/24", engine="apache", managers=3)


@pytest.fixture(scope="module")
def cluster(sa: sandbox.Sandbox) -> Iterator[Inventory]:
    inventory = load_inventory(sa.inventory_path)
    result = up(plan(inventory, DeployOptions(topics=f"{TOPIC}:6:3,{STREAM_TOPIC}:3:3")), Session.of(inventory))
    assert result.ok, result.deploy.problems
    try:
        yield inventory
    finally:
        with contextlib.suppress(SwarmkitError):
            spark_cluster.spark_down(Session.of(inventory))


def test_a_query_restarted_from_its_checkpoint_sees_every_record_exactly_once(cluster: Inventory, tmp_path: Path) -> None:
    options = StreamOptions(seconds=12, rate=2000, restart_after=4, checkpoint=tmp_path / "checkpoint")
    report = run_streaming_job(BROKERS, STREAM_TOPIC, options, report_path=tmp_path / "report.json")
    assert report.ok, report.failures
    assert report.restarts == 1 and len(report.per_query) == 2 and all(report.per_query), report.per_query
    assert report.produced == report.acked == report.distinct == report.consumed > 0
    assert report.missing == report.duplicates == 0 and report.checksum_ok
    assert report.latency_max_ms >= report.latency_p99_ms >= report.latency_p50_ms > 0
    assert report.records_per_s > 0 and report.batches >= 2
    assert (tmp_path / "checkpoint" / "query" / "commits").is_dir()


def _cli(*args: str, timeout: float = 900) -> dict:
    done = subprocess.run([SWARMKIT, *args, "--json"], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"swarmkit {' '.join(args)}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


def _spark_services(inventory: Inventory) -> list[str]:
    return dockerapi.stack_services(DockerHosts.from_inventory(inventory)[inventory.first_manager], STACK)


@contextlib.contextmanager
def _listening(host: sandbox.SandboxHost, port: int) -> Iterator[None]:
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


def test_bad_input_is_refused_and_changes_nothing(cluster: Inventory, sa: sandbox.Sandbox) -> None:
    with pytest.raises(spark_cluster.SparkClusterError, match="not a manager"):
        spark_cluster.spark_up(Session.of(cluster), master_host="nosuch")
    with pytest.raises(spark_cluster.SparkClusterError, match="is missing on") as missing:
        spark_cluster.spark_up(Session.of(cluster), image=f"{sa.registry}/swarmkit/spark:no-such-tag")
    assert missing.value.hint
    with _listening(sa.hosts[0], spark_cluster.MASTER_PORT):
        with pytest.raises(spark_cluster.SparkClusterError, match=r"port 7077/tcp on sa1 .* already in use"):
            spark_cluster.spark_up(Session.of(cluster))
    assert _spark_services(cluster) == []


def _task_hosts(events: Path) -> Counter[str]:
    """Tasks per host, from the event log Spark wrote beside the report (one SparkListenerTaskEnd per task)."""
    hosts: Counter[str] = Counter()
    for log in events.rglob("events_*"):
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event") == "SparkListenerTaskEnd":
                hosts[event["Task Info"]["Host"]] += 1
    return hosts


def test_the_verify_job_runs_on_the_swarm_with_executors_on_every_node(
    cluster: Inventory, sa: sandbox.Sandbox, tmp_path: Path
) -> None:
    started = time.monotonic()
    deployed = _cli("spark", "up", "-i", sa.inventory_path)
    up_s = time.monotonic() - started
    assert deployed["master_url"] == "spark://sa1:7077" and set(deployed["workers"]) == NODES
    status = sparkjob.master_status("sa1")
    assert status is not None and {w["host"] for w in status["workers"] if w["state"] == "ALIVE"} == NODES

    report_path = tmp_path / "report.json"  # beside the page
    verified = _cli("verify", "-i", sa.inventory_path, "--spark", "--master", deployed["master_url"], "--records", "5000",
                    "--report", str(report_path.with_suffix(".html")))  # fmt: skip
    assert verified["ok"], verified
    assert "per-broker throughput and latency" in report_path.with_suffix(".html").read_text()
    report = json.loads(report_path.read_text())
    assert report["master"] == "spark://sa1:7077"
    assert all(b["ok"] and b["consumed"] == 5000 for b in report["brokers"]), report["brokers"]
    _every_partition_checked_through_its_leader(sparkjob.SparkReport.from_dict(report, 0.0, str(report_path)))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _the_page_shows_every_chart(Path(shutil.copy(report_path.with_suffix(".html"), ARTIFACTS / "verify-spark.html")), NODES)
    tasks = _task_hosts(sparkjob.event_log_dir(report_path))
    assert set(tasks) == NODES, f"tasks ran on {dict(tasks)}"
    finished = sparkjob.master_status("sa1") or {}
    assert any(app["name"] == "swarmkit-verify" for app in finished.get("completedapps", []))
    print(f"\nspark up {up_s:.1f} s; job {report['elapsed_s']} s, {report['records_per_s']} records/s; tasks {dict(tasks)}")

    removed = _cli("spark", "down", "-i", sa.inventory_path)
    assert sorted(removed["removed"]) == [f"{STACK}_master", f"{STACK}_worker"]
    assert _spark_services(cluster) == []
    assert sparkjob.master_status("sa1") is None


def _every_partition_checked_through_its_leader(job: sparkjob.SparkReport) -> None:
    """Each broker's line of the job covers exactly the partitions it leads, each checked in full."""
    leaders = {p.partition: p.leader for p in partition_states(BROKERS[0])[1] if p.topic == SPARK_TOPIC}
    assert set(leaders.values()) == {1, 2, 3}, "the test needs leaders on every broker"
    checked = []
    for broker in job.brokers:
        assert broker.reachable and broker.produced == broker.consumed and broker.checksum_ok
        assert {p.partition for p in broker.partitions} == {p for p, node in leaders.items() if node == broker.node_id}
        assert all(p.ok and p.consumed == p.expected > 0 for p in broker.partitions)
        assert broker.latency_p99_ms >= broker.latency_p50_ms > 0
        checked += [p.partition for p in broker.partitions]
    assert sorted(checked) == sorted(leaders)
    assert job.write_s > 0 and job.read_s > 0 and job.check_s > 0


def _the_page_shows_every_chart(page: Path, nodes: set[str]) -> None:
    """Opened in chromium: a bar per broker and series in the DOM, each series' colour on the screenshot, which
    is kept beside the page."""
    opened = browser.open_page(page, page.with_suffix(".png"))
    assert set(re.findall(r'<g class="node" data-node="([^"]*)" data-verdict="ok"', opened.dom)) == nodes
    drawn = Counter(re.findall(r'<rect class="bar" data-series="([^"]*)"', opened.dom))
    assert drawn == {s: len(nodes) for s in ("produce", "consume", "p50", "p99", "metadata request", "leaders", "replicas")}
    for colour in ("#1565c0", "#6a1b9a", "#00838f", "#ef6c00", "#455a64", "#9e9d24"):
        assert opened.colours[browser.rgb(colour)] > 100, f"{colour} is not on the screenshot {opened.screenshot}"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def _prometheus_series(url: str, query: str) -> dict[str, float]:
    """node -> value of a query's series, as Prometheus on the swarm answers it now."""
    with urllib.request.urlopen(f"{url}api/v1/query?{urllib.parse.urlencode({'query': query})}", timeout=5) as answer:
        results = json.loads(answer.read())["data"]["result"]
    return {r["metric"].get("node", ""): float(r["value"][1]) for r in results}


def test_verify_every_serves_its_verdicts_to_prometheus_on_the_swarm(cluster: Inventory, sa: sandbox.Sandbox) -> None:
    """The loop on this machine, Prometheus on sa1 scraping it through the node's route to the sandbox gateway."""
    port = _free_port()
    loop = subprocess.Popen(
        [SWARMKIT, "verify", "-i", sa.inventory_path, "--every", "10", "--rounds", "12",
         "--metrics-port", str(port), "--metrics-address", sa.gateway],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        target = f"{sa.gateway}:{port}"
        server = _cli("metrics", "up", "-i", sa.inventory_path, "--verify-target", target, "--scrape-interval", "5")
        deadline, pause, seen = time.monotonic() + 90, Pause(), {}
        while seen != dict.fromkeys(NODES, 1.0) and time.monotonic() < deadline:
            pause.sleep()
            seen = _prometheus_series(server["url"], 'swarmkit_verify_broker_reachable{job="swarmkit-verify"}')
        assert seen == dict.fromkeys(NODES, 1.0), f"reachability series in Prometheus: {seen}"
        assert _prometheus_series(server["url"], "swarmkit_verify_broker_advertised_match") == dict.fromkeys(NODES, 1.0)
        latency = _prometheus_series(server["url"], "swarmkit_verify_broker_metadata_latency_seconds")
        assert set(latency) == NODES and all(0 < s < 10 for s in latency.values()), latency
        assert _prometheus_series(server["url"], "swarmkit_verify_ok") == {"": 1.0}
    finally:
        loop.send_signal(signal.SIGINT)  # as Ctrl-C: the loop stops between or within a round
        _, said = loop.communicate(timeout=60)
        _cli("metrics", "down", "-i", sa.inventory_path, "--purge")
    assert "round 1: ok" in said, said[-2000:]


def test_after_scale_out_verify_spark_sends_traffic_through_the_new_broker(cluster: Inventory, sa: sandbox.Sandbox) -> None:
    """The scratch topic made for 3 brokers has no leader on a 4th: verify makes it again for 4."""
    sandbox.add_node("sa")
    grown = load_inventory(sa.inventory_path)
    assert up(plan(grown, DeployOptions(topics=f"{TOPIC}:6:3")), Session.of(grown)).ok
    report = verify(Session.of(grown), VerifyOptions(spark=True, spark_records=5000))
    assert report.ok, report.to_dict()
    assert report.spark is not None and sorted(b.broker for b in report.spark.brokers) == [*BROKERS, "sa4:9094"]
    assert all(b.consumed == 5000 and b.partitions for b in report.spark.brokers)
