"""`swarmkit verify` on a real 3-host swarm (tansu): health, a crashing broker named, scale-out (without Spark)."""

from __future__ import annotations

import time

import pytest

from swarmkit.checks import verify
from swarmkit.errors import DeployError
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops import deploy
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import plumbing
from swarmkit.sandbox.state import Sandbox
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.swarm import bootstrap as swarm
from tests.integration.sandboxes import fresh_sandbox

pytestmark = pytest.mark.integration

NAME = "vf"
TOPICS = "myTopic:3:1,anotherTopic:2:1"
VERIFY_BOUND_S = 30


@pytest.fixture(scope="module")
def vf(tmp_path_factory: pytest.TempPathFactory):
    with fresh_sandbox(NAME, 3, "10.248.0.0/24", "vf", tmp_path_factory.mktemp("vf")) as created:
        inventory = load_inventory(created.inventory_path)
        swarm.swarm_up(inventory, docker=DockerHosts.from_inventory(inventory))
        yield created


def inventory_of(box: Sandbox) -> Inventory:
    return load_inventory(box.inventory_path)


def deploy_with(inventory: Inventory, **options) -> deploy.DeployResult:
    return deploy.deploy(plan(inventory, DeployOptions(topics=TOPICS, timeout=60, **options)), Session.of(inventory))


def timed_verify(inventory: Inventory, **options) -> verify.VerifyReport:
    started = time.monotonic()
    report = verify.verify(Session.of(inventory), verify.VerifyOptions(timeout=3, **options))
    assert time.monotonic() - started < VERIFY_BOUND_S
    return report


def by_node(report: verify.VerifyReport) -> dict[str, verify.BrokerVerdict]:
    return {b.node: b for b in report.brokers}


def test_healthy_cluster_verifies_and_a_second_run_sees_no_change(vf: Sandbox) -> None:
    inventory = inventory_of(vf)
    deploy_with(inventory)
    first = timed_verify(inventory)
    assert first.ok, first.to_dict()
    assert [(b.node, b.advertised, b.expected) for b in first.brokers] == [
        (f"vf{i}", f"vf{i}:9094", f"vf{i}:9094") for i in (1, 2, 3)
    ]
    assert {(t.broker, t.topic) for t in first.topics if t.ok} == {
        (f"vf{i}:9094", topic) for i in (1, 2, 3) for topic in ("myTopic", "anotherTopic")
    }
    assert timed_verify(inventory).changes == ()


def test_a_blocked_client_port_is_named(vf: Sandbox) -> None:
    plumbing.firewall(NAME, "vf2", "9094/tcp", block=True)
    try:
        report = timed_verify(inventory_of(vf))
    finally:
        plumbing.firewall(NAME, "vf2", "9094/tcp", block=False)
    assert not report.ok
    failing = [b for b in report.brokers if not b.ok]
    assert [b.node for b in failing] == ["vf2"]
    assert "time out" in failing[0].detail and "open 9094/tcp inbound on vf2" in failing[0].fix
    assert any("node lost: vf2" in change for change in report.changes)


def test_a_stopped_engine_is_named(vf: Sandbox) -> None:
    sandbox.stop_engine(NAME, "vf3")
    try:
        report = timed_verify(inventory_of(vf))
    finally:
        sandbox.start_engine(NAME, "vf3")
    assert not report.ok
    (failing,) = [b for b in report.brokers if not b.ok]
    assert failing.node == "vf3" and "Docker engine of vf3 does not answer" in failing.detail
    assert failing.fix.startswith("on vf3 (") and "start dockerd" in failing.fix  # the cause's own fix, on that host


def side_stack(name: str, port: int) -> dict:
    """A second stack on other ports: a fresh deploy (no rolling update of the main stack) per drill."""
    return {"stack_name": name, "listeners": ListenerPlan.build(internal_port=port + 100, external_port=port)}


def test_a_crashing_broker_is_named(vf: Sandbox) -> None:
    """A HOSTNAME_COMMAND that prints nothing on vf3: that broker exits at start, again and again."""
    inventory = inventory_of(vf)
    command = 'test "$SWARMKIT_NODE_HOSTNAME" != vf3 && echo "$SWARMKIT_NODE_HOSTNAME"'
    with pytest.raises(DeployError, match="vf3"):
        deploy.deploy(
            plan(
                inventory,
                DeployOptions(
                    advertise="command", hostname_command=command, topics=TOPICS, timeout=20, **side_stack("crash", 9095)
                ),
            ),
            Session.of(inventory),
        )
    report = timed_verify(inventory, stack_name="crash", external_port=9095)
    assert not report.ok
    (failing,) = [b for b in report.brokers if not b.ok]
    assert failing.node == "vf3"
    assert "exit" in failing.detail or "failed" in failing.detail, failing.detail


def test_scale_out_is_reported_with_the_new_broker_checked(vf: Sandbox) -> None:
    """Spark through a broker added by scale-out is test_real_kafka's; `verify --spark` on tansu, test_ssh's."""
    inventory = inventory_of(vf)
    deploy_with(inventory)  # vf3's engine restarted earlier: its memory:// broker lost the topics
    assert timed_verify(inventory).ok
    sandbox.add_node(NAME)
    inventory = inventory_of(vf)
    swarm.swarm_up(inventory, docker=DockerHosts.from_inventory(inventory))
    deploy_with(inventory)
    report = timed_verify(inventory)
    assert report.ok, report.to_dict()
    assert "node added: vf4 (broker ok)" in report.changes
    assert by_node(report)["vf4"].advertised == "vf4:9094"
