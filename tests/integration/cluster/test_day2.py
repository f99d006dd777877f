"""Day-2 operations on a replicated Apache Kafka cluster (3 hosts, three managers), through the runbooks.

In order on one cluster: `status` reads it; bad input to roll/down/status changes nothing; `metrics up`
scrapes every broker and controller, a stopped broker raises the broker-down alert, `metrics down --purge`
leaves nothing behind; a full
`roll` (a changed broker setting) under an acks=all producer loses and duplicates nothing,
replaces every broker container and leaves the controllers alone; `down` then `up` brings the
same cluster back (same broker ids and cluster id, every record); `down --purge-data` removes the
volumes and the kept labels.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from swarmkit.checks.status import status
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import broker_metadata, ensure_topics
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.stack.topics import TopicSpec
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, producer_config, read_everything
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

NAME = "d2"
TOPICS = "orders:6:3"
ROOT = Path(__file__).resolve().parents[3]
RUNBOOKS = ROOT / "scripts" / "runbooks"
SWARMKIT = str(ROOT / ".venv" / "bin" / "swarmkit")
d2 = module_sandbox(NAME, 3, "10.239.0.0/24", engine="apache", managers=3)


@pytest.fixture(scope="module")
def cluster(d2: sandbox.Sandbox) -> Inventory:
    inventory = load_inventory(d2.inventory_path)
    assert up(plan(inventory, DeployOptions(topics=TOPICS)), Session.of(inventory)).ok
    return inventory


def run(*command: object, timeout: float = 300) -> subprocess.CompletedProcess:
    args = [str(part) for part in command]
    started = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - started
    print(f"$ {' '.join(args)}: exit {done.returncode} after {took:.1f} s\n{done.stdout}{done.stderr}")
    return done


def containers(inventory: Inventory, service: str) -> dict[str, str]:
    """Running container of a service per swarm node."""
    state = dockerapi.service_state(DockerHosts.from_inventory(inventory)[inventory.first_manager], f"kafka_{service}")
    assert state is not None
    return {t.node_id: t.container_id for t in state.tasks if t.state == "running"}


def stack_left(inventory: Inventory, label: str) -> dict[str, int]:
    docker = DockerHosts.from_inventory(inventory)
    return {h.name: dockerapi.labelled_containers(docker[h], label) for h in inventory.hosts}


def test_status_shows_nodes_brokers_controllers_and_topics(cluster: Inventory) -> None:
    started = time.monotonic()
    report = status(Session.of(cluster))
    print(f"status read in {time.monotonic() - started:.2f} s")
    assert report.ok, report.kafka_error
    assert [(n.host, n.role, n.availability, n.broker_id) for n in report.nodes] == [
        ("d21", "manager", "active", 1),
        ("d22", "manager", "active", 2),
        ("d23", "manager", "active", 3),
    ]
    assert {(b.broker_id, b.advertised, b.registered, b.task) for b in report.brokers} == {
        (i, f"d2{i}:9094", True, "running") for i in (1, 2, 3)
    }
    assert report.quorum is not None and report.quorum.leader in (9001, 9002, 9003)
    orders = next(t for t in report.topics if t.topic == "orders")
    assert (orders.partitions, orders.replication_factor, orders.under_replicated, orders.offline) == (6, 3, 0, 0)
    done = run(RUNBOOKS / "status.sh", cluster.path)
    assert done.returncode == 0 and "HEALTHY" in done.stdout


def test_bad_input_is_refused_and_changes_nothing(cluster: Inventory) -> None:
    before = containers(cluster, "broker")
    refusals = [
        (["roll", "--set", "listeners=PLAINTEXT://:1"], 2, "set by swarmkit"),
        (["roll", "--set", "node.id=7"], 2, "set by swarmkit"),
        (["roll", "--image", "Not An Image"], 2, "not a valid image reference"),
        (["roll", "--node", "nowhere"], 2, "not in the inventory"),
        (["roll", "--stack", "nope"], 1, "not deployed"),
        (["down", "--purge-data"], 2, "--yes"),
        (["down", "--stack", "nope"], 1, "not deployed"),
        (["status", "--stack", "nope"], 1, "not deployed"),
    ]
    for args, code, message in refusals:
        done = run(SWARMKIT, args[0], "-i", cluster.path, *args[1:])
        assert done.returncode == code and message in done.stderr, args
    assert containers(cluster, "broker") == before


def prometheus(url: str, path: str, **query: str) -> list:
    """The ``data`` of one Prometheus API call: a query's result, the alerts, or the rule groups."""
    with urllib.request.urlopen(f"{url}api/v1/{path}?{urllib.parse.urlencode(query)}", timeout=5) as response:
        data = json.loads(response.read())["data"]
    return next(data[key] for key in ("result", "alerts", "groups") if key in data)


