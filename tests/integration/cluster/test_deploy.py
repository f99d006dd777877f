"""`up` and `deploy` on a real 3-host sandbox with the tansu engine (one sandbox, one swarm for the module).

The tests run in order: bad input first (nothing may exist afterwards), then `up` with topics, an
unchanged `up` that must restart nothing, a topic mismatch, then the other advertise modes as
separate stacks on other ports (a fresh stack starts in seconds; changing one stack's advertise
mode would roll every broker with the stack's 10 s update delay).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from swarmkit.errors import DeployError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.roles import NodeRole
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import broker_metadata
from swarmkit.ops.deploy import DeployResult, deploy, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.state import Sandbox
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.swarm.identity import ID_LABEL, NEXT_LABEL
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

TOPICS = "myTopic:3:1,anotherTopic:2:1"
BAD_SPECS = ["a:3:5", "bad name!:1:1", "x:0:1"]
COMMAND_OPTIONS = DeployOptions(  # each broker advertises b<its broker id>.example, read from its identity
    advertise="command",
    hostname_command="echo b$(sed -n 's/^BROKER_ID=//p' /swarmkit/identity/node.env).example",
    stack_name="cmd",
    listeners=ListenerPlan.build(external_port=9294),
)


dp = module_sandbox("dp", 3, "10.246.0.0/24")


@pytest.fixture(scope="module")
def inventory(dp: Sandbox) -> Inventory:
    return load_inventory(dp.inventory_path)


@pytest.fixture(scope="module")
def docker(inventory: Inventory) -> DockerHosts:
    return DockerHosts.from_inventory(inventory)


def manager(inventory: Inventory) -> Engine:
    return DockerHosts.from_inventory(inventory)[inventory.first_manager]


def running_tasks(inventory: Inventory, service: str) -> dict[str, tuple[str, str]]:
    """Swarm node id -> (task id, container id) of each running task; fails on two tasks on one node."""
    state = dockerapi.service_state(manager(inventory), service)
    assert state is not None, f"{service} is not deployed"
    running = [t for t in state.tasks if t.desired_state == "running" and t.state == "running"]
    per_node = Counter(t.node_id for t in running)
    assert all(count == 1 for count in per_node.values()), per_node
    return {t.node_id: (t.id, t.container_id) for t in running}


def advertised(address: str, port: int) -> list[str]:
    """What the broker at address:port advertises, asked from this machine."""
    return [broker.endpoint for broker in broker_metadata(f"{address}:{port}", timeout=5).brokers]


def identity_file(inventory: Inventory, result: DeployResult, host_name: str) -> str:
    engine = DockerHosts.from_inventory(inventory)[inventory.host(host_name)]
    node = next(n for n in result.nodes if n.host == host_name)
    (container,) = engine.client.container.list(filters=[("label", f"com.docker.swarm.task.id={node.task_id}")])
    return container.execute(["cat", "/swarmkit/identity/node.env"])


@pytest.mark.parametrize("topics", BAD_SPECS)
def test_bad_topic_specs_stop_up_before_preflight_or_swarm(inventory: Inventory, docker: DockerHosts, topics: str) -> None:
    with pytest.raises(SpecError) as raised:
        up(plan(inventory, DeployOptions(topics=topics)), Session.of(inventory, docker=docker))
    assert raised.value.hint
    assert {dockerapi.engine_info(docker[h]).swarm_state for h in inventory.hosts} == {"inactive"}


def test_up_deploys_one_broker_per_node_advertising_its_hostname_with_topics(inventory: Inventory, docker: DockerHosts) -> None:
    progress: list[tuple[int, int, str]] = []
    started = time.monotonic()
    result = up(
        plan(inventory, DeployOptions(topics=TOPICS)),
        Session.of(inventory, docker=docker, progress=lambda *report: progress.append(report)),
    )
    print(
        f"\nup: {time.monotonic() - started:.1f}s, deploy {result.deploy.deploy_s:.1f}s, converge {result.deploy.converge_s:.1f}s"
    )
    assert result.preflight is not None and result.preflight.ok
    assert [a.action for a in result.swarm.actions] == ["init", "join", "join"]
    assert result.ok, result.deploy.problems
    assert progress[-1][:2] == (3, 3) and any(done == 3 and "serving" in message for done, _, message in progress)

    tasks = running_tasks(inventory, "kafka_broker")
    nodes = {n.host: n for n in result.deploy.nodes}
    assert set(tasks) == {n.node_id for n in nodes.values()}
    for host in inventory.hosts:
        assert advertised(host.address, 9094) == [f"{host.name}:9094"]
        assert advertised(host.name, 9094) == [f"{host.name}:9094"]  # the advertised name resolves from here
        assert nodes[host.name].advertised == f"{host.name}:9094"
        metadata = broker_metadata(f"{host.address}:9094")
        assert (metadata.topic("myTopic").partition_count, metadata.topic("anotherTopic").partition_count) == (3, 2)
    assert Counter(t.status for t in result.deploy.topics) == {"created": 6}

    assert [nodes[h.name].broker_id for h in inventory.hosts] == [1, 2, 3]
    labels = {n.hostname: n.labels for n in dockerapi.swarm_nodes(manager(inventory))}
    assert {name: labels[name][ID_LABEL] for name in labels} == {"dp1": "1", "dp2": "2", "dp3": "3"}
    assert labels["dp1"][NEXT_LABEL] == "4"
    assert {n.identity for n in result.deploy.nodes} == {"unused"}  # tansu advertising hostnames never reads it


def test_up_again_restarts_nothing(inventory: Inventory, docker: DockerHosts) -> None:
    before = running_tasks(inventory, "kafka_broker")
    started = time.monotonic()
    result = up(plan(inventory, DeployOptions(topics=TOPICS)), Session.of(inventory, docker=docker))
    print(f"\nunchanged up: {time.monotonic() - started:.1f}s (deploy {result.deploy.total_s:.1f}s)")
    assert result.ok
    assert not result.swarm.changed
    assert running_tasks(inventory, "kafka_broker") == before
    assert {(n.identity, n.new_id) for n in result.deploy.nodes} == {("unused", False)}
    assert Counter(t.status for t in result.deploy.topics) == {"exists": 6}


def test_the_wheel_without_the_spark_extra_runs_up_and_verify(
    dp: Sandbox, inventory: Inventory, installed_without_spark: Path, tmp_path: Path
) -> None:
    """`pip install swarmkit-kafka` (no [spark]): `up` and `verify` work on the running cluster from another
    directory, and `verify --spark` names the extra (exit 2) before it checks anything."""

    def swarmkit(*arguments: str) -> subprocess.CompletedProcess:
        return run_installed(installed_without_spark, tmp_path, "swarmkit", *arguments, "-i", str(dp.inventory_path))

    assert run_installed(installed_without_spark, tmp_path, "python", "-c", "import pyspark").returncode == 1
    before = running_tasks(inventory, "kafka_broker")
    upped = swarmkit("up", "--topics", TOPICS)
    assert upped.returncode == 0 and "Traceback" not in upped.stderr, upped.stderr
    assert running_tasks(inventory, "kafka_broker") == before
    verified = swarmkit("verify")
    assert verified.returncode == 0 and "Traceback" not in verified.stderr, verified.stdout + verified.stderr
    refused = swarmkit("verify", "--spark")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "spark extra" in refused.stderr and "swarmkit-kafka[spark]" in refused.stderr


def run_installed(bin_dir: Path, cwd: Path, program: str, *arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / program), *arguments], cwd=cwd, capture_output=True, text=True, timeout=600)


def test_a_topic_that_differs_from_its_spec_is_reported_and_left_alone(inventory: Inventory, docker: DockerHosts) -> None:
    before = running_tasks(inventory, "kafka_broker")
    result = deploy(plan(inventory, DeployOptions(topics="myTopic:5:1,anotherTopic:2:1")), Session.of(inventory, docker=docker))
    assert not result.ok
    assert {(t.name, t.status) for t in result.topics} == {("myTopic", "mismatch"), ("anotherTopic", "exists")}
    assert "myTopic" in result.error().message and "3 partitions" in result.error().message
    for host in inventory.hosts:
        assert broker_metadata(f"{host.address}:9094").topic("myTopic").partition_count == 3
    assert running_tasks(inventory, "kafka_broker") == before


@pytest.mark.parametrize("topics", BAD_SPECS)
def test_bad_topic_specs_deploy_nothing_on_a_live_swarm(inventory: Inventory, docker: DockerHosts, topics: str) -> None:
    with pytest.raises(SpecError):
        deploy(plan(inventory, DeployOptions(topics=topics, stack_name="bad")), Session.of(inventory, docker=docker))
    assert dockerapi.stack_services(manager(inventory), "bad") == []
    for host in inventory.hosts:
        assert not docker[host].client.volume.exists("bad_identity")


@pytest.mark.parametrize("reserved", [{ID_LABEL: "99"}, {"Swarmkit.host": "dp1"}, {f"{NEXT_LABEL}": "1"}])
def test_swarmkits_own_node_labels_cannot_be_set_from_the_inventory(
    inventory: Inventory, tmp_path: Path, reserved: dict[str, str]
) -> None:
    """An inventory label in swarmkit's namespace once overwrote a node's broker id (2 -> 99) with exit 0. Now `up`
    and `swarm up` refuse the inventory (exit 2, one error line and a hint, one JSON object) and no node's labels
    change, not even by the inventory's other, allowed label."""
    before = {node.hostname: node.labels for node in dockerapi.swarm_nodes(manager(inventory))}
    assert before["dp2"][ID_LABEL].isdigit()
    document = yaml.safe_load(Path(inventory.path).read_text())
    document["hosts"][1]["labels"] = {"app.role": "web", **reserved}
    hostile = tmp_path / "reserved.yaml"
    hostile.write_text(yaml.safe_dump(document))
    for command in (["up", "--skip-preflight"], ["swarm", "up", "--skip-preflight"]):
        done = subprocess.run(
            [str(Path(sys.executable).with_name("swarmkit")), *command, "-i", str(hostile), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stdout + done.stderr
        assert "swarmkit's own namespace" in json.loads(done.stdout)["error"]
        assert [line.split(":")[0] for line in done.stderr.splitlines()] == ["error", "hint"]
    assert {node.hostname: node.labels for node in dockerapi.swarm_nodes(manager(inventory))} == before


def test_inventory_address_mode_advertises_each_hosts_address(inventory: Inventory, docker: DockerHosts) -> None:
    options = DeployOptions(
        advertise="inventory-address", stack_name="addr", listeners=ListenerPlan.build(external_port=9194), topics="t:1:1"
    )
    result = deploy(plan(inventory, options), Session.of(inventory, docker=docker))
    print(f"\naddr stack: deploy {result.deploy_s:.1f}s, converge {result.converge_s:.1f}s")
    assert result.ok
    for host in inventory.hosts:
        assert advertised(host.address, 9194) == [f"{host.address}:9194"]
    assert len(running_tasks(inventory, "addr_broker")) == 3
    assert identity_file(inventory, result, "dp2") == "BROKER_ID=2\nNODE_ADDRESS=10.246.0.12"


def test_a_changed_inventory_address_restarts_only_that_broker_with_its_id(
    dp: Sandbox, inventory: Inventory, docker: DockerHosts
) -> None:
    """dp2 gets a second address on its interface and the inventory names it: on the next deploy its broker
    alone restarts, keeps broker id and advertises the new address; the other brokers' tasks stay."""
    options = DeployOptions(
        advertise="inventory-address", stack_name="addr", listeners=ListenerPlan.build(external_port=9194), topics="t:1:1"
    )
    before = running_tasks(inventory, "addr_broker")
    moved = dp.host("dp2")
    new_address = moved.address.rsplit(".", 1)[0] + ".112"
    netns = ["nsenter", f"--net=/var/run/netns/{moved.netns}", "ip", "addr"]
    subprocess.run([*netns, "add", f"{new_address}/24", "dev", "eth0"], check=True)
    try:
        hosts = tuple(replace(h, address=new_address) if h.name == "dp2" else h for h in inventory.hosts)
        result = deploy(
            plan(replace(inventory, hosts=hosts), options), Session.of(replace(inventory, hosts=hosts), docker=docker)
        )
        after = running_tasks(inventory, "addr_broker")
        identities = {n.host: (n.identity, n.broker_id) for n in result.nodes}
        assert identities["dp2"] == ("replaced", 2) and {identities["dp1"][0], identities["dp3"][0]} == {"unchanged"}
        assert advertised(new_address, 9194) == [f"{new_address}:9194"]
        node2 = next(n.node_id for n in result.nodes if n.host == "dp2")
        assert after[node2] != before[node2]
        assert {k: v for k, v in after.items() if k != node2} == {k: v for k, v in before.items() if k != node2}
    finally:
        subprocess.run([*netns, "del", f"{new_address}/24", "dev", "eth0"], check=False)


def test_hostname_command_mode_advertises_what_the_command_prints_on_each_node(inventory: Inventory, docker: DockerHosts) -> None:
    result = deploy(plan(inventory, COMMAND_OPTIONS), Session.of(inventory, docker=docker))
    ids = {n.host: n.broker_id for n in result.nodes}
    for host in inventory.hosts:
        assert advertised(host.address, 9294) == [f"b{ids[host.name]}.example:9294"]
    assert sorted(n.advertised for n in result.nodes) == ["b1.example:9294", "b2.example:9294", "b3.example:9294"]
    assert len(running_tasks(inventory, "cmd_broker")) == 3
    assert running_tasks(inventory, "kafka_broker")  # the first stack still runs beside it


def test_a_broker_that_cannot_start_is_named_with_its_task_error(inventory: Inventory, docker: DockerHosts) -> None:
    options = DeployOptions(  # a HOSTNAME_COMMAND that prints nothing: the entrypoint exits 64
        advertise="command",
        hostname_command="true",
        stack_name="broken",
        listeners=ListenerPlan.build(external_port=9394),
        timeout=8,
    )
    with pytest.raises(DeployError) as raised:
        deploy(plan(inventory, options), Session.of(inventory, docker=docker))
    print(f"\n{raised.value.message}\nhint: {raised.value.hint}")
    assert "3 of 3 node(s)" in raised.value.message
    for host in inventory.hosts:  # each named with its phase, then what its task says
        assert re.search(rf"\b{host.name} \(.*?\): task broken_broker\.", raised.value.message)
    assert "non-zero exit (64) (swarmkit: HOSTNAME_COMMAND printed nothing: true)" in raised.value.message
    assert "docker service ps --no-trunc broken_broker" in raised.value.hint


def test_a_node_joined_by_hand_gets_an_id_and_a_broker_on_the_next_deploy(inventory: Inventory, docker: DockerHosts) -> None:
    """dp4 is not in the inventory and swarmkit never talks to its engine: an operator ran the command
    `swarmkit join` prints there.  Deploy of the stack whose hostname command reads the broker id writes
    dp4's identity through a swarm job and waits for its broker."""
    joined = sandbox.add_node("dp")
    token = dockerapi.join_token(docker[inventory.first_manager], NodeRole.WORKER)
    dockerapi.swarm_join(joined.docker, inventory.first_manager.address, token, joined.address)  # the operator's step
    result = deploy(plan(inventory, COMMAND_OPTIONS), Session.of(inventory, docker=docker))
    node = next(n for n in result.nodes if n.host == joined.name)
    assert (node.broker_id, node.new_id, node.identity, node.eligible) == (4, True, "written", True)
    assert advertised(joined.address, 9294) == ["b4.example:9294"]
    assert node.task_id and node.advertised == "b4.example:9294"
    services = [service.spec.name for service in manager(inventory).client.service.list()]
    assert not [name for name in services if "_identity-" in name]  # the one-off identity job is gone
