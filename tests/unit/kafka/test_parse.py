"""The Kafka adapter's parsing layer, on answers recorded from a sandbox cluster (see fixtures/README.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from swarmkit.errors import BrokerError
from swarmkit.kafka import lag, parse, quorum, quotas
from swarmkit.stack.topics import TopicSpec

FIXTURES = Path(__file__).parent / "fixtures"
BOOTSTRAP = "10.222.0.11:9094"


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text())


def min_isr() -> dict[str, int]:
    described = {topic: answer for topic, answer in recorded("describe_configs").items() if topic != "missing"}
    return parse.min_isr(BOOTSTRAP, described)


def test_metadata_lists_the_brokers_and_the_users_topics() -> None:
    metadata = parse.cluster_metadata(BOOTSTRAP, recorded("metadata"))
    assert [b.endpoint for b in metadata.brokers] == ["ka1:9094", "ka2:9094", "ka3:9094"]
    assert [t.name for t in metadata.topics] == ["orders", "solo"]
    orders = metadata.topic("orders")
    assert orders is not None and (orders.partition_count, orders.replication_factor, orders.error) == (3, 3, "")
    assert (
        metadata.cluster_id and metadata.broker(metadata.controller_id) is not None
    )  # the broker that answers for the controller


def test_the_broker_admin_requests_wait_for_is_named_or_its_absence_explained() -> None:
    answer = recorded("metadata")
    assert parse.named_controller(answer) == "metadata names broker 1 at ka1:9094 controller"
    assert "no unfenced broker" in parse.named_controller(answer | {"controller_id": -1})
    assert parse.named_controller(answer | {"controller_id": 7}) == "metadata names broker 7 controller but does not list it"


def test_partition_states_carry_each_topics_min_isr() -> None:
    answer = recorded("metadata")
    states = parse.partition_states(answer, min_isr())
    assert parse.broker_ids(answer) == (1, 2, 3)
    orders = [s for s in states if s.topic == "orders"]
    assert [(s.partition, len(s.isr), s.min_isr) for s in orders] == [(0, 3, 2), (1, 3, 2), (2, 3, 2)]
    assert not any(s.under_replicated or s.offline or s.under_min_isr for s in states)
    assert {s.topic for s in states} >= {"__consumer_offsets", "orders", "solo"}


def test_a_stopped_broker_leaves_partitions_under_replicated() -> None:
    answer = recorded("metadata_under_replicated")  # recorded after topic "fresh" was made (RF 1)
    states = parse.partition_states(answer, min_isr() | {"fresh": 1})
    assert parse.broker_ids(answer) == (1, 2)
    orders = [s for s in states if s.topic == "orders"]
    assert all(s.under_replicated and 3 not in s.isr and not s.under_min_isr for s in orders), orders
    assert [s.topic for s in states if s.offline] == [s.topic for s in states if s.under_min_isr] == ["solo"]  # RF 1, on ka3


def test_an_unreadable_min_isr_is_an_error_never_a_guess() -> None:
    """It used to become 1 silently, hiding partitions under their min ISR."""
    with pytest.raises(BrokerError, match="min.insync.replicas of topic missing") as raised:
        parse.min_isr(BOOTSTRAP, {"missing": recorded("describe_configs")["missing"]})
    assert "UNKNOWN_TOPIC" in raised.value.message.upper().replace(" ", "_") or "unknown" in raised.value.message.lower()
    with pytest.raises(BrokerError, match="authoriz"):
        parse.min_isr(BOOTSTRAP, recorded("describe_configs_unauthorized"))


def test_a_server_that_does_not_list_min_isr_has_kafkas_default() -> None:
    """tansu answers DescribeConfigs without it; Apache Kafka lists it with every default."""
    assert parse.min_isr(BOOTSTRAP, {"orders": {"retention.ms": {"value": "1"}}}) == {"orders": 1}


def test_topic_settings_are_the_values_kafka_reports() -> None:
    settings = parse.settings(recorded("describe_configs")["orders"])
    assert settings["min.insync.replicas"] == "2" and settings["cleanup.policy"] == "delete"


def test_racks_of_brokers_without_one_are_empty() -> None:
    assert parse.racks(recorded("describe_cluster")) == {1: "", 2: "", 3: ""}


def test_a_partition_already_led_by_its_preferred_replica_is_no_refusal() -> None:
    answer = recorded("elect_leaders")
    assert parse.refused_elections(answer) == []
    refused = {
        "partitions": [
            {"topic": "orders", "partition": 0, "error": {"name": "PREFERRED_LEADER_NOT_AVAILABLE", "message": "out of sync"}}
        ]
    }
    assert parse.refused_elections(refused) == ["orders-0: out of sync"]


def test_creating_an_existing_topic_is_told_apart_from_a_created_one() -> None:
    answer = recorded("create_topics")
    assert parse.error_name(answer["orders"]) == "TOPIC_ALREADY_EXISTS"
    assert parse.created(BOOTSTRAP, TopicSpec("fresh", 1, 1), answer["fresh"]).status == "created"
    failed = parse.created(BOOTSTRAP, TopicSpec("orders", 3, 3), answer["orders"])
    assert failed.status == "failed" and "already exists" in failed.detail


def test_authorized_operations_of_the_admin_and_of_a_user_without_grants() -> None:
    admin = parse.authorized_operations(BOOTSTRAP, {"orders": recorded("describe_topics")["orders"]})
    assert {"read", "write", "describe", "describe-configs"} <= set(admin["orders"])
    assert parse.authorized_operations(BOOTSTRAP, recorded("describe_topics_unauthorized")) == {"orders": ()}
    with pytest.raises(BrokerError, match="describing topic missing"):
        parse.authorized_operations(BOOTSTRAP, {"missing": recorded("describe_topics")["missing"]})


def test_consumer_lag_from_the_groups_offsets_and_log_ends() -> None:
    groups = parse.group_ids(BOOTSTRAP, recorded("list_consumer_groups"))
    assert groups == ["app"]
    committed = {"app": parse.committed(BOOTSTRAP, recorded("group_offsets"))}
    assert committed == {"app": {("orders", 0): 3, ("orders", 1): 3, ("orders", 2): 3}}
    ends = parse.log_ends(BOOTSTRAP, {(e["topic"], e["partition"]): e for e in recorded("log_ends")})
    assert sum(ends.values()) == 10
    lags = lag.lags(committed, ends)
    assert sum(p.lag for p in lags) == 10 - 9 and [g.lag for g in lag.by_topic(lags)] == [1]


def test_a_group_the_login_may_not_read_is_an_error_with_a_hint() -> None:
    with pytest.raises(BrokerError, match="authoriz") as raised:
        parse.committed(BOOTSTRAP, recorded("group_offsets_unauthorized"))
    assert "DESCRIBE" in raised.value.hint


def test_the_quorum_names_its_leader_voter_and_the_brokers_as_observers() -> None:
    state = quorum.quorum_state_from(recorded("describe_quorum"))
    assert state.leader == 9001 and [v.node_id for v in state.voters] == [9001]
    assert sorted(o.node_id for o in state.observers) == [1, 2, 3]


def test_feature_levels_name_the_metadata_version() -> None:
    features = quorum.features_from(recorded("describe_features"))
    assert features.metadata_level > 0 and features.supported["metadata.version"][1] >= features.metadata_level


def test_client_quotas_of_a_named_client() -> None:
    assert quotas.quotas_from(recorded("describe_client_quotas")) == {(("client-id", "slow"),): {"producer_byte_rate": 262144.0}}


def test_scram_users_are_listed_by_name() -> None:
    assert {"swarmkit-admin", "nogrants"} <= set(parse.scram_users(recorded("describe_scram_users")))


def test_a_refused_login_is_named_rather_than_all_brokers_down() -> None:
    complaints = recorded("metadata_wrong_password")["complaints"]
    assert "invalid credentials" in parse.complaint(complaints)
    assert parse.complaint([c for c in complaints if c["name"] == "_ALL_BROKERS_DOWN"]) == "1/1 brokers are down"
    assert parse.complaint([]) == ""


def test_a_stopped_brokers_observer_falls_behind_the_high_watermark() -> None:
    state = quorum.quorum_state_from(recorded("describe_quorum_broker_down"))
    behind = [o.node_id for o in state.observers if o.log_end_offset < state.high_watermark]
    assert behind == [3] and all(o.directory_id for o in state.observers)