def wait_for(what: str, check, timeout: float, every: float = 2.0):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(every)
    return found


@pytest.fixture(scope="module")
def metrics_url(cluster: Inventory) -> str:
    done = run(SWARMKIT, "metrics", "up", "-i", cluster.path, "--json", timeout=600)
    assert done.returncode == 0
    return json.loads(done.stdout)["url"]


def test_metrics_up_scrapes_every_broker_and_controller(cluster: Inventory, metrics_url: str) -> None:
    started = time.monotonic()

    def scraped() -> dict[str, int]:
        jobs: dict[str, int] = {}
        for series in prometheus(metrics_url, "query", query='up{job=~"kafka-.*"} == 1'):
            jobs[series["metric"]["job"]] = jobs.get(series["metric"]["job"], 0) + 1
        return jobs if jobs == {"kafka-broker": 3, "kafka-controller": 3} else {}

    wait_for("3 brokers and 3 controllers scraped", scraped, 180)
    print(f"every target up {time.monotonic() - started:.1f} s after metrics up")
    brokers = prometheus(metrics_url, "query", query="kafka_server_replicamanager_partitioncount")
    assert len(brokers) == 3 and all(s["metric"]["service"] == "kafka_broker" for s in brokers)
    ids = prometheus(metrics_url, "query", query="kafka_server_app_info_start_time_ms")
    assert sorted(int(s["metric"]["node_id"]) for s in ids) == [1, 2, 3, 9001, 9002, 9003]
    active = prometheus(
        metrics_url, "query", query='sum(kafka_controller_kafkacontroller_activecontrollercount{job="kafka-controller"})'
    )
    assert active[0]["value"][1] == "1"
    rules = {rule["name"] for group in prometheus(metrics_url, "rules") for rule in group["rules"]}
    assert {"KafkaBrokerDown", "KafkaUnderReplicatedPartitions", "KafkaOfflinePartitions"} <= rules


def test_a_stopped_broker_raises_the_broker_down_alert(cluster: Inventory, metrics_url: str) -> None:
    docker = DockerHosts.from_inventory(cluster)
    host = cluster.hosts[2]
    node = next(n.id for n in dockerapi.swarm_nodes(docker[cluster.first_manager]) if n.labels.get("swarmkit.host") == host.name)
    container = containers(cluster, "broker")[node]
    started = time.monotonic()
    dockerapi.stop_container(docker[host], container, 60)

    def broker_down() -> list[str]:
        alerts = prometheus(metrics_url, "alerts")
        return [a["state"] for a in alerts if a["labels"]["alertname"] == "KafkaBrokerDown"]

    states = wait_for("KafkaBrokerDown pending or firing", broker_down, 60 - (time.monotonic() - started), every=1.0)
    print(f"KafkaBrokerDown {states} {time.monotonic() - started:.1f} s after the broker was stopped")
    wait_for("the cluster healthy again", lambda: run(RUNBOOKS / "status.sh", cluster.path).returncode == 0, 300, every=5)
    wait_for("KafkaBrokerDown cleared", lambda: not broker_down(), 120)
    print(f"healthy and cleared {time.monotonic() - started:.1f} s after the stop")


def test_metrics_down_with_purge_leaves_nothing_behind(cluster: Inventory, metrics_url: str) -> None:
    done = run(SWARMKIT, "metrics", "down", "-i", cluster.path, "--purge", "--json")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["removed"] == ["kafka-metrics_prometheus"] and report["volumes"] == ["kafka-metrics_data"]
    manager = DockerHosts.from_inventory(cluster)[cluster.first_manager]
    assert dockerapi.stack_services(manager, "kafka-metrics") == []
    assert dockerapi.stack_leftovers(manager, "kafka-metrics") == []
    assert stack_left(cluster, "com.docker.stack.namespace=kafka-metrics") == {"d21": 0, "d22": 0, "d23": 0}
    assert dockerapi.remove_labelled_volumes(manager, "com.docker.stack.namespace=kafka-metrics") == []


