"""The cluster verdict (pure): quorum description parsing, partitions, brokers registered vs nodes."""

from __future__ import annotations

import pytest

from swarmkit.checks import health
from swarmkit.checks.health import Quorum, QuorumMember, judge, parse_quorum_replication
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.kafka.admin import PartitionState

NOW = 1_800_000_000_000
REPLICATION = f"""NodeId	DirectoryId           	LogEndOffset	Lag	LastFetchTimestamp	LastCaughtUpTimestamp	Status
9001  	pM2yKkQmRg2kNn2dS1mY7w	4211        	0  	{NOW}     	{NOW}        	Leader
9002  	Qk3Jb0e2SHq6v6m8b2E7bA	4211        	0  	{NOW - 400}	{NOW - 400}  	Follower
9003  	Rl4Kc1f3TIr7w7n9c3F8cB	3900        	311	{NOW - 60_000}	{NOW - 60_000}	Follower
1     	Sm5Ld2g4UJs8x8o0d4G9dC	4211        	0  	{NOW}     	{NOW}        	Observer
"""
HEALTHY_QUORUM = Quorum(9001, (QuorumMember(9001, "Leader", 0, 0), QuorumMember(9002, "Follower", 0, 100)))


def partition(topic: str, number: int, leader: int, replicas: tuple[int, ...], isr: tuple[int, ...], min_isr: int = 2):
    return PartitionState(topic, number, leader, replicas, isr, min_isr)


def test_quorum_description_names_leader_voters_observers_and_a_lagging_voter() -> None:
    quorum = parse_quorum_replication(REPLICATION, NOW)
    assert quorum.leader == 9001
    assert [v.node_id for v in quorum.voters] == [9001, 9002, 9003]
    assert [o.node_id for o in quorum.observers] == [1]
    assert [v.node_id for v in quorum.lagging] == [9003]
    assert quorum.lagging[0].lag == 311


def test_unexpected_quorum_output_is_an_error_not_a_crash() -> None:
    quorum = parse_quorum_replication("Exception in thread main: Timed out waiting for a node", NOW)
    assert quorum.leader == -1
    assert "Timed out" in quorum.error


def test_a_healthy_cluster_has_no_problems_and_counts_leaders() -> None:
    parts = [partition("orders", p, p % 3 + 1, (1, 2, 3), (1, 2, 3)) for p in range(6)]
    verdict = judge({"node1": 1, "node2": 2, "node3": 3}, (1, 2, 3), parts, HEALTHY_QUORUM)
    assert verdict.ok, verdict.problems
    assert [(b.broker_id, b.node, b.replicas, b.leaders) for b in verdict.brokers] == [
        (1, "node1", 6, 2),
        (2, "node2", 6, 2),
        (3, "node3", 6, 2),
    ]


def test_a_lost_broker_is_named_with_its_under_replicated_and_under_min_isr_partitions() -> None:
    parts = [
        partition("orders", 0, 1, (1, 2, 3), (1, 3)),
        partition("orders", 1, 3, (2, 3, 1), (3,)),
        partition("orders", 2, -1, (2,), (), min_isr=1),
        partition("__consumer_offsets", 0, 1, (1, 2, 3), (1, 2, 3)),
    ]
    verdict = judge({"node1": 1, "node2": 2, "node3": 3}, (1, 3), parts, HEALTHY_QUORUM)
    assert not verdict.ok
    assert any("broker 2 (node2) is not registered" in p for p in verdict.problems)
    assert verdict.offline == ("orders-2",)
    assert verdict.under_replicated == ("orders-0", "orders-1", "orders-2")
    assert verdict.under_min_isr == ("orders-1", "orders-2")
    assert "topic orders: partitions 2 have no leader (offline: nothing can be written or read there)" in verdict.problems


def test_quorum_without_leader_or_unreadable_is_a_problem() -> None:
    assert "controller quorum has no leader" in judge({}, (), [], Quorum(-1, ())).problems
    unreadable = judge({}, (), [], Quorum(-1, error="no controller described the quorum"))
    assert unreadable.problems == ("controller quorum: no controller described the quorum",)


def test_a_new_broker_without_partitions_is_a_note_and_a_stranger_is_a_problem() -> None:
    parts = [partition("orders", 0, 1, (1, 2, 3), (1, 2, 3))]
    verdict = judge({"node1": 1, "node2": 2, "node3": 3, "node4": 4}, (1, 2, 3, 4, 7), parts, HEALTHY_QUORUM)
    assert verdict.problems == ("broker 7 is registered but no inventory node carries that id",)
    assert len(verdict.notes) == 1 and verdict.notes[0].startswith("broker 4 (node4) holds no partitions yet")


# --- reading the quorum: every controller's container looked at first ---------------------------

TWO_VOTERS = (
    "NodeId LogEndOffset Lag LastFetchTimestamp LastCaughtUpTimestamp Status\n9002 10 0 1 1 Leader\n9003 10 0 1 1 Follower\n"
)
MANAGERS = Inventory(hosts=tuple(Host(f"m{i}", f"unix:///run/m{i}.sock", f"10.9.0.{10 + i}", "manager") for i in (1, 2, 3)))


def test_a_paused_controller_is_named_and_a_running_one_describes_the_quorum(monkeypatch: pytest.MonkeyPatch) -> None:
    containers = {"kafka_controller-1": ("c1", "paused"), "kafka_controller-2": ("c2", "running"), "kafka_controller-3": None}
    monkeypatch.setattr(health.dockerapi, "service_container", lambda engine, service: containers[service])
    asked: list[list[str]] = []
    monkeypatch.setattr(
        health.dockerapi, "exec_in_container", lambda engine, c, command: asked.append([c, *command]) or TWO_VOTERS
    )
    docker = DockerHosts.from_inventory(MANAGERS)
    quorum = health.read_quorum(MANAGERS, docker, health.controller_containers(MANAGERS, docker, "kafka"), 9093, seconds=12)
    assert quorum.leader == 9002
    assert quorum.unavailable == (
        "controller 9001 (controller-1 on m1): its container is paused",
        "controller 9003 (controller-3 on m3): no container runs",
    )
    assert asked == [
        [
            "c2",
            "timeout",
            "-s",
            "KILL",
            "12",
            health.QUORUM_TOOL,
            "--bootstrap-controller",
            "localhost:9093",
            "describe",
            "--replication",
        ]
    ]
    problems = judge({}, [], [], quorum).problems
    assert "controller 9001 (controller-1 on m1): its container is paused; the quorum runs without it" in problems


def test_a_quorum_read_that_times_out_still_names_the_controllers_that_do_not_run() -> None:
    controllers = health.Controllers((("m2", "c2"),), ("controller 9001 (controller-1 on m1): its container is paused",))
    quorum = health.unread_quorum(controllers, "the quorum read in a controller did not answer within 17s")
    (problem,) = judge({}, [], [], quorum).problems
    assert "did not answer within 17s" in problem and "controller 9001 (controller-1 on m1): its container is paused" in problem
