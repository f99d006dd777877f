"""Status rows (pure): topics counted from partition states, a node's broker from its tasks and the metadata; and a
swarm without a leader read from the hosts' engines and the brokers asked from here (recorded answers)."""

from __future__ import annotations

import pytest

from swarmkit.checks import status, verify
from swarmkit.checks.diagnose import Probe
from swarmkit.checks.health import Quorum, QuorumMember
from swarmkit.checks.status import asked_row, broker_row, leaderless_row, node_row, topic_rows
from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import DockerHosts, EngineInfo, ServiceState, SwarmNode, TaskState
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
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


# --- a swarm without a leader: the hosts' own engines and the brokers asked from here ---------------------------------


HOSTS = Inventory(hosts=tuple(Host(f"k{i}", f"unix:///run/k{i}.sock", f"10.9.0.{i}", "manager") for i in (1, 2, 3)))
NO_LEADER = EngineError("nodes on unix:///run/k1.sock failed: rpc error: The swarm does not have a leader.")


def engine(name: str) -> EngineInfo:
    return EngineInfo(f"unix:///run/{name}.sock", "27.0", name, "active", "", "", 0)


def asked(host: Host, answers: bool) -> verify.BrokerVerdict:
    probe = Probe(host.address, 9094, connect="ok", answered=True) if answers else Probe(host.address, 9094, connect="timeout")
    return verify._asked_from_here(host, probe, verify.VerifyOptions(), verify.LEADERLESS)


def test_without_a_leader_a_host_is_shown_as_its_own_engine_sees_it() -> None:
    row = leaderless_row(HOSTS.hosts[0], engine("k1"))
    assert (row.host, row.hostname, row.state, row.address, row.broker_id) == (
        "k1",
        "k1",
        "active swarm, no leader",
        "10.9.0.1",
        None,
    )
    assert leaderless_row(HOSTS.hosts[1], EngineError("no answer")).state == "engine not answering"


def test_without_a_leader_a_broker_is_matched_to_the_metadata_by_its_hosts_name_or_address() -> None:
    metadata = ClusterMetadata("10.9.0.2:9094", "c", 2, (BrokerInfo(1, "k1", 9094), BrokerInfo(2, "10.9.0.2", 9094)), ())
    by_name = asked_row(HOSTS.hosts[0], asked(HOSTS.hosts[0], True), metadata, engine("k1"))
    assert (by_name.broker_id, by_name.advertised, by_name.registered) == (1, "k1:9094", True)
    assert by_name.task == "not read (answers from here)" and by_name.image == by_name.container_id == ""
    by_address = asked_row(HOSTS.hosts[1], asked(HOSTS.hosts[1], True), metadata, EngineError("no answer"))
    assert (by_address.broker_id, by_address.registered) == (2, True)
    fenced = asked_row(HOSTS.hosts[2], asked(HOSTS.hosts[2], False), metadata, engine("k3"))
    assert (fenced.broker_id, fenced.advertised, fenced.registered) == (None, "", False)
    assert fenced.task.startswith("not read (10.9.0.3:9094 does not answer")


def fake_swarm(monkeypatch: pytest.MonkeyPatch, failure: EngineError) -> None:
    def nodes(manager: object) -> None:
        raise failure

    reads = status._KafkaReads(ClusterMetadata("", "c", 1, (BrokerInfo(1, "k1", 9094),), ()), [], "", "3.9-IV0", ((), ""), ())
    monkeypatch.setattr(status, "engine_states", lambda inventory, docker: {h.name: engine(h.name) for h in HOSTS.hosts})
    monkeypatch.setattr(status.dockerapi, "swarm_nodes", nodes)
    monkeypatch.setattr(status, "_kafka_reads", lambda *args: reads)
    answers = [asked(h, h.name == "k1") for h in HOSTS.hosts]
    quorum = Quorum(-1, voters=(QuorumMember(9001, "Follower", 0, None),))
    monkeypatch.setattr(status.verify, "asked_from_here", lambda *args: (answers, quorum))


def test_status_goes_on_without_the_swarms_view_when_it_has_no_leader(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_swarm(monkeypatch, NO_LEADER)
    read = status._read(Session(HOSTS, DockerHosts.from_inventory(HOSTS)), "kafka", 9094)
    assert not read.ok and read.swarm_error.startswith("the swarm's view is missing (nodes on unix:///run/k1.sock failed")
    assert "controller quorum has no leader" in read.swarm_error and read.quorum and read.quorum.leader == -1
    assert [n.state for n in read.nodes] == ["active swarm, no leader"] * 3
    assert [(b.node, b.registered) for b in read.brokers] == [("k1", True), ("k2", False), ("k3", False)]
    assert read.metadata_version == "3.9-IV0" and read.controllers == ((9001, ""),)  # the quorum's voters


def test_status_still_stops_when_the_swarm_fails_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_swarm(monkeypatch, EngineError("nodes on unix:///run/k1.sock failed: permission denied"))
    with pytest.raises(EngineError, match="permission denied"):
        status._read(Session(HOSTS, DockerHosts.from_inventory(HOSTS)), "kafka", 9094)
