"""The quorum as kafka-python's DescribeQuorum answer gives it, read the way Kafka's quorum tool prints it."""

from __future__ import annotations

import socket

import pytest

from swarmkit.checks import health
from swarmkit.errors import BrokerError
from swarmkit.kafka import quorum

NOW = 1_800_000_000_000


def _replica(node_id: int, end: int, caught_up: int) -> dict:
    return {
        "replica_id": node_id,
        "log_end_offset": end,
        "last_fetch_timestamp": caught_up,
        "last_caught_up_timestamp": caught_up,
    }


def answer(error: str | None = None) -> dict:
    """Leader 9001, voter 9003 a minute behind, one observer (the shape of kafka-python's response dict)."""
    voters = [_replica(9002, 4211, NOW - 400), _replica(9001, 4211, NOW), _replica(9003, 3900, NOW - 60_000)]
    partition = {
        "partition_index": 0,
        "error": error,
        "leader_id": 9001,
        "leader_epoch": 7,
        "high_watermark": 4211,
        "current_voters": voters,
        "observers": [_replica(1, 4211, NOW)],
    }
    return {"topics": [{"topic_name": quorum.METADATA_TOPIC, "partitions": [partition]}]}


def test_a_described_quorum_reads_as_the_tool_prints_it() -> None:
    members = health.quorum_from_state(quorum.quorum_state_from(answer()), NOW)
    assert members.leader == 9001
    assert [(v.node_id, v.status) for v in members.voters] == [(9001, "Leader"), (9002, "Follower"), (9003, "Follower")]
    assert [(o.node_id, o.status, o.lag) for o in members.observers] == [(1, "Observer", 0)]
    assert [(v.node_id, v.lag, v.caught_up_ms_ago) for v in members.lagging] == [(9003, 311, 60_000)]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (answer("ClusterAuthorizationFailedError"), "ClusterAuthorizationFailedError"),
        ({"topics": []}, "no metadata partition"),
    ],
)
def test_a_refused_or_empty_description_is_a_broker_error(given: dict, said: str) -> None:
    with pytest.raises(BrokerError, match=said):
        quorum.quorum_state_from(given)


def test_a_closed_port_is_a_broker_error() -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(BrokerError, match="no quorum description from 127.0.0.1"):
        quorum.describe_quorum("127.0.0.1", port, 1.0)
