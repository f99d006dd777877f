"""Deploy logic without engines: options, validation order, the swarm checks, results (the wait: test_converge)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swarmkit.errors import DeployError, EngineError, SpecError
from swarmkit.hosts.dockerapi import DockerHosts, Engine, SwarmNode
from swarmkit.hosts.inventory import Host, Inventory, StackDefaults
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import TopicResult
from swarmkit.ops import deploy as deploy_module
from swarmkit.ops.deploy import DeployResult, NodeResult
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
    kept = swarm_node(1, labels={"swarmkit.cluster-id.kafka": "c3dhcm1raXQtZXhhbXBsZQ"})
    assert deploy_module._cluster_id(apache, DeployOptions(), [kept]) == "c3dhcm1raXQtZXhhbXBsZQ"
    with pytest.raises(DeployError, match="differs from c3dhcm1raXQtZXhhbXBsZQ"):
        deploy_module._cluster_id(apache, DeployOptions(cluster_id="AAAAAAAAAAAAAAAAAAAAAB"), [kept])
    fresh = deploy_module._cluster_id(apache, DeployOptions(), [swarm_node(1)])
    assert len(fresh) == 22


def test_expected_hosts_per_advertise_mode() -> None:
    assert expected_advertised_host("hostname", "node-two", "10.9.0.12") == "node-two"
    assert expected_advertised_host("inventory-address", "node-two", "10.9.0.12") == "10.9.0.12"
    assert expected_advertised_host("command", "node-two", "10.9.0.12") is None


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
