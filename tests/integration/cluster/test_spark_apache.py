"""The Spark verify job on a replicated Apache Kafka cluster: a 3-host sandbox, topics with 3 replicas."""

from __future__ import annotations

import pytest

from swarmkit.cluster.deploy import DeployOptions, up
from swarmkit.cluster.kafka import partition_states
from swarmkit.cluster.spark import run_verify_job
from swarmkit.cluster.verify import VerifyOptions, verify
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.sandbox import hosts as sandbox
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

TOPIC = "sparkv"
BROKERS = ["sa1:9094", "sa2:9094", "sa3:9094"]
sa = module_sandbox("sa", 3, "10.237.0.0/24", engine="apache", managers=3)


@pytest.fixture(scope="module")
def cluster(sa: sandbox.Sandbox) -> Inventory:
    inventory = load_inventory(sa.inventory_path)
    result = up(inventory, DeployOptions(topics=f"{TOPIC}:6:3"))
    assert result.ok, result.deploy.problems
    return inventory


def test_the_job_checks_every_partition_through_its_leader(cluster: Inventory, tmp_path) -> None:
    report = run_verify_job(BROKERS, TOPIC, records=20_000, report_path=tmp_path / "r.json", timeout=600)
    assert report.ok, report.failures
    leaders = {p.partition: p.leader for p in partition_states(BROKERS[0])[1] if p.topic == TOPIC}
    assert set(leaders.values()) == {1, 2, 3}, "the test needs leaders on every broker"
    checked = []
    for broker in report.brokers:
        assert broker.reachable and broker.produced == broker.consumed == 20_000
        assert {p.partition for p in broker.partitions} == {p for p, node in leaders.items() if node == broker.node_id}
        assert all(p.ok and p.consumed == p.expected > 0 for p in broker.partitions)
        assert broker.latency_p99_ms >= broker.latency_p50_ms > 0
        checked += [p.partition for p in broker.partitions]
    assert sorted(checked) == list(range(6))
    assert report.write_s > 0 and report.read_s > 0 and report.check_s > 0


def test_verify_spark_runs_the_job_through_every_broker(cluster: Inventory) -> None:
    report = verify(cluster, VerifyOptions(spark=True, spark_records=5000))
    assert report.ok, report.to_dict()
    assert report.spark is not None and sorted(b.broker for b in report.spark.brokers) == BROKERS
    assert all(b.consumed == 5000 and b.checksum_ok and b.partitions for b in report.spark.brokers)


def test_after_scale_out_verify_spark_sends_traffic_through_the_new_broker(cluster: Inventory, sa: sandbox.Sandbox) -> None:
    """The scratch topic made for 3 brokers has no leader on a 4th: verify makes it again for 4."""
    sandbox.add_node("sa")
    grown = load_inventory(sa.inventory_path)
    assert up(grown, DeployOptions(topics=f"{TOPIC}:6:3")).ok
    report = verify(grown, VerifyOptions(spark=True, spark_records=5000))
    assert report.ok, report.to_dict()
    assert report.spark is not None and sorted(b.broker for b in report.spark.brokers) == [*BROKERS, "sa4:9094"]
    assert all(b.consumed == 5000 and b.partitions for b in report.spark.brokers)