def test_a_full_roll_under_acks_all_loses_and_duplicates_nothing(cluster: Inventory) -> None:
    assert ensure_topics("d21:9094", [TopicSpec("acks", 6, 3)])[0].ok
    brokers, controllers = containers(cluster, "broker"), [containers(cluster, f"controller-{i}") for i in (1, 2, 3)]
    producer = CountingProducer("d21:9094,d22:9094,d23:9094", "acks", rate_per_s=200).start()
    try:
        producer.acked_after(500, timeout=120)
        done = run(RUNBOOKS / "roll.sh", cluster.path, "--", "--set", "log.retention.hours=100", timeout=1200)
        assert done.returncode == 0 and "rolled in" in done.stdout
        producer.acked_after(500, timeout=120)
    finally:
        producer.stop()
    found = read_everything("d21:9094", "acks", 6)
    lost, duplicated = lost_and_duplicated(producer.acknowledged, found)
    print(
        f"roll: {producer.sent} produced, {len(producer.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated"
    )
    assert (lost, duplicated) == ([], [])
    after = containers(cluster, "broker")
    assert set(after) == set(brokers) and all(after[node] != brokers[node] for node in brokers), "a broker was not replaced"
    assert [containers(cluster, f"controller-{i}") for i in (1, 2, 3)] == controllers, "a controller was restarted"


def test_a_broker_that_does_not_come_back_stops_the_roll_and_the_rest_keep_serving(cluster: Inventory) -> None:
    before = containers(cluster, "broker")
    done = run(SWARMKIT, "roll", "-i", cluster.path, "--set", "num.network.threads=many", "--timeout", "40", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    (failed,) = report["brokers"]
    assert not failed["ok"] and len(report["not_rolled"]) == 2 and report["held"]
    assert f"the broker on {failed['node']} did not come back" in done.stderr
    after = containers(cluster, "broker")
    assert sum(after.get(node) == container for node, container in before.items()) == 2
    assert "docker service rollback kafka_broker" in report["hint"]
    manager = cluster.first_manager.endpoint
    assert run("docker", "-H", manager, "service", "rollback", "--detach", "kafka_broker").returncode == 0
    deadline = time.monotonic() + 300
    while run(RUNBOOKS / "status.sh", cluster.path).returncode != 0:
        assert time.monotonic() < deadline, "the cluster did not heal after the rollback"
        time.sleep(5)


def test_down_then_up_brings_the_same_cluster_back_with_its_data(cluster: Inventory) -> None:
    assert ensure_topics("d21:9094", [TopicSpec("kept", 3, 3)])[0].ok
    producer = Producer(producer_config("d21:9094"))
    for number in range(1000):
        producer.produce("kept", str(number).encode())
    assert producer.flush(60) == 0
    before = broker_metadata("d21:9094")
    done = run(RUNBOOKS / "down.sh", cluster.path)
    assert done.returncode == 0 and "kept:" in done.stdout
    assert stack_left(cluster, "com.docker.stack.namespace=kafka") == {"d21": 0, "d22": 0, "d23": 0}
    started = time.monotonic()
    assert up(plan(cluster, DeployOptions(topics=TOPICS)), Session.of(cluster)).ok
    print(f"up after down: {time.monotonic() - started:.1f} s")
    after = broker_metadata("d21:9094")
    assert after.cluster_id == before.cluster_id
    assert [(b.node_id, b.endpoint) for b in after.brokers] == [(b.node_id, b.endpoint) for b in before.brokers]
    found = read_everything("d21:9094", "kept", 3)
    assert sorted(found) == list(range(1000)) and set(found.values()) == {1}


def test_down_with_purge_removes_volumes_and_kept_labels(cluster: Inventory) -> None:
    """With Prometheus watching (it holds the stack's network), `down` removes it first."""
    assert run(SWARMKIT, "metrics", "up", "-i", cluster.path, "--json", timeout=600).returncode == 0
    done = run(RUNBOOKS / "down.sh", cluster.path, "--purge-data")
    assert done.returncode == 0 and "purged" in done.stdout
    docker = DockerHosts.from_inventory(cluster)
    manager = docker[cluster.first_manager]
    assert dockerapi.stack_services(manager, "kafka-metrics") == dockerapi.stack_leftovers(manager, "kafka") == []
    for host in cluster.hosts:
        assert dockerapi.remove_labelled_volumes(docker[host], "com.docker.stack.namespace=kafka") == [], host.name
    for node in dockerapi.swarm_nodes(docker[cluster.first_manager]):
        assert not [label for label in node.labels if label.startswith(("swarmkit.broker-id", "swarmkit.cluster-id"))]
    again = run(SWARMKIT, "down", "-i", cluster.path)
    assert again.returncode == 1 and "not deployed" in again.stderr
