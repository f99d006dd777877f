"""Roll input and readiness (pure): settings, image references, owned settings, when the next broker may go."""

from __future__ import annotations

import pytest

from swarmkit.errors import BrokerError, OperationError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import PartitionState
from swarmkit.ops import roll
from swarmkit.ops.roll import RollOptions, check_image, not_ready, parse_settings, settings_env, validate

SERVICE_ENV = {"KAFKA_LISTENERS": "INTERNAL://:9092", "KAFKA_MIN_INSYNC_REPLICAS": "2", "KAFKA_LOG_RETENTION_HOURS": "200"}


def inventory() -> Inventory:
    return Inventory(
        hosts=(Host("k1", "unix:///k1.sock", "10.0.0.1", "manager"), Host("k2", "unix:///k2.sock", "10.0.0.2", "worker"))
    )


def part(number: int, replicas: tuple[int, ...], isr: tuple[int, ...], leader: int = 1) -> PartitionState:
    return PartitionState("orders", number, leader, replicas, isr, 2)


def test_settings_are_kafka_properties_given_as_key_equals_value() -> None:
    assert parse_settings(["log.retention.hours=48", "compression.type=lz4"]) == (
        ("log.retention.hours", "48"),
        ("compression.type", "lz4"),
    )
    assert parse_settings(["message.max.bytes="]) == (("message.max.bytes", ""),)
    for bad in ("log.retention.hours", "=1", "Log.Retention=1", "a b=1", "log.\nretention=1"):
        with pytest.raises(SpecError, match="not a Kafka property"):
            parse_settings([bad])
    with pytest.raises(SpecError, match="holds a control character"):
        parse_settings(["log.retention.hours=48\nlisteners=PLAINTEXT://:1"])


def test_image_references_follow_dockers_grammar() -> None:
    for good in ("apache/kafka:4.4.0", "10.239.0.1:5000/swarmkit/kafka:4.4.0-b", "kafka", "r.example.net/a/b@sha256:" + "a" * 64):
        check_image(good)
    for bad in ("Apache/Kafka:1", "kafka:", "kafka 4", "", "kafka:-x", "r:5000/"):
        with pytest.raises(SpecError, match="not a valid image reference"):
            check_image(bad)


def test_a_setting_swarmkit_owns_is_refused_and_one_an_earlier_roll_set_is_not() -> None:
    assert settings_env([("log.retention.hours", "48")], SERVICE_ENV, {"KAFKA_LOG_RETENTION_HOURS"}) == {
        "KAFKA_LOG_RETENTION_HOURS": "48"
    }
    assert settings_env([("num.io.threads", "{{x}}")], SERVICE_ENV, set()) == {"KAFKA_NUM_IO_THREADS": '{{"{{"}}x}}'}
    for owned in ("listeners", "min.insync.replicas", "node.id", "advertised.listeners", "log.retention.hours"):
        with pytest.raises(SpecError, match=f"--set {owned}: set by swarmkit"):
            settings_env([(owned, "1")], SERVICE_ENV, set())


def test_options_are_checked_before_any_engine() -> None:
    validate(inventory(), RollOptions(nodes=("k2",)))
    with pytest.raises(SpecError, match="--node k9: not in the inventory"):
        validate(inventory(), RollOptions(nodes=("k9",)))
    with pytest.raises(SpecError, match="a new spec reaches every broker"):
        validate(inventory(), RollOptions(nodes=("k1",), settings=(("log.retention.hours", "1"),)))
    with pytest.raises(SpecError, match="not a valid image"):
        validate(inventory(), RollOptions(image="bad image"))


def test_the_next_broker_waits_for_registration_and_every_replica_in_sync() -> None:
    synced = [part(0, (1, 2, 3), (1, 2, 3)), part(1, (2, 3, 1), (2, 3, 1), leader=2)]
    assert not_ready(2, (1, 2, 3), synced) == ""
    assert not_ready(2, (1, 3), synced) == "broker 2 is not registered with the controllers yet"
    lagging = [*synced, part(2, (1, 2, 3), (1, 3)), part(3, (1, 2, 3), (), leader=-1)]
    assert not_ready(2, (1, 2, 3), lagging) == "2 partition(s) not fully in sync: orders-2, orders-3"


def test_the_brokers_tunable_defaults_can_be_rolled() -> None:
    env = {**SERVICE_ENV, "KAFKA_NUM_NETWORK_THREADS": "2"}
    assert settings_env([("num.network.threads", "3")], env, set()) == {"KAFKA_NUM_NETWORK_THREADS": "3"}


