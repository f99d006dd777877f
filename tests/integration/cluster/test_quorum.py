"""The controller lifecycle on a dynamic KRaft quorum (KIP-853): 3 managers and a worker, one deploy.

In order on one cluster: a new cluster's controllers are voters formatted with directory ids derived from its
cluster id, and the set is kept on the managers; an inventory that swaps a manager is refused by `up` before
anything changes, naming `replace-node`; a manager whose engine is gone for good is replaced by the worker
under an acks=all producer: the quorum ends with three voters (the new controller among them, the dead one
gone), `status` lists them, `up`'s guard accepts the new inventory, and no acknowledged record is lost or
duplicated.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from swarmkit.checks.status import status
from swarmkit.errors import SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.quorum import QuorumState, describe_quorum
from swarmkit.ops.deploy import guard_controllers, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.ops.replace import replace_node
from swarmkit.sandbox import hosts as sandbox
from swarmkit.stack.controllers import ControllerSet, directory_id
from swarmkit.swarm import identity
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, read_everything
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

NAME = "qm"
SMALL_HEAPS = (("KAFKA_HEAP_OPTS", "-Xmx384m -Xms384m"),)
qm = module_sandbox(NAME, 4, "10.234.0.0/24", engine="apache", managers=3)


@pytest.fixture(scope="module")
def cluster(qm: sandbox.Sandbox) -> Inventory:
    inventory = load_inventory(qm.inventory_path)
    started = time.monotonic()
    assert up(plan(inventory, DeployOptions(topics="quorum:3:3", extra_env=SMALL_HEAPS)), Session.of(inventory)).ok
    print(f"deployed in {time.monotonic() - started:.1f} s")
    return inventory


def swapped(inventory: Inventory, directory: Path, dead: str, new: str) -> Inventory:
    """The inventory without ``dead`` and with ``new`` a manager, written beside the original."""
    document = yaml.safe_load(Path(inventory.path or "").read_text())
    document["hosts"] = [host for host in document["hosts"] if host["name"] != dead]
    for host in document["hosts"]:
        if host["name"] == new:
            host["role"] = "manager"
    path = directory / "swapped.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return load_inventory(str(path))


def quorum(bootstrap: str) -> QuorumState:
    host, port = bootstrap.split(":")
    return describe_quorum(host, int(port), 10.0)


def kept(inventory: Inventory) -> ControllerSet | None:
    nodes = dockerapi.swarm_nodes(DockerHosts.from_inventory(inventory)[inventory.first_manager])
    return identity.kept_controllers(nodes, "kafka")


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(1)


def test_a_new_cluster_has_a_dynamic_quorum_kept_on_the_managers(cluster: Inventory) -> None:
    state = quorum("qm1:9094")
    nodes = dockerapi.swarm_nodes(DockerHosts.from_inventory(cluster)[cluster.first_manager])
    cluster_id = identity.kept_cluster_id(nodes, "kafka")
    assert cluster_id
    assert sorted((v.node_id, v.directory_id) for v in state.voters) == [
        (node_id, directory_id(cluster_id, node_id)) for node_id in (9001, 9002, 9003)
    ]
    assert sorted(o.node_id for o in state.observers) == [1, 2, 3, 4]  # the brokers
    assert kept(cluster) == ControllerSet.first(["qm1", "qm2", "qm3"])


def test_up_refuses_a_swapped_manager_before_changing_anything(cluster: Inventory, tmp_path: Path) -> None:
    changed = swapped(cluster, tmp_path, "qm2", "qm4")
    with pytest.raises(SpecError) as refused:
        up(plan(changed, DeployOptions()), Session.of(changed))
    assert refused.value.hint == f"a controller moves with: swarmkit replace-node qm2 qm4 -i {changed.path}"
    roles = {n.hostname: n.role for n in dockerapi.swarm_nodes(DockerHosts.from_inventory(cluster)[cluster.first_manager])}
    assert roles["qm4"] == "worker"


def test_replacing_a_dead_manager_under_traffic_loses_no_record(cluster: Inventory, tmp_path: Path) -> None:
    changed = swapped(cluster, tmp_path, "qm2", "qm4")
    producer = CountingProducer("qm1:9094,qm3:9094", "quorum").start()
    try:
        producer.acked_after(1000, timeout=120)
        sandbox.stop_engine(NAME, "qm2")
        manager = DockerHosts.from_inventory(changed)[changed.first_manager]
        wait_until(
            lambda: any(n.hostname == "qm2" and n.state == "down" for n in dockerapi.swarm_nodes(manager)), 120, "qm2 down"
        )
        started = time.monotonic()
        result = replace_node(Session.of(changed), "qm2", "qm4")
        print(f"replace-node took {time.monotonic() - started:.1f} s: {result.steps}")
        producer.acked_after(1000, timeout=120)
    finally:
        producer.stop()
    assert (result.removed_voter, result.added_voter) == (9002, 9004)
    state = quorum("qm1:9094")
    assert sorted(v.node_id for v in state.voters) == [9001, 9003, 9004]
    assert 9004 not in {o.node_id for o in state.observers}
    assert kept(changed) == ControllerSet.first(["qm1", "qm2", "qm3"]).replaced("qm2", "qm4")
    report = status(Session.of(changed))
    assert report.controllers == ((9001, "qm1"), (9003, "qm3"), (9004, "qm4"))
    assert report.quorum is not None and sorted(v.node_id for v in report.quorum.voters) == [9001, 9003, 9004]
    guard_controllers(plan(changed, DeployOptions()), Session.of(changed))  # `up` with the new inventory goes ahead
    found = read_everything("qm1:9094,qm3:9094", "quorum", 3)
    lost, duplicated = lost_and_duplicated(producer.acknowledged, found)
    print(f"{len(producer.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated")
    assert len(producer.acknowledged) >= 2000
    assert (lost, duplicated) == ([], []), f"{len(lost)} lost, {len(duplicated)} duplicated"
