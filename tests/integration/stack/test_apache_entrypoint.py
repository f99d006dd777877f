"""The apache engine's per-node entrypoint on real sandbox nodes, Kafka replaced by a recorder.

The official apache/kafka image cannot be pulled here, so a stand-in (busybox plus
``stacks/apache/recorder/run`` at the image's start command) is built on a sandbox host and pushed
to the sandbox registry; the rendered apache stack is deployed with it unchanged.  What Kafka
would have been given is read back from each container's log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

from swarmkit.assets import STACKS_DIR
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, TaskState
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.images import image
from swarmkit.ops.deploy import DeployResult, deploy
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.state import Sandbox
from swarmkit.stack.compose import kafka_env
from swarmkit.stack.kafka_settings import broker_settings
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.swarm import bootstrap as swarm
from swarmkit.swarm.identity import CLUSTER_ID_LABEL
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

T = TypeVar("T")
BROKER = "kafka_broker"
CONTROLLER = "kafka_controller-1"


def recorder_recipe() -> image.ImageRecipe:
    return image.ImageRecipe(
        tag="swarmkit/kafka-recorder:1",
        dockerfile=STACKS_DIR / "apache" / "recorder" / "Dockerfile",
        files=(
            (image.BUSYBOX, "busybox"),
            (STACKS_DIR / "apache" / "recorder" / "run", "run"),
            (STACKS_DIR / "apache" / "recorder" / "kafka-storage.sh", "kafka-storage.sh"),
        ),
    )


ap = module_sandbox("ap", 3, "10.247.0.0/24")


@pytest.fixture(scope="module")
def recorder(ap: Sandbox) -> str:
    return image.publish(ap.hosts[0].docker, recorder_recipe(), ap.registry)


@pytest.fixture(scope="module")
def first_deploy(ap: Sandbox, recorder: str) -> DeployResult:
    inventory = load_inventory(ap.inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    swarm.swarm_up(inventory, docker=docker)
    return deploy(plan(inventory, options(recorder)), Session.of(inventory, docker=docker))


def options(recorder: str) -> DeployOptions:
    return DeployOptions(engine="apache", image=recorder, check_kafka=False, timeout=60)


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = 30) -> T:
    deadline = time.monotonic() + timeout
    while (found := probe()) is None:
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return found


def running_task(manager: Engine, service: str, node_id: str) -> TaskState | None:
    state = dockerapi.service_state(manager, service)
    tasks = [t for t in state.tasks if t.node_id == node_id and t.desired_state == "running" and t.state == "running"]
    return tasks[0] if len(tasks) == 1 else None


def recorded(inventory: Inventory, service: str, host_name: str) -> tuple[TaskState, dict[str, str]] | None:
    """The running task on a host and the Kafka settings its recorder printed (None until it printed)."""
    docker = DockerHosts.from_inventory(inventory)
    node_id = swarm.node_ids(inventory, docker=docker)[host_name]
    task = running_task(docker[inventory.first_manager], service, node_id)
    if task is None:
        return None
    log = dockerapi.container_output(docker[inventory.host(host_name)], task.container_id)
    if "recorder: ready" not in log:
        return None
    env = dict(
        line.removeprefix("recorder: env ").split("=", 1) for line in log.splitlines() if line.startswith("recorder: env ")
    )
    return task, env


def all_recorded(inventory: Inventory) -> dict[str, tuple[TaskState, dict[str, str]]]:
    return {
        h.name: wait_until(f"the recorder on {h.name}", lambda h=h: recorded(inventory, BROKER, h.name)) for h in inventory.hosts
    }


def test_each_node_gets_a_distinct_id_and_its_own_listeners(ap: Sandbox, first_deploy: DeployResult) -> None:
    inventory = load_inventory(ap.inventory_path)
    seen = all_recorded(inventory)
    ids = {n.host: n.broker_id for n in first_deploy.nodes}
    assert sorted(ids.values()) == [1, 2, 3]
    for host in inventory.hosts:
        task, env = seen[host.name]
        assert env["KAFKA_NODE_ID"] == str(ids[host.name])
        assert env["KAFKA_PROCESS_ROLES"] == "broker"
        assert env["CLUSTER_ID"] == first_deploy.cluster_id
        assert env["KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS"] == "controllers:9093,controller-1:9093"  # one manager
        assert "KAFKA_START_COMMAND" not in env  # it would become a server property
        expected = kafka_env(broker_settings(ListenerPlan(), advertised_host=host.name, internal_host=task.name))
        assert {key: env[key] for key in expected} == expected
    controller_task, controller = wait_until("the controller's recorder", lambda: recorded(inventory, CONTROLLER, "ap1"))
    assert (controller["KAFKA_NODE_ID"], controller["KAFKA_PROCESS_ROLES"]) == ("9001", "controller")
    assert controller["KAFKA_LISTENERS"] == "CONTROLLER://:9093"
    assert controller["CLUSTER_ID"] == first_deploy.cluster_id
    docker = DockerHosts.from_inventory(inventory)
    log = dockerapi.container_output(docker[inventory.host("ap1")], controller_task.container_id)
    assert f"recorder: kafka-storage format --cluster-id {first_deploy.cluster_id}" in log
    assert "--initial-controllers 9001@controller-1:9093:" in log  # a dynamic quorum's first controller


def test_the_cluster_id_is_kept_in_the_swarm_and_a_redeploy_restarts_nothing(
    ap: Sandbox, recorder: str, first_deploy: DeployResult
) -> None:
    inventory = load_inventory(ap.inventory_path)
    labels = {n.hostname: n.labels for n in dockerapi.swarm_nodes(DockerHosts.from_inventory(inventory)[inventory.first_manager])}
    assert labels["ap1"][f"{CLUSTER_ID_LABEL}.kafka"] == first_deploy.cluster_id
    before = {name: task.id for name, (task, _) in all_recorded(inventory).items()}
    again = deploy(plan(inventory, options(recorder)), Session.of(inventory))
    assert again.cluster_id == first_deploy.cluster_id
    assert {name: task.id for name, (task, _) in all_recorded(inventory).items()} == before


def test_the_internal_host_resolves_from_another_broker(ap: Sandbox, first_deploy: DeployResult) -> None:
    """{{.Task.Name}}, what each broker advertises on the internal listener, seen from a peer over the overlay."""
    inventory = load_inventory(ap.inventory_path)
    seen = all_recorded(inventory)
    (ap1_task, _), (ap2_task, _) = seen["ap1"], seen["ap2"]
    container = DockerHosts.from_inventory(inventory)[inventory.host("ap1")].client.container
    answer = container.execute(ap1_task.container_id, ["nslookup", ap2_task.name])
    print(f"\nnslookup {ap2_task.name} from ap1's broker:\n{answer}")
    addresses = [line.split()[-1] for line in answer.splitlines()[2:] if line.startswith("Address")]
    assert addresses, answer


def test_a_restarted_task_keeps_its_id(ap: Sandbox, first_deploy: DeployResult) -> None:
    inventory = load_inventory(ap.inventory_path)
    before = all_recorded(inventory)
    old_task, old_env = before["ap2"]
    DockerHosts.from_inventory(inventory)[inventory.host("ap2")].client.container.kill(old_task.container_id)
    task, env = wait_until(
        "a new task on ap2",
        lambda: found if (found := recorded(inventory, BROKER, "ap2")) and found[0].id != old_task.id else None,
        timeout=45,
    )
    assert env["KAFKA_NODE_ID"] == old_env["KAFKA_NODE_ID"]
    assert env["KAFKA_ADVERTISED_LISTENERS"] == f"INTERNAL://{task.name}:9092,EXTERNAL://ap2:9094"
    after = all_recorded(inventory)
    assert after["ap1"][0].id == before["ap1"][0].id and after["ap3"][0].id == before["ap3"][0].id


def test_an_added_node_gets_a_new_id_and_the_other_brokers_keep_running(
    ap: Sandbox, recorder: str, first_deploy: DeployResult
) -> None:
    inventory = load_inventory(ap.inventory_path)
    before = {name: (task.id, env["KAFKA_NODE_ID"]) for name, (task, env) in all_recorded(inventory).items()}
    started = time.monotonic()
    sandbox.add_node("ap")
    grown = load_inventory(ap.inventory_path)
    assert [h.name for h in grown.hosts] == ["ap1", "ap2", "ap3", "ap4"]
    added = time.monotonic()
    docker = DockerHosts.from_inventory(grown)
    swarm.swarm_up(grown, docker=docker)
    joined = time.monotonic()
    result = deploy(plan(grown, options(recorder)), Session.of(grown, docker=docker))
    new = next(n for n in result.nodes if n.host == "ap4")
    assert (new.broker_id, new.new_id, new.identity) == (4, True, "written")
    _, env = wait_until("the recorder on ap4", lambda: recorded(grown, BROKER, "ap4"), timeout=45)
    print(
        f"\nadd-node: sandbox {added - started:.1f}s, swarm_up {joined - added:.1f}s, deploy {result.deploy_s:.1f}s"
        f" + converge {result.converge_s:.1f}s, recorder on ap4 after {time.monotonic() - joined:.1f}s"
    )
    assert env["KAFKA_NODE_ID"] == "4"
    assert env["KAFKA_ADVERTISED_LISTENERS"].endswith(",EXTERNAL://ap4:9094")
    after = {name: (task.id, env["KAFKA_NODE_ID"]) for name, (task, env) in all_recorded(inventory).items()}
    assert after == before
