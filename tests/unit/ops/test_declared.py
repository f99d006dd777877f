"""The declared state against the cluster (pure): topic changes, broker rolls, zones, and options overriding it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmkit.errors import SpecError
from swarmkit.hosts.dockerapi import SwarmNode
from swarmkit.hosts.inventory import DeclaredTopic, DeclaredUser, Host, Inventory, StackDefaults
from swarmkit.kafka.models import BrokerInfo, ClusterMetadata, TopicInfo
from swarmkit.ops.declared import (
    Changes,
    SettingChange,
    TopicChange,
    TopicState,
    UserChange,
    apply_topic_changes,
    diff_topics,
    diff_users,
    roll_reasons,
    topic_states,
    user_states,
    zone_moves,
)
from swarmkit.ops.plan import DeployOptions, declared_users, plan, zone_warnings
from swarmkit.security.acls import Grant, parse_grants
from swarmkit.stack.topics import TopicSpec, creation_configs
from tests.unit.kafka.fake_admin import FakeKafkaAdmin, topic

HOSTS = (
    Host("k1", "unix:///k1", "10.0.0.1", "manager", {"zone": "a"}),
    Host("k2", "unix:///k2", "10.0.0.2", labels={"zone": "b"}),
    Host("k3", "unix:///k3", "10.0.0.3", labels={"zone": "b"}),
)
ORDERS = TopicSpec("orders", 6, 3, (("retention.ms", "86400000"),))


def as_created(spec: TopicSpec, **changed: str) -> TopicState:
    """The topic as the cluster holds it right after creating ``spec`` (plus broker defaults), settings changed."""
    configs = {"cleanup.policy": "delete", "retention.ms": "604800000", **creation_configs(spec), **changed}
    return TopicState(spec.name, spec.partitions, spec.replicas, configs)


def test_an_unchanged_cluster_has_no_changes() -> None:
    assert diff_topics([ORDERS], {"orders": as_created(ORDERS)}) == []
    assert Changes("kafka", True, (), (), ()).lines() == ["no changes"]


def test_a_changed_retention_is_exactly_one_setting_change() -> None:
    changes = diff_topics([ORDERS], {"orders": as_created(ORDERS, **{"retention.ms": "604800000"})})
    assert changes == [TopicChange("orders", "alter", (SettingChange("retention.ms", "604800000", "86400000"),))]
    assert changes[0].line() == "alter topic orders: retention.ms 604800000 -> 86400000"


def test_missing_topics_are_created_and_more_partitions_added() -> None:
    grown = TopicSpec("orders", 8, 3, ORDERS.configs)
    changes = diff_topics([grown, TopicSpec("new", 1, 1)], {"orders": as_created(ORDERS)})
    assert [(c.topic, c.action, c.partitions) for c in changes] == [("orders", "alter", (6, 8)), ("new", "create", None)]
    assert changes[1].line() == "create topic new (defaults)"


def test_what_kafka_cannot_change_is_a_problem_not_a_change() -> None:
    (change,) = diff_topics([TopicSpec("orders", 3, 2)], {"orders": as_created(ORDERS)})
    assert change.partitions is None and change.settings == ()
    assert [p.split(" (")[0] for p in change.problems] == ["it has 6 partitions, 3 declared", "replication 3, 2 declared"]


settings_values = st.sampled_from(["1000", "86400000", "604800000", "-1"])
topic_names = st.sampled_from(["a", "b", "c", "d"])


@st.composite
def declared_and_actual(draw: st.DrawFn) -> tuple[list[TopicSpec], dict[str, TopicState]]:
    names = draw(st.lists(topic_names, unique=True, min_size=1))
    specs = [
        TopicSpec(n, draw(st.integers(1, 8)), draw(st.integers(1, 3)), (("retention.ms", draw(settings_values)),)) for n in names
    ]
    actual = {
        s.name: TopicState(s.name, draw(st.integers(1, 8)), draw(st.integers(1, 3)), {"retention.ms": draw(settings_values)})
        for s in specs
        if draw(st.booleans())
    }
    return specs, actual


def applied(spec: TopicSpec, state: TopicState | None, change: TopicChange | None) -> TopicState:
    """What the cluster holds after `up` made ``change`` (what Kafka refuses stays as it was)."""
    if state is None:
        return TopicState(spec.name, spec.partitions, spec.replicas, creation_configs(spec))
    configs = {**state.configs, **{s.key: s.new for s in (change.settings if change else ())}}
    partitions = change.partitions[1] if change and change.partitions else state.partitions
    return TopicState(spec.name, partitions, state.replicas, configs)


@given(declared_and_actual())
def test_after_applying_the_changes_only_what_kafka_refuses_is_left(case: tuple[list[TopicSpec], dict[str, TopicState]]) -> None:
    specs, actual = case
    changes = {c.topic: c for c in diff_topics(specs, actual)}
    assert all(c.topic in {s.name for s in specs} for c in changes.values())  # nothing undeclared is touched
    after = {s.name: applied(s, actual.get(s.name), changes.get(s.name)) for s in specs}
    again = diff_topics(specs, after)
    assert all(c.action == "alter" and not c.settings and not c.partitions and c.problems for c in again)
    assert {c.topic for c in again} == {
        s.name
        for s in specs
        if s.name in actual and (s.replicas != actual[s.name].replicas or s.partitions < actual[s.name].partitions)
    }


def test_a_changed_broker_setting_rolls_every_broker_and_hides_secrets() -> None:
    reasons = roll_reasons(
        {"KAFKA_HEAP_OPTS": "-Xmx256m", "KAFKA_SSL_KEY_PASSWORD": "new"},
        "apache/kafka:4.4.0",
        {"KAFKA_HEAP_OPTS": "-Xmx512m", "KAFKA_SSL_KEY_PASSWORD": "old", "GONE": "x"},
        "apache/kafka:4.3.0",
    )
    assert reasons == [
        "image apache/kafka:4.3.0 -> apache/kafka:4.4.0",
        "GONE x -> (unset)",
        "KAFKA_HEAP_OPTS -Xmx512m -> -Xmx256m",
        "KAFKA_SSL_KEY_PASSWORD (hidden) -> (hidden)",
    ]


def node(host: str, zone: str = "") -> SwarmNode:
    labels = {"swarmkit.host": host} | ({"zone": zone} if zone else {})
    return SwarmNode(f"id-{host}", host, "10.0.0.9", "worker", "ready", "active", labels=labels)


def test_a_host_whose_zone_changes_restarts_its_broker() -> None:
    moves = zone_moves(Inventory(HOSTS), [node("k1", "a"), node("k2"), node("k3", "c"), node("other", "z")])
    assert moves == ["broker on k2: zone (none) -> b", "broker on k3: zone c -> b"]


def test_replication_over_fewer_zones_is_warned_about() -> None:
    unzoned = Inventory((*HOSTS, Host("k4", "unix:///k4", "10.0.0.4")))
    warnings = zone_warnings(unzoned, [TopicSpec("orders", 6, 3), TopicSpec("logs", 1, 2)])
    assert warnings == [
        "hosts without a zone label: k4 (their brokers get no broker.rack)",
        "topic orders: 3 replicas but only 2 zone(s) (a, b): a zone lost can take more than one copy of a partition",
    ]
    assert zone_warnings(Inventory(tuple(Host(h.name, h.endpoint, h.address, h.role) for h in HOSTS)), [ORDERS]) == []


DECLARED = Inventory(
    HOSTS,
    stack=StackDefaults(
        image="apache/kafka:4.4.0",
        advertise="inventory-address",
        external_port=19094,
        topics=(DeclaredTopic("orders", 6, 3, (("retention.ms", "86400000"),)),),
        broker_env=(("KAFKA_HEAP_OPTS", "-Xmx256m"), ("KAFKA_NUM_IO_THREADS", "2")),
        given=("image", "advertise", "ports", "topics", "broker_env"),
    ),
)


def test_commands_read_the_declared_state() -> None:
    planned = plan(DECLARED, DeployOptions())
    assert planned.options.advertise == "inventory-address"
    assert planned.options.listeners.external_listener.port == 19094
    assert planned.options.listeners.internal_listener.port == 9092
    assert planned.topics == [ORDERS]
    assert dict(planned.options.extra_env)["KAFKA_HEAP_OPTS"] == "-Xmx256m"
    assert DeployOptions().overrides(DECLARED) == []


def test_an_option_overrides_the_declaration_for_one_run_and_says_so() -> None:
    options = DeployOptions(topics="orders:6:3", external_port=9094, extra_env=(("KAFKA_HEAP_OPTS", "-Xmx1g"),))
    planned = plan(DECLARED, options)
    assert planned.topics == [TopicSpec("orders", 6, 3)]
    assert planned.options.listeners.external_listener.port == 9094
    assert dict(planned.options.extra_env) == {"KAFKA_HEAP_OPTS": "-Xmx1g", "KAFKA_NUM_IO_THREADS": "2"}
    assert options.overrides(DECLARED) == [
        "--topics orders:6:3 overrides the inventory's stack.topics (orders:6:3:retention.ms=86400000) for this run",
        "a port option 9094 overrides the inventory's stack.ports (19094) for this run",
    ]


READ_ORDERS = parse_grants(["topic:orders:read"])
WRITE_ORDERS = parse_grants(["topic:orders:write"])


def test_a_missing_user_is_made_with_its_grants_and_others_are_left_alone() -> None:
    changes = diff_users({"orders-app": READ_ORDERS + WRITE_ORDERS, "audit": ()}, {"audit": (), "someone-else": READ_ORDERS})
    assert changes == [UserChange("orders-app", "create", READ_ORDERS + WRITE_ORDERS)]
    assert changes[0].line() == "create user orders-app (topic:orders:read,write)"
    assert Changes("kafka", True, (), (), (), tuple(changes)).pending


def test_grants_become_exactly_the_declared_ones() -> None:
    change = diff_users({"orders-app": READ_ORDERS}, {"orders-app": WRITE_ORDERS})
    assert change == [UserChange("orders-app", "grant", READ_ORDERS, WRITE_ORDERS)]
    assert change[0].line() == "grants of user orders-app: +topic:orders:read -topic:orders:write"
    assert diff_users({"orders-app": READ_ORDERS}, {"orders-app": READ_ORDERS}) == []


grants = st.lists(
    st.builds(Grant, st.just("topic"), st.sampled_from(["orders", "logs"]), st.booleans(), st.sampled_from(["read", "write"])),
    max_size=4,
    unique=True,
).map(lambda found: tuple(sorted(found)))


@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), grants), st.dictionaries(st.sampled_from(["a", "b", "d"]), grants))
def test_after_applying_the_user_changes_nothing_is_left(declared: dict, actual: dict) -> None:
    after = dict(actual)
    for change in diff_users(declared, actual):
        before = set(actual.get(change.user, ()))
        after[change.user] = tuple(sorted(before - set(change.removed) | set(change.added)))
    assert diff_users(declared, after) == []
    assert {user: after[user] for user in actual if user not in declared} == {
        u: g for u, g in actual.items() if u not in declared
    }


def with_users(security: str, *users: DeclaredUser) -> Inventory:
    return Inventory(hosts=HOSTS, path="inv.yaml", stack=StackDefaults(security=security, users=users))


def test_declared_users_need_a_sasl_ssl_stack_and_good_grants() -> None:
    assert plan(with_users("sasl_ssl", DeclaredUser("orders-app", ("topic:orders:read",))), DeployOptions()).users == {
        "orders-app": READ_ORDERS
    }
    with pytest.raises(SpecError, match="need a sasl_ssl stack, and this one is plaintext"):
        plan(with_users("plaintext", DeclaredUser("orders-app")), DeployOptions())
    with pytest.raises(SpecError, match="inv.yaml: stack.users.orders-app: --allow 'topic:orders:reed'"):
        declared_users(with_users("sasl_ssl", DeclaredUser("orders-app", ("topic:orders:reed",))))
    with pytest.raises(SpecError, match="'swarmkit-admin' is swarmkit's own user"):
        declared_users(with_users("sasl_ssl", DeclaredUser("swarmkit-admin")))


def cluster(*topics: TopicInfo) -> ClusterMetadata:
    return ClusterMetadata("k1:9094", "c", 1, (BrokerInfo(1, "k1", 9094),), topics)


def test_topic_states_read_counts_and_settings_through_one_admin() -> None:
    kafka = FakeKafkaAdmin(cluster(topic("orders", 3), topic("other", 1)), {"orders": {"retention.ms": "1"}, "other": {}})
    assert topic_states(kafka, ["orders", "gone"]) == {"orders": TopicState("orders", 3, 1, {"retention.ms": "1"})}  # type: ignore[arg-type]


def test_changes_are_applied_live_and_added_partitions_awaited() -> None:
    kafka = FakeKafkaAdmin(cluster(topic("orders", 3)), {"orders": {"retention.ms": "1"}})
    change = TopicChange("orders", "alter", (SettingChange("retention.ms", "1", "2"),), partitions=(3, 6))
    assert apply_topic_changes(kafka, [change]) == [change.line()]  # type: ignore[arg-type]
    assert kafka.changes == [("alter", {"orders": {"retention.ms": "2"}}), ("partitions", {"orders": 6})]
    assert topic_states(kafka, ["orders"])["orders"].partitions == 6  # type: ignore[arg-type]


def test_user_states_name_only_the_users_the_cluster_has() -> None:
    alice = (Grant("topic", "orders", False, "read"),)
    kafka = FakeKafkaAdmin(cluster(), grants={"alice": alice, "admin": ()})
    assert user_states(kafka, ["alice", "bob"]) == {"alice": alice}  # type: ignore[arg-type]
