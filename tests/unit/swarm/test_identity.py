"""Broker id allocation (pure) and the label writes around it (against a fake manager)."""

from __future__ import annotations

import subprocess

import pytest

from swarmkit.assets import STACKS_DIR
from swarmkit.errors import DeployError
from swarmkit.hosts.dockerapi import Engine, SwarmNode
from swarmkit.swarm import identity
from swarmkit.swarm.identity import CLUSTER_ID_LABEL, ID_LABEL, NEXT_LABEL, allocate_broker_ids, ids_from_labels


def node(node_id: str, role: str = "worker", **labels: str) -> SwarmNode:
    return SwarmNode(node_id, f"host-{node_id}", role, "ready", "active", "10.0.0.1", dict(labels))


def test_new_nodes_get_ids_in_the_given_order() -> None:
    allocation = allocate_broker_ids({}, ["c", "a", "b"])
    assert allocation.ids == {"c": 1, "a": 2, "b": 3}
    assert allocation.new == ("c", "a", "b")
    assert allocation.next_id == 4


def test_existing_ids_are_kept_and_new_ones_come_after_every_known_id() -> None:
    allocation = allocate_broker_ids({"a": 7, "gone-but-listed": 9}, ["a", "b"], marks=[3])
    assert allocation.ids == {"a": 7, "b": 10}
    assert allocation.new == ("b",)
    assert allocation.next_id == 11


def test_a_departed_nodes_id_is_never_reused() -> None:
    # Node 3 left the swarm: its label went with it, the high-water mark on the managers stayed.
    first = allocate_broker_ids({}, ["n1", "n2", "n3"])
    remaining = {k: v for k, v in first.ids.items() if k != "n3"}
    later = allocate_broker_ids(remaining, ["n1", "n2", "n4"], marks=[first.next_id])
    assert later.ids == {"n1": 1, "n2": 2, "n4": 4}


def test_the_highest_mark_of_all_managers_wins() -> None:
    assert allocate_broker_ids({}, ["x"], marks=[5, 12, 2]).ids == {"x": 12}


def test_allocation_is_stable_when_nothing_changes() -> None:
    first = allocate_broker_ids({}, ["a", "b"])
    again = allocate_broker_ids(first.ids, ["a", "b"], marks=[first.next_id])
    assert again.ids == first.ids and again.new == () and again.next_id == first.next_id


def test_ids_stop_at_the_controller_range() -> None:
    assert allocate_broker_ids({}, ["last"], marks=[9000]).ids == {"last": 9000}
    with pytest.raises(DeployError, match="ids 1..9000 have all been handed out"):
        allocate_broker_ids({}, ["one-too-many"], marks=[9001])


def test_labels_are_read_from_nodes_and_marks_from_managers_only() -> None:
    nodes = [
        node("m1", "manager", **{ID_LABEL: "1", NEXT_LABEL: "4"}),
        node("w1", **{ID_LABEL: "3", NEXT_LABEL: "99"}),  # a mark on a worker is not a mark
        node("w2"),
    ]
    assert ids_from_labels(nodes) == ({"m1": 1, "w1": 3}, [4])


@pytest.mark.parametrize("value", ["abc", "0", "-1", "9001", ""])
def test_a_malformed_id_label_is_an_error_naming_the_node(value: str) -> None:
    with pytest.raises(DeployError, match=f"node host-w1 .*{ID_LABEL}"):
        ids_from_labels([node("w1", **{ID_LABEL: value})])


def test_two_nodes_with_one_id_are_an_error() -> None:
    with pytest.raises(DeployError, match="host-a and host-b both have swarmkit.broker-id=2"):
        ids_from_labels([node("a", **{ID_LABEL: "2"}), node("b", **{ID_LABEL: "2"})])


def test_node_env_is_what_the_entrypoint_reads() -> None:
    assert identity.node_env(3, "10.0.0.13") == "BROKER_ID=3\nNODE_ADDRESS=10.0.0.13\n"


def test_kept_cluster_id_reads_managers_and_refuses_disagreement() -> None:
    label = f"{CLUSTER_ID_LABEL}.kafka"
    assert identity.kept_cluster_id([node("m", "manager")], "kafka") is None
    assert identity.kept_cluster_id([node("m", "manager", **{label: "X"}), node("w", **{label: "Y"})], "kafka") == "X"
    with pytest.raises(DeployError, match="different cluster ids"):
        identity.kept_cluster_id([node("m1", "manager", **{label: "X"}), node("m2", "manager", **{label: "Y"})], "kafka")