@pytest.mark.parametrize(("found_ns", "restored_ns"), [(10**9 * 10, 10**9 * 10), (5, 5), (roll.HOLD_DELAY_NS, 10**9 * 10)])
def test_a_roll_after_an_interrupted_one_gives_back_the_stacks_own_update_delay(
    monkeypatch: pytest.MonkeyPatch, found_ns: int, restored_ns: int
) -> None:
    """An interrupted roll left swarm's updater held (a day): the next roll must not keep that as the delay."""
    spec = dockerapi.ServiceSpec("apache/kafka:4.4.0", found_ns, {})
    monkeypatch.setattr(dockerapi, "service_spec", lambda engine, service: spec)
    state = dockerapi.ServiceState("kafka_broker", "", "", SERVICE_ENV, ())
    options = RollOptions(settings=(("num.io.threads", "4"),))
    change = roll._plan_change(None, "kafka_broker", options, state)  # type: ignore[arg-type]
    assert change.restore_delay_ns == restored_ns


def task(container: str, current: bool) -> dockerapi.TaskState:
    return dockerapi.TaskState(container, "", "n", "running", "running", "", "", container, "", current)


@pytest.mark.parametrize(
    ("tasks", "first"),
    [
        ((task("c2", False), task("new", True)), "c1"),  # swarm's updater replaced c1: it goes first
        ((task("c1", True), task("c2", True)), None),  # the spec did not change
        ((task("c1", True), task("c2", False)), None),  # an interrupted roll left c1 on the new spec: no wait
    ],
)
def test_the_first_broker_is_the_one_swarm_replaced_and_none_after_an_interrupted_roll(
    monkeypatch: pytest.MonkeyPatch, tasks: tuple[dockerapi.TaskState, ...], first: str | None
) -> None:
    state = dockerapi.ServiceState("kafka_broker", "paused", "", {}, tasks)
    monkeypatch.setattr(dockerapi, "service_state", lambda engine, service: state)
    hosts = inventory().hosts
    targets = [roll.BrokerTarget(host, "n", i, f"c{i}", "") for i, host in enumerate(hosts, 1)]
    taken = roll._first_taken(None, "kafka_broker", targets, timeout=0.5)  # type: ignore[arg-type]
    assert (taken.container_id if taken else None) == first


def test_an_operation_waits_for_its_own_restarts_to_catch_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """wait_in_sync reads as the roll does, looks again through a cluster that cannot be read or still lags,
    says so on the progress lines, and gives the reason when its bound passes."""
    targets = [roll.BrokerTarget(host, "n", i, f"c{i}", "") for i, host in enumerate(inventory().hosts, 1)]
    monkeypatch.setattr(roll, "deployed_view", lambda session, options: (targets, roll.ClusterView("", None)))
    monkeypatch.setattr(roll.waits.Pause, "sleep", lambda self: None)
    lagging = ((1, 2), [part(0, (1, 2), (1,))])
    answers = iter([lagging, BrokerError("timed out"), lagging, ((1, 2), [part(0, (1, 2), (1, 2))])])

    def partition_states(bootstrap: str, timeout: float, security: object) -> object:
        answer = next(answers)
        if isinstance(answer, BrokerError):
            raise answer
        return answer

    monkeypatch.setattr(roll.admin, "partition_states", partition_states)
    lines: list[str] = []
    session = Session(inventory(), None, lambda done, total, message: lines.append(message))  # type: ignore[arg-type]
    assert roll.wait_in_sync(session, RollOptions(), 60) == ""
    assert lines == [
        "waiting for the cluster to be in sync: 1 partition(s) not fully in sync: orders-0",
        "waiting for the cluster to be in sync: the cluster cannot be read: timed out",
        "waiting for the cluster to be in sync: 1 partition(s) not fully in sync: orders-0",
    ]
    answers = iter([lagging])
    assert roll.wait_in_sync(session, RollOptions(), 0) == "1 partition(s) not fully in sync: orders-0"


def test_the_check_that_refuses_a_roll_is_the_one_that_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """With ``settle`` the roll's own check looks again until the ISRs are full (an upgrade's controller restarts
    shrink them for a while, and come and go); without it, a lagging cluster is refused at once, nothing changed."""
    targets = [roll.BrokerTarget(host, "n", i, f"c{i}", "") for i, host in enumerate(inventory().hosts, 1)]
    monkeypatch.setattr(roll, "deployed_view", lambda session, options: (targets, roll.ClusterView("", None)))
    monkeypatch.setattr(roll.waits.Pause, "sleep", lambda self: None)
    lagging, in_sync = ((1, 2), [part(0, (1, 2), (1,))]), ((1, 2), [part(0, (1, 2), (1, 2))])
    answers = iter([lagging, in_sync, lagging])
    monkeypatch.setattr(roll.admin, "partition_states", lambda bootstrap, timeout, security: next(answers))
    session = Session(inventory(), None, lambda done, total, message: None)  # type: ignore[arg-type]
    roll.check_ready(session, RollOptions(settle=60))
    with pytest.raises(OperationError, match="not ready for a roll: 1 partition.*nothing was changed"):
        roll.check_ready(session, RollOptions())
