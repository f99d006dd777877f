"""`swarmkit spark up|down` on a 3-host sandbox with Apache Kafka: the verify job on the swarm's own Spark
cluster, with tasks on every node, then the cluster removed; bad input first, changing nothing."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.cluster import spark as sparkjob
from swarmkit.cluster import spark_cluster
from swarmkit.cluster.deploy import DeployOptions, up
from swarmkit.errors import SwarmkitError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.sandbox import hosts as sandbox
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

TOPIC = "sparkc"
NODES = {"sc1", "sc2", "sc3"}
STACK = spark_cluster.stack_name("kafka")
SWARMKIT = str(Path(sys.executable).with_name("swarmkit"))
sc = module_sandbox("sc", 3, "10.234.0.0/24", engine="apache", managers=3)


@pytest.fixture(scope="module")
def cluster(sc: sandbox.Sandbox) -> Iterator[Inventory]:
    inventory = load_inventory(sc.inventory_path)
    result = up(inventory, DeployOptions(topics=f"{TOPIC}:6:3"))
    assert result.ok, result.deploy.problems
    try:
        yield inventory
    finally:
        with contextlib.suppress(SwarmkitError):
            spark_cluster.spark_down(inventory)


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


def test_bad_input_is_refused_and_changes_nothing(cluster: Inventory, sc: sandbox.Sandbox) -> None:
    with pytest.raises(spark_cluster.SparkClusterError, match="not a manager"):
        spark_cluster.spark_up(cluster, master_host="nosuch")
    with pytest.raises(spark_cluster.SparkClusterError, match="is missing on") as missing:
        spark_cluster.spark_up(cluster, image=f"{sc.registry}/swarmkit/spark:no-such-tag")
    assert missing.value.hint
    with _listening(sc.hosts[0], spark_cluster.MASTER_PORT):
        with pytest.raises(spark_cluster.SparkClusterError, match=r"port 7077/tcp on sc1 .* already in use"):
            spark_cluster.spark_up(cluster)
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
    cluster: Inventory, sc: sandbox.Sandbox, tmp_path: Path
) -> None:
    started = time.monotonic()
    deployed = _cli("spark", "up", "-i", sc.inventory_path)
    up_s = time.monotonic() - started
    assert deployed["master_url"] == "spark://sc1:7077" and set(deployed["workers"]) == NODES
    status = sparkjob.master_status("sc1")
    assert status is not None and {w["host"] for w in status["workers"] if w["state"] == "ALIVE"} == NODES

    report_path = tmp_path / "report.json"
    verified = _cli("verify", "-i", sc.inventory_path, "--spark", "--master", deployed["master_url"], "--records", "5000",
                    "--report", str(report_path))  # fmt: skip
    assert verified["ok"], verified
    report = json.loads(report_path.read_text())
    assert report["master"] == "spark://sc1:7077"
    assert all(b["ok"] and b["consumed"] == 5000 for b in report["brokers"]), report["brokers"]
    tasks = _task_hosts(sparkjob.event_log_dir(report_path))
    assert set(tasks) == NODES, f"tasks ran on {dict(tasks)}"
    finished = sparkjob.master_status("sc1") or {}
    assert any(app["name"] == "swarmkit-verify" for app in finished.get("completedapps", []))
    print(f"\nspark up {up_s:.1f} s; job {report['elapsed_s']} s, {report['records_per_s']} records/s; tasks {dict(tasks)}")

    removed = _cli("spark", "down", "-i", sc.inventory_path)
    assert sorted(removed["removed"]) == [f"{STACK}_master", f"{STACK}_worker"]
    assert _spark_services(cluster) == []
    assert sparkjob.master_status("sc1") is None
