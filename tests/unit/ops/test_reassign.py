"""Reassignment plans (pure): replicas leave one broker for the least loaded others; completion read from metadata."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmkit import waits
from swarmkit.errors import BrokerError, SpecError
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.kafka.admin import PartitionState
from swarmkit.ops.reassign import Move, pending, plan_balance, plan_document, plan_moves_off, wait_done
from swarmkit.ops.retire import _leaving_host
from tests.unit.kafka.fake_admin import FakeKafkaAdmin


def state(topic: str, partition: int, replicas: tuple[int, ...], isr: tuple[int, ...] | None = None) -> PartitionState:
    return PartitionState(topic, partition, replicas[0], replicas, replicas if isr is None else isr, 2)


def test_each_replica_on_the_leaving_broker_goes_to_the_least_loaded_other() -> None:
    partitions = [state("t", 0, (4, 1, 2)), state("t", 1, (1, 4, 3)), state("t", 2, (2, 3, 1)), state("u", 0, (4, 2, 3))]
    moves = plan_moves_off(partitions, leaving=4, remaining=[1, 2, 3])
    assert moves == [Move("t", 0, (3, 1, 2)), Move("t", 1, (1, 2, 3)), Move("u", 0, (1, 2, 3))]
    assert all(4 not in m.replicas and len(set(m.replicas)) == 3 for m in moves)


def test_nothing_moves_when_the_broker_holds_nothing() -> None:
    assert plan_moves_off([state("t", 0, (1, 2, 3))], leaving=4, remaining=[1, 2, 3]) == []


def test_a_partition_that_cannot_keep_its_replicas_is_refused() -> None:
    with pytest.raises(SpecError, match="topic t partition 0 has 3 replicas, and only 2 broker"):
        plan_moves_off([state("t", 0, (3, 1, 2))], leaving=3, remaining=[1, 2])


def test_the_plan_is_the_tools_json() -> None:
    document = json.loads(plan_document([Move("t", 0, (3, 1, 2))]))
    assert document == {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 1, 2]}]}


def test_a_move_is_done_when_exactly_its_replicas_hold_the_partition_in_sync() -> None:
    move = Move("t", 0, (3, 1, 2))
    assert pending([move], [state("t", 0, (4, 1, 2, 3))]) == [move]  # still adding and removing
    assert pending([move], [state("t", 0, (3, 1, 2), isr=(1, 2))]) == [move]  # the new replica catches up
    assert pending([move], [state("t", 0, (3, 1, 2))]) == []


def test_only_a_worker_of_the_inventory_can_be_retired() -> None:
    inventory = Inventory((Host("m1", "unix:///m1", "10.0.0.1", "manager"), Host("w1", "unix:///w1", "10.0.0.2")))
    assert _leaving_host(inventory, "w1").name == "w1"
    with pytest.raises(SpecError, match="no host 'w9'"):
        _leaving_host(inventory, "w9")
    with pytest.raises(SpecError, match="m1 is a manager"):
        _leaving_host(inventory, "m1")


def spread(moves: list[Move], partitions: list[PartitionState], brokers: list[int]) -> tuple[dict[int, int], dict[int, int]]:
    after = {(p.topic, p.partition): p.replicas for p in partitions} | {(m.topic, m.partition): m.replicas for m in moves}
    replicas = {b: sum(b in r for r in after.values()) for b in brokers}
    leaders = {b: sum(r[0] == b for r in after.values()) for b in brokers}
    return replicas, leaders


def test_after_scale_out_the_new_broker_gets_its_share_of_replicas_and_leaders() -> None:
    partitions = [state("orders", n, tuple((n + i) % 3 + 1 for i in range(3))) for n in range(6)]
    moves = plan_balance(partitions, [1, 2, 3, 4])
    replicas, leaders = spread(moves, partitions, [1, 2, 3, 4])
    assert max(replicas.values()) - min(replicas.values()) <= 1 and sum(replicas.values()) == 18
    assert max(leaders.values()) - min(leaders.values()) <= 1 and leaders[4] >= 1
    assert all(len(set(m.replicas)) == 3 for m in moves)
    assert len(moves) <= 6


def test_a_balanced_topic_is_left_alone() -> None:
    partitions = [state("t", n, tuple((n + i) % 3 + 1 for i in range(2))) for n in range(3)]
    assert plan_balance(partitions, [1, 2, 3]) == []


# --- zones ---------------------------------------------------------------------------------------

ZONES = {1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}


def zones_of(replicas: tuple[int, ...]) -> set[str]:
    return {ZONES[r] for r in replicas}


def test_a_partition_with_two_copies_in_one_zone_is_spread_over_the_zones() -> None:
    moves = plan_balance([state("t", 0, (1, 2, 3))], list(ZONES), ZONES)
    assert moves == [Move("t", 0, (1, 5, 3))]  # the doubled zone's later copy moves to zone c; the leader stays


@st.composite
def zoned_topic(draw: st.DrawFn) -> list[PartitionState]:
    count = draw(st.integers(1, 12))
    return [state("t", n, tuple(draw(st.permutations(list(ZONES)))[:3])) for n in range(count)]


@given(zoned_topic())
def test_rebalancing_leaves_every_partition_in_three_zones_and_replicas_within_one_per_zone(
    partitions: list[PartitionState],
) -> None:
    moved = {m.partition: m.replicas for m in plan_balance(partitions, list(ZONES), ZONES)}
    after = [moved.get(p.partition, p.replicas) for p in partitions]
    assert all(zones_of(replicas) == {"a", "b", "c"} for replicas in after)
    for zone in "abc":
        held = [sum(b in replicas for replicas in after) for b in ZONES if ZONES[b] == zone]
        assert max(held) - min(held) <= 1, (zone, held)


def test_the_wait_for_moves_reads_through_one_client_and_says_why_a_read_failed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits.Deadline, "sleep", lambda self: None)
    moves = [Move("orders", 0, (2, 3)), Move("orders", 1, (3, 2))]
    moving = [state("orders", 0, (2, 3)), state("orders", 1, (1, 2, 3), (1, 2))]
    done = [state("orders", 0, (2, 3)), state("orders", 1, (3, 2))]
    kafka = FakeKafkaAdmin(states=[((1, 2, 3), moving), BrokerError("leader moved"), ((2, 3), done)])
    lines: list[str] = []
    wait_done(kafka, moves, 60, lambda done, total, message: lines.append(message))  # type: ignore[arg-type]
    assert lines == [
        "moving replicas: 1/2 partitions done",
        "moving replicas: 1/2 partitions done (reading the partitions failed, reading again: leader moved)",
        "moving replicas: 2/2 partitions done",
    ]
