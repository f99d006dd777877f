"""Down: purging needs a yes, removes exactly the labels swarmkit keeps for a stack, and never another stack's."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmkit.errors import OperationError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, SwarmNode
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.ops import teardown
from swarmkit.ops.teardown import check_purge, labels_to_purge


def node(role: str, labels: dict[str, str]) -> SwarmNode:
    return SwarmNode("n", "k1", role, "ready", "active", "10.0.0.1", labels)


def test_purging_without_yes_is_refused_and_a_plain_down_needs_none() -> None:
    check_purge(False, False)
    check_purge(True, True)
    with pytest.raises(SpecError, match="deletes every broker's") as refused:
        check_purge(True, False)
    assert "--yes" in refused.value.hint


def test_purge_removes_the_broker_id_and_on_managers_the_mark_and_this_stacks_cluster_id_and_controllers() -> None:
    kept = {
        "swarmkit.broker-id": "1",
        "swarmkit.broker-id.next": "4",
        "swarmkit.cluster-id.kafka": "AAAAAAAAAAAAAAAAAAAAAA",
        "swarmkit.quorum.kafka": "initial=9001 next=9002 9001@k1",
        "swarmkit.cluster-id.other": "BBBBBBBBBBBBBBBBBBBBBB",
        "swarmkit.host": "k1",
        "zone": "a",
    }
    assert labels_to_purge(node("manager", kept), "kafka") == [
        "swarmkit.broker-id",
        "swarmkit.broker-id.next",
        "swarmkit.cluster-id.kafka",
        "swarmkit.quorum.kafka",
    ]
    assert labels_to_purge(node("worker", kept), "kafka") == ["swarmkit.broker-id"]
    assert labels_to_purge(node("manager", {"zone": "a"}), "kafka") == []
    assert labels_to_purge(node("manager", kept), "kafka", shared=False) == ["swarmkit.cluster-id.kafka", "swarmkit.quorum.kafka"]
    assert labels_to_purge(node("worker", kept), "kafka", shared=False) == []


class FakeSwarm:
    """One manager host whose swarm runs stack ``kafka`` (labels on both nodes) and keeps volumes of ``old``."""

    def __init__(self) -> None:
        ids = {"swarmkit.broker-id.next": "3", "swarmkit.cluster-id.kafka": "A" * 22, "swarmkit.cluster-id.old": "B" * 22}
        self.nodes = [
            SwarmNode("m", "k1", "manager", "ready", "active", "10.0.0.1", {"swarmkit.broker-id": "1", **ids}),
            SwarmNode("w", "k2", "worker", "ready", "active", "10.0.0.2", {"swarmkit.broker-id": "2"}),
        ]
        self.volumes = {"kafka": ["kafka_data", "kafka_identity"], "old": ["old_data", "old_identity"], "web": ["web_db"]}
        self.services = {"kafka": ["kafka_broker", "kafka_controller"], "kafka-spark": ["kafka-spark_master"]}
        self.leftovers = {"half": ["config half_broker-conf", "network half_internal"]}  # an interrupted down's
        self.removed_labels: dict[str, list[str]] = {}
        self.removed_volumes: list[str] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(teardown, "engine_states", lambda inventory, docker: {"k1": None})
        monkeypatch.setattr(dockerapi, "swarm_nodes", lambda engine: self.nodes)
        monkeypatch.setattr(dockerapi, "stack_services", lambda engine, stack: self.services.get(stack, []))
        monkeypatch.setattr(dockerapi, "stack_leftovers", lambda engine, stack: self.leftovers.get(stack, []))
        by_kind = {"volume": self.volumes, "service": self.services}
        monkeypatch.setattr(dockerapi, "names_by_label", lambda engine, kind, label: by_kind[kind])
        monkeypatch.setattr(dockerapi, "remove_labelled_volumes", self.remove_volumes)
        monkeypatch.setattr(
            dockerapi, "remove_node_labels", lambda e, node_id, names: self.removed_labels.update({node_id: names})
        )
        for refused in ("remove_service", "remove_stack"):
            monkeypatch.setattr(dockerapi, refused, lambda *args, what=refused: pytest.fail(f"{what} called"))

    def remove_volumes(self, engine: Engine, label: str) -> list[str]:
        stack = label.split("=", 1)[1]
        self.removed_volumes += self.volumes.pop(stack, [])
        return sorted(self.removed_volumes)


@pytest.fixture
def swarm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[FakeSwarm, Inventory, DockerHosts]:
    fake = FakeSwarm()
    fake.install(monkeypatch)
    inventory = Inventory((Host("k1", "unix:///nonexistent.sock", "10.0.0.1", "manager"),), str(tmp_path / "inv.yaml"))
    docker = DockerHosts({"k1": Engine("unix:///nonexistent.sock", None)})  # type: ignore[arg-type]
    return fake, inventory, docker


def test_a_purge_of_a_stack_that_has_nothing_here_is_refused_and_touches_no_other_stack(swarm) -> None:
    fake, inventory, docker = swarm
    with pytest.raises(SpecError, match="stack 'nope' is not deployed") as refused:
        teardown.down(Session(inventory, docker), "nope", purge=True, yes=True)
    assert refused.value.exit_code == 2 and "kafka, old" in refused.value.hint
    assert fake.removed_labels == {} and fake.removed_volumes == []


def test_a_purge_of_a_kept_stack_keeps_the_broker_ids_another_stack_still_uses(swarm) -> None:
    fake, inventory, docker = swarm
    report = teardown.down(Session(inventory, docker), "old", purge=True, yes=True)
    assert fake.removed_volumes == ["old_data", "old_identity"]
    assert fake.removed_labels == {"m": ["swarmkit.cluster-id.old"]}
    assert report.shared_with == ("kafka",) and report.labels == {"k1": ["swarmkit.cluster-id.old"]}


@pytest.mark.parametrize("stack", ["", "x/../../tmp/escape", "Kafka", "kafka\n", "k" * 41])
def test_down_refuses_a_stack_name_that_is_no_name_before_contacting_anything(swarm, stack: str) -> None:
    fake, inventory, docker = swarm
    with pytest.raises(SpecError, match="stack name"):
        teardown.down(Session(inventory, docker), stack, purge=True, yes=True)
    assert fake.removed_labels == {} and fake.removed_volumes == []


def test_down_removes_what_an_interrupted_down_left_and_then_has_nothing_to_remove(swarm, monkeypatch) -> None:
    """Interrupted after its services went, `down` left the stack's network and configs: the next one removes
    them (and waits for the stack's containers), the one after says there is nothing to remove."""
    fake, inventory, docker = swarm
    removed: list[str] = []

    def remove_stack(engine: Engine, name: str) -> None:
        removed.append(name)
        fake.leftovers.pop(name)

    monkeypatch.setattr(dockerapi, "remove_stack", remove_stack)
    monkeypatch.setattr(dockerapi, "labelled_containers", lambda engine, label: 0)
    report = teardown.down(Session(inventory, docker), "half")
    assert removed == ["half"]
    assert report.removed_services == () and report.leftovers == ("config half_broker-conf", "network half_internal")
    with pytest.raises(OperationError, match="stack 'half' is not deployed: nothing to remove"):
        teardown.down(Session(inventory, docker), "half")
