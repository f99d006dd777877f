"""Deploy logic without engines: options, validation order, the swarm checks, convergence, results."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swarmkit import waits
from swarmkit.errors import BrokerError, DeployError, EngineError, SpecError
from swarmkit.hosts.dockerapi import DockerHosts, Engine, ServiceState, SwarmNode, TaskState
from swarmkit.hosts.inventory import Host, Inventory, StackDefaults
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import BrokerInfo, ClusterMetadata, TopicResult
from swarmkit.ops import deploy as deploy_module
from swarmkit.ops.deploy import DeployResult, NodeResult, _Member, _Target
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.stack.compose import expected_advertised_host
from swarmkit.stack.engines import apache
from swarmkit.stack.listeners import ListenerPlan

INVENTORY = Inventory(
    hosts=tuple(
        Host(f"n{i}", f"unix:///run/n{i}.sock", f"10.9.0.{10 + i}", "manager" if i == 1 else "worker") for i in (1, 2, 3)
    ),
    stack=StackDefaults(engine="tansu", image="registry:5000/swarmkit/tansu:0.6.0"),
)
DOCKER = DockerHosts.from_inventory(INVENTORY)  # clients only: the tests replace every engine call


def swarm_node(i: int, **changes) -> SwarmNode:
    base = SwarmNode(f"id{i}", f"n{i}", "manager" if i == 1 else "worker", "ready", "active", f"10.9.0.{10 + i}", {})
    return replace(base, **changes)


class Untouchable:
    """Stands for every engine: any call fails the test (bad input must change nothing)."""

    def __getattr__(self, name: str):
        raise AssertionError(f"an engine was contacted ({name}) before the input was validated")


@pytest.fixture
def no_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy_module, "dockerapi", Untouchable())
    monkeypatch.setattr(deploy_module, "swarm", Untouchable())
    monkeypatch.setattr(deploy_module, "identity", Untouchable())
    monkeypatch.setattr(deploy_module, "run_preflight", lambda *a, **k: pytest.fail("preflight ran before validation"))


# --- options and validation -----------------------------------------------------------------------


def test_options_take_engine_and_image_from_the_inventory() -> None:
    resolved = DeployOptions().resolved(INVENTORY)
    assert (resolved.engine, resolved.image) == ("tansu", "registry:5000/swarmkit/tansu:0.6.0")


def test_another_engine_does_not_inherit_the_inventorys_image() -> None:
    resolved = DeployOptions(engine="apache").resolved(INVENTORY)
    assert (resolved.engine, resolved.image) == ("apache", None)


@pytest.mark.parametrize(
    ("topics", "message"),
    [
        ("a:3:5", "5 replicas"),
        ("bad name!:1:1", "illegal characters"),
        ("x:0:1", "partitions"),
        ("x:1", "expected name:partitions:replicas"),
    ],
)
def test_bad_topic_specs_fail_before_any_engine_is_contacted(no_engines: None, topics: str, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        deploy_module.deploy(plan(INVENTORY, DeployOptions(topics=topics)), Session.of(INVENTORY))
    with pytest.raises(SpecError, match=message):
        deploy_module.up(plan(INVENTORY, DeployOptions(topics=topics)), Session.of(INVENTORY))


def test_more_replicas_than_brokers_fails_for_a_shared_cluster(no_engines: None) -> None:
    with pytest.raises(SpecError, match="3 broker"):
        deploy_module.deploy(plan(INVENTORY, DeployOptions(engine="apache", topics="a:3:5")), Session.of(INVENTORY))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (DeployOptions(engine="kafka9"), "unknown engine"),
        (DeployOptions(advertise="command"), "needs a HOSTNAME_COMMAND"),
        (DeployOptions(stack_name="Bad Name"), "stack name"),
        (DeployOptions(timeout=0), "timeout"),
        (DeployOptions(topics="t:1:1", check_kafka=False), "topics"),
        (DeployOptions(engine="apache", cluster_id="short"), "not a KRaft cluster id"),
    ],
)
def test_bad_options_fail_before_any_engine_is_contacted(no_engines: None, options: DeployOptions, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        deploy_module.deploy(plan(INVENTORY, options), Session.of(INVENTORY))


def test_an_unknown_engine_in_the_inventory_fails_before_any_engine_is_contacted(no_engines: None) -> None:
    inventory = replace(INVENTORY, stack=StackDefaults(engine="redpanda"))
    with pytest.raises(SpecError, match="engine: unknown engine 'redpanda'") as caught:
        deploy_module.up(plan(inventory, DeployOptions()), Session.of(inventory))
    assert "stack.engine in the inventory" in caught.value.hint


@pytest.mark.parametrize(
    ("image", "pulled", "shipped"),
    [
        ("registry:5000/swarmkit/tansu:0.6.0", ["registry:5000/swarmkit/tansu:0.6.0"], []),
        ("swarmkit/tansu:0.6.0", [], ["swarmkit/tansu:0.6.0"]),  # swarmkit's own: in no registry
        ("apache/kafka:4.4.0", ["apache/kafka:4.4.0"], []),
    ],
)
def test_up_ships_swarmkits_own_broker_image_and_pulls_any_other(
    monkeypatch: pytest.MonkeyPatch, image: str, pulled: list[str], shipped: list[str]
) -> None:
    calls: dict[str, list[str]] = {"pulled": [], "shipped": []}
    monkeypatch.setattr(deploy_module.dockerapi, "ensure_image", lambda engine, tag: calls["pulled"].append(tag))
    monkeypatch.setattr(deploy_module.shipping, "ensure_here", lambda local, tag: False)
    monkeypatch.setattr(deploy_module.shipping, "ship", lambda *args, **kwargs: calls["shipped"].append(args[-1]))
    monkeypatch.setattr(deploy_module.swarm, "swarm_up", lambda *args, **kwargs: None)
    monkeypatch.setattr(deploy_module, "deploy", lambda *args, **kwargs: None)
    engine = "apache" if image.startswith("apache") else "tansu"
    options = DeployOptions(engine=engine, image=image, cluster_id="AAAAAAAAAAAAAAAAAAAAAw")
    deploy_module.up(plan(INVENTORY, options), Session.of(INVENTORY, docker=DOCKER, local=DOCKER[INVENTORY.hosts[0]]), None)
    assert calls == {"pulled": pulled * len(INVENTORY.hosts), "shipped": shipped}


def test_up_stops_before_the_swarm_step_when_this_machine_cannot_provide_swarmkits_image(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(deploy_module.swarm, "swarm_up", lambda *args, **kwargs: pytest.fail("a host was changed first"))
    local = Engine.connect("unix:///nonexistent/here.sock")
    options = DeployOptions(image="swarmkit/tansu:0.6.0")
    with pytest.raises(EngineError, match="nonexistent/here.sock does not answer") as raised:
        deploy_module.up(plan(INVENTORY, options), Session.of(INVENTORY, docker=DOCKER, local=local), None)
    assert raised.value.hint


def test_render_for_tansu_is_pure_and_stable(no_engines: None) -> None:
    options = DeployOptions(topics="myTopic:3:1", advertise="inventory-address")
    first = deploy_module.render_for(plan(INVENTORY, options), Session.of(INVENTORY))
    assert first == deploy_module.render_for(plan(INVENTORY, options), Session.of(INVENTORY))
    assert "registry:5000/swarmkit/tansu:0.6.0" in first.text and "SWARMKIT_ADVERTISE: inventory-address" in first.text
    assert first.files == ()  # tansu's entrypoint is image content


def test_render_for_apache_with_a_given_cluster_id_is_pure(no_engines: None) -> None:
    stack = deploy_module.render_for(
        plan(INVENTORY, DeployOptions(engine="apache", cluster_id="c3dhcm1raXQtZXhhbXBsZQ")), Session.of(INVENTORY)
    )
    assert "CLUSTER_ID: c3dhcm1raXQtZXhhbXBsZQ" in stack.text
    assert [config.filename for config in stack.files] == [
        "local-names.sh",
        "node-identity.sh",
        "entrypoint.sh",
        "controller.sh",
        "jmx-exporter.yml",
        "metrics-agent.sh",
    ]


def test_render_for_apache_without_any_kept_cluster_id_asks_for_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deploy_module, "_manager_nodes", lambda inventory, docker: None)
    with pytest.raises(SpecError, match="keeps no cluster id") as raised:
        deploy_module.render_for(plan(INVENTORY, DeployOptions(engine="apache")), Session.of(INVENTORY))
    assert "--cluster-id" in raised.value.hint


# --- the swarm's view -----------------------------------------------------------------------------


def fake_swarm(monkeypatch: pytest.MonkeyPatch, ids: dict[str, str], nodes: list[SwarmNode]) -> None:
    monkeypatch.setattr(deploy_module.swarm, "node_ids", lambda inventory, docker: ids)
    monkeypatch.setattr(deploy_module, "_manager_nodes", lambda inventory, docker: nodes)


def test_members_follow_inventory_order(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [swarm_node(3), swarm_node(1), swarm_node(2, availability="drain")]
    fake_swarm(monkeypatch, {"n1": "id1", "n2": "id2", "n3": "id3"}, nodes)
    members, _ = deploy_module._members(INVENTORY, DOCKER)
    assert [(m.host.name, m.node.id, m.eligible) for m in members] == [
        ("n1", "id1", True),
        ("n2", "id2", False),
        ("n3", "id3", True),
    ]


def test_a_host_outside_the_swarm_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_swarm(monkeypatch, {"n1": "id1"}, [swarm_node(1)])
    with pytest.raises(DeployError, match="not in a swarm: n2, n3"):
        deploy_module._members(INVENTORY, DOCKER)


def test_an_eligible_node_joined_by_hand_becomes_a_member_reached_through_the_swarm(monkeypatch: pytest.MonkeyPatch) -> None:
    stranger = swarm_node(9, hostname="stranger")
    gone = swarm_node(8, hostname="gone", state="down")  # a departed node gets no task: fine
    fake_swarm(
        monkeypatch, {"n1": "id1", "n2": "id2", "n3": "id3"}, [swarm_node(1), swarm_node(2), swarm_node(3), stranger, gone]
    )
    members, _ = deploy_module._members(INVENTORY, DOCKER)
    assert [(m.host.name, m.via_swarm) for m in members] == [("n1", False), ("n2", False), ("n3", False), ("stranger", True)]
    assert members[-1].host.address == stranger.address


def test_a_given_cluster_id_must_match_the_kept_one() -> None:
    from swarmkit.stack.engines import apache

    kept = swarm_node(1, labels={"swarmkit.cluster-id.kafka": "c3dhcm1raXQtZXhhbXBsZQ"})
    assert deploy_module._cluster_id(apache, DeployOptions(), [kept]) == "c3dhcm1raXQtZXhhbXBsZQ"
    with pytest.raises(DeployError, match="differs from c3dhcm1raXQtZXhhbXBsZQ"):
        deploy_module._cluster_id(apache, DeployOptions(cluster_id="AAAAAAAAAAAAAAAAAAAAAB"), [kept])
    fresh = deploy_module._cluster_id(apache, DeployOptions(), [swarm_node(1)])
    assert len(fresh) == 22


# --- convergence ----------------------------------------------------------------------------------


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


def target(i: int, expected: str | None = "n{i}:9094") -> _Target:
    member = _Member(INVENTORY.hosts[i - 1], swarm_node(i))
    return _Target(member, i, f"10.9.0.{10 + i}:9094", expected.format(i=i) if expected else None)


def metadata(*brokers: BrokerInfo) -> ClusterMetadata:
    return ClusterMetadata("x", None, -1, brokers, ())


def test_expected_hosts_per_advertise_mode() -> None:
    assert expected_advertised_host("hostname", "node-two", "10.9.0.12") == "node-two"
    assert expected_advertised_host("inventory-address", "node-two", "10.9.0.12") == "10.9.0.12"
    assert expected_advertised_host("command", "node-two", "10.9.0.12") is None


def test_probe_checks_what_the_node_advertises(monkeypatch: pytest.MonkeyPatch) -> None:
    answers = {
        "10.9.0.11:9094": metadata(BrokerInfo(111, "n1", 9094)),
        "10.9.0.12:9094": metadata(BrokerInfo(111, "wrong", 9094)),
    }
    monkeypatch.setattr(deploy_module, "broker_metadata", lambda bootstrap, timeout, security=None: answers[bootstrap])
    assert deploy_module._probe(target(1)) == ("n1:9094", "")
    assert deploy_module._probe(target(2)) == ("wrong:9094", "10.9.0.12:9094 advertises wrong:9094, expected n2:9094")
    assert deploy_module._probe(target(2, expected=None)) == ("wrong:9094", "")


def test_probe_finds_its_own_broker_in_a_shared_cluster_by_id(monkeypatch: pytest.MonkeyPatch) -> None:
    shared = metadata(BrokerInfo(1, "n1", 9094), BrokerInfo(2, "n2", 9094), BrokerInfo(3, "n3", 9094))
    monkeypatch.setattr(deploy_module, "broker_metadata", lambda bootstrap, timeout, security=None: shared)
    assert deploy_module._probe(target(2)) == ("n2:9094", "")


def test_probe_reports_a_port_that_does_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def silent(bootstrap: str, timeout: float, security: object = None) -> ClusterMetadata:
        raise BrokerError("no Kafka metadata from 10.9.0.11:9094 within 2s: Connection refused")

    monkeypatch.setattr(deploy_module, "broker_metadata", silent)
    advertised, problem = deploy_module._probe(target(1))
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


def watch(check_kafka: bool = True, stall: float = 60, cap: float = 600, markers=()) -> deploy_module._Watch:
    return deploy_module._Watch(check_kafka, waits.WaitLimits(stall, cap), markers)


def converge(targets: list[_Target], wait: deploy_module._Watch, reports: list | None = None) -> None:
    report = (lambda *r: reports.append(r)) if reports is not None else (lambda *r: None)
    deploy_module._converge(DOCKER, DOCKER[INVENTORY.first_manager], "kafka_broker", targets, wait, report)


def test_converge_waits_for_current_running_tasks_that_answer(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    service = FakeService(
        state(task("old1", "id1", current=False), task("t2", "id2", state="starting")),
        state(task("old1", "id1", current=False), task("t2", "id2")),
        state(task("t1", "id1"), task("t2", "id2")),
    )
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", service)
    monkeypatch.setattr(
        deploy_module, "broker_metadata", lambda b, t, security=None: metadata(BrokerInfo(111, f"n{b[-6]}", 9094))
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
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", FakeService(state(task("t1", "id1", container_id="c1"))))
    logs = iter(
        ["swarmkit: waiting for the controller quorum: 1 of 3 voters listen, 2 needed (4s)", "===> Launching kafka.Kafka"]
    )
    monkeypatch.setattr(deploy_module.dockerapi, "container_output", lambda engine, container, tail=None: next(logs, ""))
    answers = iter([BrokerError("refused"), BrokerError("refused")])

    def probe(bootstrap: str, timeout: float, security=None) -> ClusterMetadata:
        error = next(answers, None)
        if error:
            raise error
        return metadata(BrokerInfo(111, "n1", 9094))

    monkeypatch.setattr(deploy_module, "broker_metadata", probe)
    reports: list[tuple[int, int, str]] = []
    converge([target(1)], watch(markers=apache.START_MARKERS), reports)
    assert [message for _, _, message in reports] == [
        "n1: waiting for the controller quorum: 1 of 3 voters listen, 2 needed",
        "n1: JVM starting",
        "n1: serving as n1:9094",
    ]


def test_converge_without_kafka_only_needs_running_tasks(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", FakeService(state(task("t1", "id1"))))
    monkeypatch.setattr(deploy_module, "broker_metadata", lambda b, t, security=None: pytest.fail("Kafka was asked"))
    targets = [target(1)]
    converge(targets, watch(check_kafka=False))
    assert targets[0].task_id == "t1"


def test_a_stall_names_each_node_its_phase_and_its_task_error(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    failing = state(
        task("a2", "id2", state="failed", desired_state="shutdown", error="task: non-zero exit (64)", container_id="c2"),
        task("a3", "id2", state="pending"),
        task("t1", "id1", container_id="c1"),
    )
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", FakeService(failing))
    logs = {"c1": "line one\nline two\n", "c2": "swarmkit: starting\nswarmkit: HOSTNAME_COMMAND printed nothing: true\n\n"}
    monkeypatch.setattr(deploy_module.dockerapi, "container_output", lambda engine, container, tail=None: logs[container])
    monkeypatch.setattr(
        deploy_module, "broker_metadata", lambda b, t, security=None: metadata(BrokerInfo(111, "elsewhere", 9094))
    )
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(deploy_module.waits.time, "monotonic", lambda: next(clock))
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
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", service)
    monkeypatch.setattr(deploy_module, "broker_metadata", lambda b, t, security=None: metadata(BrokerInfo(111, "n1", 9094)))
    clock = iter(range(0, 1000, 10))
    monkeypatch.setattr(deploy_module.waits.time, "monotonic", lambda: next(clock))
    targets = [target(1)]
    converge(targets, watch(stall=25))
    assert targets[0].task_id == "t1"


def test_a_crash_looping_broker_fails_the_wait_at_once(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    def failed(n: int) -> TaskState:
        return task(f"f{n}", "id1", state="failed", error="task: non-zero exit (1)")

    service = FakeService(
        state(task("a1", "id1", state="starting")), state(failed(1), failed(2), failed(3), task("a4", "id1", state="starting"))
    )
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", service)
    monkeypatch.setattr(deploy_module.dockerapi, "container_output", lambda engine, container, tail=None: "")
    with pytest.raises(DeployError, match="3 failed starts in a row"):
        converge([target(1)], watch())
    assert service.polls == 2


def test_a_paused_update_fails_at_once(monkeypatch: pytest.MonkeyPatch, fast: None) -> None:
    service = FakeService(state(task("t1", "id1", state="failed", error="exit 64"), update="paused"))
    monkeypatch.setattr(deploy_module.dockerapi, "service_state", service)
    with pytest.raises(DeployError, match="stopped \\(paused\\): update paused due to failure"):
        converge([target(1)], watch())
    assert service.polls == 1


# --- results --------------------------------------------------------------------------------------


def result(*topics: TopicResult) -> DeployResult:
    node = NodeResult("n1", "id1", "n1", 1, True, "written", True, "t1", "n1:9094")
    return DeployResult("kafka", "tansu", "img", "hostname", None, (node,), topics, 1.234, 2.345, 3.579)


def test_a_topic_mismatch_makes_the_result_fail_clearly() -> None:
    good = TopicResult("10.9.0.11:9094", "a", "exists", 3, 1)
    bad = TopicResult("10.9.0.11:9094", "b", "mismatch", 2, 1, detail="exists with 2 partitions x 1 replicas, spec asks 5 x 1")
    assert result(good).ok
    failed = result(good, bad)
    assert not failed.ok
    error = failed.error()
    assert "topic b on 10.9.0.11:9094: mismatch: exists with 2 partitions" in error.message
    assert "never alters" in error.hint


def test_result_to_dict_is_plain_data() -> None:
    data = result(TopicResult("10.9.0.11:9094", "a", "created", 3, 1)).to_dict()
    assert data["ok"] is True and data["problems"] == []
    assert data["nodes"][0] == {
        "host": "n1",
        "node_id": "id1",
        "hostname": "n1",
        "broker_id": 1,
        "new_id": True,
        "identity": "written",
        "eligible": True,
        "task_id": "t1",
        "advertised": "n1:9094",
    }
    assert data["topics"][0]["status"] == "created" and (data["deploy_s"], data["total_s"]) == (1.23, 3.58)


def test_render_for_publishes_the_chosen_external_port(no_engines: None) -> None:
    options = DeployOptions(listeners=ListenerPlan.build(external_port=29094))
    assert "published: 29094" in deploy_module.render_for(plan(INVENTORY, options), Session.of(INVENTORY)).text
