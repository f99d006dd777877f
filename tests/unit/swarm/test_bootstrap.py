"""Joining the swarm on a slow manager: a join Docker continues in the background is followed, not failed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from swarmkit import waits
from swarmkit.errors import SpecError, SwarmError
from swarmkit.hosts.dockerapi import Availability, DockerHosts, NodeRole, NodeState, SwarmNode
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.swarm import bootstrap

FIRST = Host("m1", "unix:///run/m1.sock", "10.9.0.11", "manager")
LATE = Host("m2", "unix:///run/m2.sock", "10.9.0.12", "manager")
DOCKER = DockerHosts.from_inventory(Inventory(hosts=(FIRST, LATE)))


@dataclass
class Info:
    swarm_state: str


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits.fanout, "pause", lambda seconds: None)


def test_a_join_continuing_in_the_background_is_followed_until_the_node_is_active(monkeypatch: pytest.MonkeyPatch) -> None:
    states = iter(["pending", "pending", "active"])
    monkeypatch.setattr(bootstrap.dockerapi, "swarm_join", lambda *args: True)
    monkeypatch.setattr(bootstrap.dockerapi, "engine_info", lambda engine: Info(next(states)))
    bootstrap._join(DOCKER, LATE, FIRST, "token")
    assert next(states, "asked no more") == "asked no more"


def test_a_join_that_ends_in_error_names_the_host_and_the_port_to_open(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap.dockerapi, "swarm_join", lambda *args: True)
    monkeypatch.setattr(bootstrap.dockerapi, "engine_info", lambda engine: Info("error"))
    with pytest.raises(SwarmError, match="m2 did not finish joining the swarm") as raised:
        bootstrap._join(DOCKER, LATE, FIRST, "token")
    assert "10.9.0.11:2377" in raised.value.hint


def test_a_join_docker_finished_asks_nothing_more(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bootstrap.dockerapi, "swarm_join", lambda *args: False)
    monkeypatch.setattr(bootstrap.dockerapi, "engine_info", lambda engine: pytest.fail("asked again"))
    bootstrap._join(DOCKER, LATE, FIRST, "token")


def test_an_inventory_built_in_code_cannot_set_swarmkits_own_labels() -> None:
    """The file's checks are skipped by a library caller's Inventory: swarm_up refuses it before asking any engine."""
    hostile = Host("m1", "unix:///nonexistent/m1.sock", "10.9.0.11", "manager", labels={"swarmkit.broker-id": "99"})
    inventory = Inventory(hosts=(hostile,))
    with pytest.raises(SpecError, match="swarmkit's own namespace"):
        bootstrap.swarm_up(inventory, docker=DockerHosts.from_inventory(inventory))


def node(node_id: str, hostname: str, state: NodeState) -> SwarmNode:
    return SwarmNode(node_id, hostname, NodeRole.WORKER, state, Availability.ACTIVE, "10.9.0.12", {})


def test_new_nodes_are_listed_once_their_first_heartbeat_made_them_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """Right after a join the manager lists the node with no hostname and state unknown; swarm_up's answer waits
    for it (a node that was already a member is not waited for)."""
    listed = iter([[node("n1", "m1", NodeState.READY), node("n2", "", NodeState.UNKNOWN)]])
    ready = [node("n1", "m1", NodeState.READY), node("n2", "m2", NodeState.READY)]
    monkeypatch.setattr(bootstrap.dockerapi, "swarm_nodes", lambda manager: next(listed, ready))
    assert bootstrap._nodes_once_ready(DOCKER[FIRST], {"n2"}) == ready
    listed = iter([[node("n1", "m1", NodeState.READY), node("n2", "", NodeState.UNKNOWN)]])
    assert bootstrap._nodes_once_ready(DOCKER[FIRST], set())[1].state == NodeState.UNKNOWN
