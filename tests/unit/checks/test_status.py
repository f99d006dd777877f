"""Status rows (pure): topics counted from partition states, a node's broker from its tasks and the metadata."""

from __future__ import annotations

from swarmkit.checks.status import broker_row, node_row, topic_rows
from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import ServiceState, SwarmNode, TaskState
from swarmkit.kafka.admin import BrokerInfo, ClusterMetadata, PartitionState

NODE = SwarmNode("n1", "k1", "manager", "ready", "active", "10.0.0.1", {"swarmkit.broker-id": "1"})
METADATA = ClusterMetadata("k1:9094", "c", 9001, (BrokerInfo(1, "k1", 9094), BrokerInfo(2, "k2", 9094)), ())


def task(container: str, created: str, desired: str = "running", state: str = "running", current: bool = True) -> TaskState:
    return TaskState(
        f"t-{container}", f"kafka_broker.n1.t-{container}", "n1", desired, state, "", "", container, created, current
    )


def test_topics_count_under_replicated_offline_and_under_min_isr_partitions() -> None:
    states = [
        PartitionState("orders", 0, 1, (1, 2, 3), (1, 2, 3), 2),
        PartitionState("orders", 1, 2, (2, 3, 1), (2,), 2),
        PartitionState("orders", 2, -1, (3, 1, 2), (), 2),
        PartitionState("__consumer_offsets", 0, 1, (1, 2, 3), (1, 2), 2),
    ]
    rows = {row.topic: row for row in topic_rows(states)}
    assert list(rows) == ["__consumer_offsets", "orders"]
    orders = rows["orders"]
    assert (orders.partitions, orders.replication_factor, orders.under_replicated, orders.offline, orders.under_min_isr) == (
        3,
        3,
        2,
        1,
        2,
    )
    assert rows["__consumer_offsets"].under_replicated == 1


def test_a_broker_row_shows_the_newest_wanted_task_and_what_it_advertises() -> None:
    service = ServiceState(
        "kafka_broker",
        "",
        "",
        {},
        (
            task("old", "2026-01-01T10:00:00.1Z", desired="shutdown", state="failed"),
            task("abcdef1234567890", "2026-01-01T10:05:00.123Z"),
        ),
    )
    row = broker_row(NODE, "k1", service, "apache/kafka:4.4.0", METADATA)
    assert (row.broker_id, row.advertised, row.registered, row.task) == (1, "k1:9094", True, "running")
    assert (row.since, row.image, row.container_id) == ("2026-01-01 10:05:00", "apache/kafka:4.4.0", "abcdef123456")


def test_a_broker_missing_from_the_metadata_or_on_an_old_spec_says_so() -> None:
    service = ServiceState("kafka_broker", "updating", "", {}, (task("c1", "2026-01-01T10:00:00Z", current=False),))
    row = broker_row(NODE, "k1", service, "apache/kafka:4.5.0", None)
    assert not row.registered and row.advertised == ""
    assert row.image == "(previous spec)" and not row.current
    empty = broker_row(NODE, "k1", ServiceState("kafka_broker", "", "", {}, ()), "img", METADATA)
    assert (empty.task, empty.image, empty.since) == ("none", "", "")


def test_a_node_outside_the_swarm_is_named_by_why() -> None:
    assert node_row("k9", None, EngineError("no answer")).state == "engine not answering"
    assert node_row("k9", None, None).state == "not in the swarm"
    row = node_row("k1", NODE, None)
    assert (row.role, row.availability, row.address, row.broker_id) == ("manager", "active", "10.0.0.1", 1)
