"""Zones and the declared state on one replicated cluster: 6 hosts in 3 zones (2 each), one manager and its
controller, Apache Kafka brokers with small heaps, everything declared in the inventory's `stack:` block.

In order: `up` gives every broker its host's zone as broker.rack and every 3-replica partition one replica per
zone; `plan` on the unchanged cluster says "no changes" (exit 0); a hand-made change is drift for `verify` and
a change for `plan`; a retention edited in the inventory is exactly one change, which `up` applies live under
acks=all traffic (no broker task replaced, nothing lost or duplicated); `rebalance` spreads a topic created
with two replicas in one zone over the three zones; a declared producer quota is one change for `plan`, which `up`
applies with no broker restarted, and throttles its client to the quota; removed from the inventory, it is removed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka.admin import AdminClient, NewTopic

from swarmkit.checks.verify import VerifyOptions, verify
from swarmkit.errors import BrokerError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.ops.deploy import DeployResult, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox.state import Sandbox
from tests.integration.kafka_traffic import CountingProducer, acknowledged_rate, lost_and_duplicated, read_everything
from tests.integration.sandboxes import module_sandbox

pytestmark = [pytest.mark.integration, pytest.mark.timeout(1800)]  # six brokers start on a loaded 2-core machine

NAME = "zn"
ZONES = ("a", "a", "b", "b", "c", "c")
WEEK, DAY, HOUR = "604800000", "86400000", "3600000"
ROOT = Path(__file__).resolve().parents[3]
BOOTSTRAP = f"{NAME}1:9094"
ADMIN_TIMEOUT = 30.0  # six brokers on a loaded 2-core machine answer slowly
QUOTA = 262144  # 256 KB/s: well below what one client gets from this cluster unthrottled
zn = module_sandbox(NAME, 6, "10.211.0.0/24", engine="apache", managers=1)


def declare(path: str, retention: str, quotas: list[dict] | None = None) -> None:
    """The sandbox's inventory with zones on its hosts and the declared state in its stack block (``quotas``:
    its client quotas; None leaves them as they are)."""
    document = yaml.safe_load(Path(path).read_text())
    for host, zone in zip(document["hosts"], ZONES):
        host["labels"] = {**host.get("labels", {}), "zone": zone}
    stack = document.setdefault("stack", {})
    if quotas is not None:
        stack["quotas"] = quotas
    stack.update(
        {
            "broker_env": {"KAFKA_HEAP_OPTS": "-Xmx256m -Xms256m", "KAFKA_NUM_IO_THREADS": 2},
            "topics": [
                {"name": "orders", "partitions": 6, "replicas": 3, "configs": {"retention.ms": int(retention)}},
                {"name": "spread", "partitions": 12, "replicas": 3},
            ],
        }
    )
    Path(path).write_text(yaml.safe_dump(document, sort_keys=False))


@pytest.fixture(scope="module")
def deployed(zn: Sandbox) -> tuple[Inventory, DeployResult]:
    declare(zn.inventory_path, WEEK)
    inventory = load_inventory(zn.inventory_path)
    started = time.monotonic()
    result = up(plan(inventory, DeployOptions(timeout=1200)), Session.of(inventory), preflight=None).deploy  # tested elsewhere
    print(f"up of 6 brokers in 3 zones: {time.monotonic() - started:.1f} s")
    assert result.ok, result.problems
    return inventory, result


def swarmkit(*arguments: str, timeout: float = 600) -> subprocess.CompletedProcess:
    command = [sys.executable, "-c", "from swarmkit.cli import main; main()", *arguments]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})
    print(
        f"$ swarmkit {' '.join(arguments)}: exit {done.returncode} after {time.monotonic() - started:.1f} s\n{done.stdout}{done.stderr}"
    )
    return done


def partitions_by_zone(racks: dict[int, str], topic: str, count: int) -> list[set[str]]:
    """The zones of each partition's replicas, once the first broker's metadata lists all ``count`` partitions
    (a busy broker learns a topic made through another a moment later, and may answer slowly)."""
    deadline = time.monotonic() + 120
    while True:
        try:
            found = admin.broker_metadata(BOOTSTRAP, ADMIN_TIMEOUT).topic(topic)
        except BrokerError:
            found = None
        if found is not None and found.partition_count == count or time.monotonic() > deadline:
            assert found is not None, f"{BOOTSTRAP} does not list topic {topic}"
            return [{racks[r] for r in p.replicas} for p in found.partitions]
        time.sleep(0.5)


def broker_tasks(inventory: Inventory) -> set[str]:
    """Every task the broker service ever had (a restarted broker is a new task)."""
    state = dockerapi.service_state(DockerHosts.from_inventory(inventory)[inventory.first_manager], "kafka_broker")
    assert state is not None
    return {task.id for task in state.tasks}


def test_each_broker_is_in_its_hosts_zone_and_each_partition_in_every_zone(deployed: tuple[Inventory, DeployResult]) -> None:
    inventory, result = deployed
    racks = admin.KafkaAdmin(BOOTSTRAP, timeout=ADMIN_TIMEOUT).broker_racks()
    assert racks == {node.broker_id: inventory.zones[node.host] for node in result.nodes}
    for topic, count in (("orders", 6), ("spread", 12)):
        assert partitions_by_zone(racks, topic, count) == [{"a", "b", "c"}] * count


def test_plan_on_the_unchanged_cluster_says_no_changes(deployed: tuple[Inventory, DeployResult]) -> None:
    done = swarmkit("plan", "-i", deployed[0].path)
    assert (done.returncode, done.stdout) == (0, "no changes\n")


def test_a_setting_changed_by_hand_is_drift_for_verify_and_a_change_for_plan(deployed: tuple[Inventory, DeployResult]) -> None:
    inventory, _ = deployed
    admin.KafkaAdmin(BOOTSTRAP, timeout=ADMIN_TIMEOUT).alter_topic_configs({"orders": {"retention.ms": HOUR}})
    report = verify(Session.of(inventory), VerifyOptions(budget=180, timeout=15))
    (orders,) = [t for t in report.topics if t.topic == "orders"]
    assert not orders.ok and f"drift: retention.ms={HOUR}, declared {WEEK}" in orders.detail
    done = swarmkit("plan", "-i", inventory.path, "--json")
    assert done.returncode == 3
    assert [t["line"] for t in json.loads(done.stdout)["topics"]] == [f"alter topic orders: retention.ms {HOUR} -> {WEEK}"]
    admin.KafkaAdmin(BOOTSTRAP, timeout=ADMIN_TIMEOUT).alter_topic_configs({"orders": {"retention.ms": WEEK}})


def test_an_edited_retention_is_exactly_one_change_and_up_applies_it_live(deployed: tuple[Inventory, DeployResult]) -> None:
    inventory, _ = deployed
    declare(inventory.path, DAY)
    done = swarmkit("plan", "-i", inventory.path)
    assert (done.returncode, done.stdout) == (3, f"alter topic orders: retention.ms {WEEK} -> {DAY}\n")
    as_json = json.loads(swarmkit("plan", "-i", inventory.path, "--json").stdout)
    assert [t["line"] for t in as_json["topics"]] == [f"alter topic orders: retention.ms {WEEK} -> {DAY}"]
    assert (as_json["rolls"], as_json["restarts"]) == ([], [])
    before = broker_tasks(inventory)
    producer = CountingProducer(BOOTSTRAP, "orders", rate_per_s=200).start()
    producer.acked_after(200, timeout=60)
    applied = swarmkit("up", "-i", inventory.path, "--skip-preflight", "--json", timeout=900)
    producer.acked_after(200, timeout=60)
    producer.stop()
    assert applied.returncode == 0
    assert json.loads(applied.stdout)["altered"] == [f"alter topic orders: retention.ms {WEEK} -> {DAY}"]
    assert broker_tasks(inventory) == before
    assert admin.KafkaAdmin(BOOTSTRAP, timeout=ADMIN_TIMEOUT).topic_configs(["orders"])["orders"]["retention.ms"] == DAY
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything(BOOTSTRAP, "orders", 6))
    print(f"up applying a retention: {len(producer.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated")
    assert (lost, duplicated) == ([], [])
    assert swarmkit("plan", "-i", inventory.path).stdout == "no changes\n"


def test_rebalance_spreads_a_partition_held_twice_in_one_zone(deployed: tuple[Inventory, DeployResult]) -> None:
    inventory, result = deployed
    by_zone = {zone: [n.broker_id for n in result.nodes if inventory.zones[n.host] == zone] for zone in "abc"}
    skewed = [[*by_zone["a"], by_zone["b"][0]], [*by_zone["b"], by_zone["c"][0]], [*by_zone["c"], by_zone["a"][0]]]
    client = AdminClient({"bootstrap.servers": BOOTSTRAP})
    client.create_topics([NewTopic("skewed", num_partitions=3, replica_assignment=skewed)])["skewed"].result(30)
    racks = admin.KafkaAdmin(BOOTSTRAP, timeout=ADMIN_TIMEOUT).broker_racks()
    assert all(len(zones) == 2 for zones in partitions_by_zone(racks, "skewed", 3))
    producer = CountingProducer(BOOTSTRAP, "skewed", rate_per_s=200).start()
    producer.acked_after(200, timeout=60)
    done = swarmkit("rebalance", "-i", inventory.path, "--topics", "skewed", "--json")
    producer.acked_after(200, timeout=60)
    producer.stop()
    assert done.returncode == 0
    assert partitions_by_zone(racks, "skewed", 3) == [{"a", "b", "c"}] * 3
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything(BOOTSTRAP, "skewed", 3))
    assert (lost, duplicated) == ([], [])


def test_a_declared_producer_quota_throttles_its_client_and_a_removed_one_is_removed(
    deployed: tuple[Inventory, DeployResult],
) -> None:
    inventory, _ = deployed
    client = AdminClient({"bootstrap.servers": BOOTSTRAP})
    client.create_topics([NewTopic("throttled", num_partitions=1, replication_factor=1)])["throttled"].result(30)
    declare(inventory.path, DAY, [{"client_id": "throttled", "producer_byte_rate": QUOTA}])
    line = f"quotas of client-id throttled: producer_byte_rate (unset) -> {QUOTA}"
    pending = swarmkit("plan", "-i", inventory.path, "--json")
    assert pending.returncode == 3 and [q["line"] for q in json.loads(pending.stdout)["quotas"]] == [line]
    before = broker_tasks(inventory)
    applied = swarmkit("up", "-i", inventory.path, "--skip-preflight", "--json", timeout=900)
    assert applied.returncode == 0 and line in json.loads(applied.stdout)["altered"]
    assert broker_tasks(inventory) == before
    done = swarmkit("plan", "-i", inventory.path)
    assert (done.returncode, done.stdout) == (0, "no changes\n")
    throttled = acknowledged_rate(BOOTSTRAP, "throttled", "throttled", skip_s=15, measure_s=30)
    print(f"producer over its {QUOTA} B/s quota: {throttled:.0f} B/s ({throttled / QUOTA:.0%} of the quota)")
    assert 0.8 * QUOTA <= throttled <= 1.2 * QUOTA

    declare(inventory.path, DAY, [])
    removal = swarmkit("plan", "-i", inventory.path)
    assert (removal.returncode, removal.stdout) == (
        3,
        f"quotas of client-id throttled: producer_byte_rate {QUOTA} -> (removed)\n",
    )
    assert swarmkit("up", "-i", inventory.path, "--skip-preflight", timeout=900).returncode == 0
    assert swarmkit("plan", "-i", inventory.path).stdout == "no changes\n"
    free = acknowledged_rate(BOOTSTRAP, "throttled", "throttled", skip_s=2, measure_s=10)
    print(f"the same producer with its quota removed: {free:.0f} B/s")
    assert free > 2 * QUOTA
