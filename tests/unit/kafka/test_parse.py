"""Kafka's answers as recorded from a sandbox cluster (3 brokers, 3 controllers, topic t at 3 x 3, a consumer
group that read 12 of 30 records; see record.py), read by the pure parsers KafkaAdmin hands them to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarmkit.errors import BrokerError
from swarmkit.kafka import parse, quorum
from swarmkit.stack.topics import TopicSpec

RECORDED = Path(__file__).parent / "recorded"
BOOTSTRAP = "node1:9094"


def recorded(name: str) -> Any:
    return json.loads((RECORDED / f"{name}.json").read_text())


def test_metadata_lists_the_brokers_and_the_users_topics_only() -> None:
    metadata = parse.cluster_metadata(BOOTSTRAP, recorded("metadata"))
    assert [b.node_id for b in metadata.brokers] == [1, 2, 3] and metadata.cluster_id
    assert [t.name for t in metadata.topics] == ["t"]  # __consumer_offsets is Kafka's own
    topic = metadata.topic("t")
    assert topic is not None and (topic.partition_count, topic.replication_factor) == (3, 3) and topic.error == ""
    assert metadata.broker_at(metadata.brokers[0].endpoint) == metadata.brokers[0]
    assert metadata.to_dict()["topics"][0]["partition_count"] == 3


def test_a_healthy_cluster_has_every_partition_in_sync_at_its_min_isr() -> None:
    answer = recorded("metadata")
    min_isr = parse.min_isr(BOOTSTRAP, recorded("describe_configs"))
    states = parse.partition_states(answer, min_isr)
    assert parse.broker_ids(answer) == (1, 2, 3)
    assert {s.topic for s in states} == {"t", "__consumer_offsets"}
    assert not any(s.under_replicated or s.offline or s.under_min_isr for s in states)
    assert min_isr["t"] == 2  # the sandbox's topics are made with min.insync.replicas 2


def test_a_stopped_broker_leaves_partitions_under_replicated() -> None:
    """Recorded with one broker's engine stopped: it drops out of every ISR, its partitions get new leaders."""
    answer = recorded("metadata_degraded")
    states = parse.partition_states(answer, {t["topic"]: 2 for t in answer["topics"]})
    t = [s for s in states if s.topic == "t"]
    assert t and all(s.under_replicated and not s.offline and not s.under_min_isr for s in t)
    lost = {b for s in t for b in s.replicas} - {b for s in t for b in s.isr}
    assert len(lost) == 1 and all(s.leader not in lost for s in t)


def test_described_settings_keep_the_ones_with_a_value() -> None:
    settings = parse.settings(recorded("describe_configs")["t"])
    assert settings["min.insync.replicas"] == "2" and "cleanup.policy" in settings
    assert all(value is not None for value in settings.values())


def test_settings_that_cannot_be_read_are_an_error_not_a_min_isr_of_one() -> None:
    """The old adapter skipped such a topic, and the ISR check then took min ISR 1 for it."""
    answer = recorded("describe_configs_missing_topic")
    assert answer["no-such-topic"]["name"] == "UNKNOWN_TOPIC_OR_PART"
    with pytest.raises(BrokerError, match="min.insync.replicas of topic no-such-topic") as raised:
        parse.min_isr(BOOTSTRAP, {"no-such-topic": {"error": answer["no-such-topic"]}})
    assert "DescribeConfigs" in raised.value.hint


def test_a_topic_kafka_refuses_to_create_fails_with_kafkas_reason() -> None:
    spec = TopicSpec("too-many-replicas", 1, 7)
    result = parse.created(BOOTSTRAP, spec, {"error": recorded("create_topic_too_many_replicas")})
    assert result.status == "failed" and not result.ok and "replication factor" in result.detail.lower()
    assert parse.created(BOOTSTRAP, spec, None).status == "created"


def test_creating_an_existing_topic_is_told_apart() -> None:
    assert recorded("create_topic_exists")["name"] == "TOPIC_ALREADY_EXISTS"
    assert parse.compared(BOOTSTRAP, "t", (3, 3), (3, 3)).status == "exists"
    mismatch = parse.compared(BOOTSTRAP, "t", (6, 3), (3, 3))
    assert mismatch.status == "mismatch" and "left unchanged" in mismatch.detail


def test_racks_come_from_the_cluster_description() -> None:
    assert parse.racks(recorded("describe_cluster")) == {1: "", 2: "", 3: ""}


def test_an_election_of_leaders_already_preferred_refuses_nothing() -> None:
    answer = recorded("elect_leaders")
    assert answer and all(e["error"].get("name") in (None, "ELECTION_NOT_NEEDED") for e in answer)
    assert parse.refused_elections(answer) == []
    refused = [{"topic": "t", "partition": 0, "error": {"name": "PREFERRED_LEADER_NOT_AVAILABLE", "message": "not in sync"}}]
    assert parse.refused_elections(refused) == ["t-0: not in sync"]


def test_authorized_operations_are_spelled_as_grants() -> None:
    operations = parse.authorized_operations(recorded("describe_topic_operations"))
    assert "describe-configs" in operations and "read" in operations and operations == tuple(sorted(operations))


def test_the_quorum_has_a_leader_and_three_voters() -> None:
    state = quorum.quorum_state_from(recorded("quorum"))
    assert len(state.voters) == 3 and state.leader in {v.node_id for v in state.voters}
    assert state.high_watermark > 0


def test_a_group_behind_the_log_end_has_lag() -> None:
    assert "recorded-group" in parse.consumer_groups(BOOTSTRAP, recorded("consumer_groups"))
    committed = parse.committed(BOOTSTRAP, recorded("group_offsets"))
    ends = parse.log_ends(BOOTSTRAP, recorded("offsets"))
    lags = parse.lag("recorded-group", committed, ends)
    assert sum(lag.committed for lag in lags) == 12 and sum(lag.log_end for lag in lags) >= 30
    assert sum(lag.lag for lag in lags) == sum(ends.values()) - 12


def test_a_group_that_never_committed_lists_no_offsets() -> None:
    assert parse.committed(BOOTSTRAP, recorded("group_offsets_unknown_group")) == {}


def test_an_error_in_an_answer_names_the_call_and_the_bootstrap() -> None:
    error = recorded("describe_configs_missing_topic")["no-such-topic"]
    failure = parse.failure("reading settings", BOOTSTRAP, error)
    assert failure.message.startswith(f"reading settings through {BOOTSTRAP} failed: ") and failure.hint
    with pytest.raises(BrokerError, match="log end of t-1"):
        parse.log_ends(BOOTSTRAP, [{"topic": "t", "partition": 1, "error": error}])
