"""The deploy wait without engines: probing a node's port, each broker's phase, stalls, crash loops, a stopped update."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swarmkit import waits
from swarmkit.errors import BrokerError, DeployError
from swarmkit.hosts.dockerapi import ServiceState, TaskState
from swarmkit.kafka.admin import BrokerInfo, ClusterMetadata
from swarmkit.ops import converge as converge_module
from swarmkit.ops.converge import Member, Target
from swarmkit.stack.engines import apache
from tests.unit.ops.test_deploy import DOCKER, INVENTORY, swarm_node


def task(task_id: str, node_id: str, state: str = "running", current: bool = True, **changes) -> TaskState:
    base = TaskState(
        task_id,
        f"kafka_broker.{node_id}.{task_id}",
        node_id,
        "running",
        state,
        "",
        "",
        "",
        f"2026-01-01T00:00:0{task_id[-1]}Z",
        current,
    )
    return replace(base, **changes)


def target(i: int, expected: str | None = "n{i}:9094") -> Target:
    member = Member(INVENTORY.hosts[i - 1], swarm_node(i))
    return Target(member, i, f"10.9.0.{10 + i}:9094", expected.format(i=i) if expected else None)


def metadata(*brokers: BrokerInfo) -> ClusterMetadata:
    return ClusterMetadata("x", None, -1, brokers, ())


def test_probe_checks_what_the_node_advertises(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {
        "10.9.0.11:9094": metadata(BrokerInfo(111, "n1", 9094)),
        "10.9.0.12:9094": metadata(BrokerInfo(111, "wrong", 9094)),
    }
    monkeypatch.setattr(converge_module, "broker_metadata", lambda bootstrap, timeout, security=None: answers[bootstrap])
    assert converge_module._probe(target(1)) == ("n1:9094", "")
    assert converge_module._probe(target(2)) == ("wrong:9094", "10.9.0.12:9094 advertises wrong:9094, expected n2:9094")
    assert converge_module._probe(target(2, expected=None)) == ("wrong:9094", "")


def test_probe_finds_its_own_broker_in_a_shared_cluster_by_id(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = metadata(BrokerInfo(1, "n1", 9094), BrokerInfo(2, "n2", 9094), BrokerInfo(3, "n3", 9094))
    monkeypatch.setattr(converge_module, "broker_metadata", lambda bootstrap, timeout, security=None: shared)
    assert converge_module._probe(target(2)) == ("n2:9094", "")


def test_probe_reports_a_port_that_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def silent(bootstrap: str, timeout: float, security: object = None) -> ClusterMetadata:
        raise BrokerError("no Kafka metadata from 10.9.0.11:9094 within 2s: Connection refused")

    monkeypatch.setattr(converge_module, "broker_metadata", silent)
    advertised, problem = converge_module._probe(target(1))
    assert advertised == "" and "does not answer Kafka metadata yet" in problem and "Connection refused" in problem


class FakeService:
    """A sequence of service states, one per poll; the last one repeats."""

    def __init__(self, *states: ServiceState) -> None:
        self.states = list(states)
        self.polls = 0

    def __call__(self, manager: str, service: str) -> ServiceState:
        self.polls += 1
        return self.states.pop(0) if len(self.states) > 1 else self.states[0]


def state(*tasks: TaskState, update: str = "") -> ServiceState:
    return ServiceState("kafka_broker", update, "update paused due to failure" if update else "", {}, tasks)


@pytest.fixture
def fast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits.fanout, "pause", lambda seconds: None)


def watch(check_kafka: bool = True, stall: float = 60, cap: float = 600, markers=()) -> converge_module.Watch:
    return converge_module.Watch(check_kafka, waits.WaitLimits(stall, cap), markers)


def converge(targets: list[Target], wait: converge_module.Watch, reports: list | None = None) -> None:
    report = (lambda *r: reports.append(r)) if reports is not None else (lambda *r: None)
    converge_module.until_serving(DOCKER, DOCKER[INVENTORY.first_manager], "kafka_broker", targets, wait, report)


def test_converge_waits_for_current_running_tasks_that_answer(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    service = FakeService(
        state(task("old1", "id1", current=False), task("t2", "id2", state="starting")),
        state(task("old1", "id1", current=False), task("t2", "id2")),
        state(task("t1", "id1"), task("t2", "id2")),
    )
    monkeypatch.setattr(converge_module.dockerapi, "service_state", service)
    monkeypatch.setattr(
        converge_module, "broker_metadata", lambda b, t, security=None: metadata(BrokerInfo(111, f"n{b[-6]}", 9094))
    )
    reports: list[tuple[int, int, str]] = []
    targets = [target(1), target(2)]
    converge(targets, watch(), reports)
    assert [t.task_id for t in targets] == ["t1", "t2"]
    assert [t.advertised for t in targets] == ["n1:9094", "n2:9094"]
    assert reports == [
        (0, 2, "n1: no task scheduled yet"),
        (0, 2, "n2: container starting"),
        (1, 2, "n2: serving as n2:9094"),
        (2, 2, "n1: serving as n1:9094"),
    ]


def test_each_phase_of_a_starting_broker_is_reported_from_its_log(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    monkeypatch.setattr(converge_module.dockerapi, "service_state", FakeService(state(task("t1", "id1", container_id="c1"))))
    logs = iter(
        ["swarmkit: waiting for the controller quorum: 1 of 3 voters listen, 2 needed (4s)", "===> Launching kafka.Kafka"]
    )
    monkeypatch.setattr(converge_module.dockerapi, "container_output", lambda engine, container, tail=None: next(logs, ""))
    answers = iter([BrokerError("refused"), BrokerError("refused")])

    def probe(bootstrap: str, timeout: float, security=None) -> ClusterMetadata:
        error = next(answers, None)
        if error:
            raise error
        return metadata(BrokerInfo(111, "n1", 9094))

    monkeypatch.setattr(converge_module, "broker_metadata", probe)
    reports: list[tuple[int, int, str]] = []
    converge([target(1)], watch(markers=apache.START_MARKERS), reports)
    assert [message for _, _, message in reports] == [
        "n1: waiting for the controller quorum: 1 of 3 voters listen, 2 needed",
        "n1: JVM starting",
        "n1: serving as n1:9094",
    ]


def test_converge_without_kafka_only_needs_running_tasks(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    monkeypatch.setattr(converge_module.dockerapi, "service_state", FakeService(state(task("t1", "id1"))))
    monkeypatch.setattr(converge_module, "broker_metadata", lambda b, t, security=None: pytest.fail("Kafka was asked"))
    targets = [target(1)]
    converge(targets, watch(check_kafka=False))
    assert targets[0].task_id == "t1"


def test_a_stall_names_each_node_its_phase_and_its_task_error(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    failing = state(
        task("a2", "id2", state="failed", desired_state="shutdown", error="task: non-zero exit (64)", container_id="c2"),
        task("a3", "id2", state="pending"),
        task("t1", "id1", container_id="c1"),
    )
    monkeypatch.setattr(converge_module.dockerapi, "service_state", FakeService(failing))
    logs = {"c1": "line one\nline two\n", "c2": "swarmkit: starting\nswarmkit: HOSTNAME_COMMAND printed nothing: true\n\n"}
    monkeypatch.setattr(converge_module.dockerapi, "container_output", lambda engine, container, tail=None: logs[container])
    monkeypatch.setattr(
        converge_module, "broker_metadata", lambda b, t, security=None: metadata(BrokerInfo(111, "elsewhere", 9094))
    )
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(converge_module.waits.time, "monotonic", lambda: next(clock))
    with pytest.raises(DeployError) as raised:
        converge([target(1), target(2), target(3)], watch(stall=15))
    message = raised.value.message
    assert "(no progress for 15s) on 3 of 3 node(s)" in message
    assert (
        "n1 (container running, not answering yet): task kafka_broker.id1.t1 runs, but 10.9.0.11:9094 advertises "
        "elsewhere:9094, expected n1:9094; its log: line one | line two" in message
    )
    assert (
        "n2 (task waiting for a node's resources): task kafka_broker.id2.a3 is pending (desired running); "
        "last failure: task: non-zero exit (64) (swarmkit: HOSTNAME_COMMAND printed nothing: true)" in message
    )
    assert "n3 (no task scheduled yet): no broker task on this node" in message
    assert "docker service ps --no-trunc kafka_broker" in raised.value.hint


def test_a_slow_start_that_keeps_changing_phase_outlasts_the_stall_timeout(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    phases = ["new", "pending", "assigned", "accepted", "preparing", "starting", "running"]
    service = FakeService(*(state(task("t1", "id1", state=phase)) for phase in phases))
    monkeypatch.setattr(converge_module.dockerapi, "service_state", service)
    monkeypatch.setattr(converge_module, "broker_metadata", lambda b, t, security=None: metadata(BrokerInfo(111, "n1", 9094)))
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(converge_module.waits.time, "monotonic", lambda: next(clock))
    targets = [target(1)]
    converge(targets, watch(stall=25))
    assert targets[0].task_id == "t1"


def test_a_crash_looping_broker_fails_the_wait_at_once(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    def failed(n: int) -> TaskState:
        return task(f"f{n}", "id1", state="failed", error="task: non-zero exit (1)")

    service = FakeService(
        state(task("a1", "id1", state="starting")), state(failed(1), failed(2), failed(3), task("a4", "id1", state="starting"))
    )
    monkeypatch.setattr(converge_module.dockerapi, "service_state", service)
    monkeypatch.setattr(converge_module.dockerapi, "container_output", lambda engine, container, tail=None: "")
    with pytest.raises(DeployError, match="3 failed starts in a row"):
        converge([target(1)], watch())
    assert service.polls == 2


def test_a_paused_update_fails_at_once(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    service = FakeService(state(task("t1", "id1", state="failed", error="exit 64"), update="paused"))
    monkeypatch.setattr(converge_module.dockerapi, "service_state", service)
    with pytest.raises(DeployError, match="stopped \\(paused\\): update paused due to failure"):
        converge([target(1)], watch())
    assert service.polls == 1