class FakeManager:
    """Records label writes in the order they happen."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, dict[str, str]]] = []

    def update_node_labels(self, engine: Engine, node_id: str, labels: dict[str, str]) -> None:
        self.writes.append((node_id, labels))


FAKE = Engine.connect("unix:///fake")
ENGINE = Engine.connect("unix:///e")


@pytest.fixture
def manager(monkeypatch: pytest.MonkeyPatch) -> FakeManager:
    fake = FakeManager()
    monkeypatch.setattr(identity.dockerapi, "update_node_labels", fake.update_node_labels)
    return fake


def test_the_mark_is_written_on_every_manager_before_any_new_id(manager: FakeManager) -> None:
    nodes = [node("m1", "manager", **{ID_LABEL: "1", NEXT_LABEL: "2"}), node("m2", "manager"), node("w1")]
    allocation = identity.assign_broker_ids(FAKE, nodes, ["m1", "m2", "w1"])
    assert allocation.ids == {"m1": 1, "m2": 2, "w1": 3}
    marks, ids = manager.writes[:2], manager.writes[2:]  # each group is written at once, in any order
    assert sorted(marks) == [("m1", {NEXT_LABEL: "4"}), ("m2", {NEXT_LABEL: "4"})]
    assert sorted(ids) == [("m2", {ID_LABEL: "2"}), ("w1", {ID_LABEL: "3"})]


def test_nothing_is_written_when_every_label_is_right(manager: FakeManager) -> None:
    nodes = [node("m1", "manager", **{ID_LABEL: "1", NEXT_LABEL: "3"}), node("w1", **{ID_LABEL: "2"})]
    identity.assign_broker_ids(FAKE, nodes, ["m1", "w1"])
    identity.keep_cluster_id(FAKE, [node("m1", "manager", **{f"{CLUSTER_ID_LABEL}.kafka": "C"})], "kafka", "C")
    assert manager.writes == []


def test_write_identity_reports_what_the_helper_container_did(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(identity.dockerapi, "ensure_volume", lambda *args: calls.append(("volume", args)))
    monkeypatch.setattr(identity.dockerapi, "run_with_volume", lambda *args: "written\n")
    assert identity.write_identity(ENGINE, "img", "kafka_identity", "kafka", "BROKER_ID=1\n") == "written"
    assert calls == [("volume", (ENGINE, "kafka_identity", {"com.docker.stack.namespace": "kafka"}))]
    monkeypatch.setattr(identity.dockerapi, "run_with_volume", lambda *args: "sh: cannot create: Read-only file system")
    with pytest.raises(DeployError, match="Read-only file system"):
        identity.write_identity(ENGINE, "img", "kafka_identity", "kafka", "BROKER_ID=1\n")


def test_the_identity_writer_says_written_then_unchanged_then_replaced(tmp_path) -> None:
    script = (STACKS_DIR / "write-identity.sh").read_text(encoding="utf-8")

    def write(content: str) -> str:
        env = {"PATH": "/usr/bin:/bin", "SWARMKIT_IDENTITY_FILE": str(tmp_path / "node.env"), "SWARMKIT_NODE_ENV": content}
        return subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, check=True).stdout.strip()

    first = "BROKER_ID=2\nNODE_ADDRESS=10.0.0.2\n"
    assert write(first) == identity.Outcome.WRITTEN
    assert write(first) == identity.Outcome.UNCHANGED
    assert write("BROKER_ID=2\nNODE_ADDRESS=10.0.0.22\n") == identity.Outcome.REPLACED
    assert (tmp_path / "node.env").read_text() == "BROKER_ID=2\nNODE_ADDRESS=10.0.0.22\n"


@pytest.mark.parametrize("printed", ["written", "unchanged", "absent"])
def test_the_agent_copy_outcome_is_parsed_into_a_member(monkeypatch: pytest.MonkeyPatch, printed: str) -> None:
    monkeypatch.setattr(identity.dockerapi, "ensure_volume", lambda *args: None)
    monkeypatch.setattr(identity.dockerapi, "run_with_volume", lambda *args: f"copying\n{printed}\n")
    copy = identity.AgentCopy("probe", "/agent.jar", "kafka_agent", "agent.jar", "kafka")
    outcome = identity.fill_agent(ENGINE, copy)
    assert outcome is identity.Outcome(printed) and outcome in identity.AGENT_OUTCOMES


def test_an_identity_writer_may_not_say_absent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(identity.dockerapi, "ensure_volume", lambda *args: None)
    monkeypatch.setattr(identity.dockerapi, "run_with_volume", lambda *args: "absent\n")
    with pytest.raises(DeployError, match="absent"):
        identity.write_identity(ENGINE, "img", "kafka_identity", "kafka", "BROKER_ID=1\n")
