"""Swarm bootstrap on real engines: init, join, idempotence, foreign swarms, leave."""

from __future__ import annotations

import pytest

from swarmkit import dockerapi, sandbox, swarm
from swarmkit.errors import SwarmError
from swarmkit.inventory import load_inventory
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration


sw = module_sandbox("sw", 3, "10.245.0.0/24")


def test_swarm_up_makes_a_three_node_swarm_and_is_idempotent(sw: sandbox.Sandbox) -> None:
    inventory = load_inventory(sw.inventory_path)
    first = swarm.swarm_up(inventory)
    assert [(a.host, a.action) for a in first.actions] == [("sw1", "init"), ("sw2", "join"), ("sw3", "join")]
    nodes = sorted((n.hostname, n.role, n.state, n.labels["swarmkit.host"]) for n in first.nodes)
    assert nodes == [
        ("sw1", "manager", "ready", "sw1"),
        ("sw2", "worker", "ready", "sw2"),
        ("sw3", "worker", "ready", "sw3"),
    ]
    again = swarm.swarm_up(inventory)
    assert not again.changed
    assert {n.id for n in again.nodes} == {n.id for n in first.nodes}


def test_a_host_in_another_swarm_is_reported_and_left_alone(sw: sandbox.Sandbox) -> None:
    stranger = sandbox.add_node("sw")
    dockerapi.swarm_init(stranger.endpoint, stranger.address)
    foreign_id = dockerapi.engine_info(stranger.endpoint).swarm_node_id
    inventory = load_inventory(sw.inventory_path)
    with pytest.raises(SwarmError, match="sw4 is already in another swarm"):
        swarm.swarm_up(inventory)
    assert dockerapi.engine_info(stranger.endpoint).swarm_node_id == foreign_id
    assert len(dockerapi.swarm_nodes(sw.hosts[0].endpoint)) == 3
    dockerapi.swarm_leave(stranger.endpoint, force=True)
    joined = swarm.swarm_up(inventory)
    assert [(a.host, a.action) for a in joined.actions if a.action != "member"] == [("sw4", "join")]


def test_join_command_hides_the_token_unless_asked(sw: sandbox.Sandbox) -> None:
    inventory = load_inventory(sw.inventory_path)
    hidden = swarm.join_command(inventory, "worker", show_token=False)
    assert "SWMTKN" not in hidden and hidden.endswith("10.245.0.11:2377")
    assert "SWMTKN-" in swarm.join_command(inventory, "worker", show_token=True)


def test_swarm_down_leaves_on_every_host(sw: sandbox.Sandbox) -> None:
    inventory = load_inventory(sw.inventory_path)
    swarm.swarm_down(inventory)
    assert {dockerapi.engine_info(h.endpoint).swarm_state for h in inventory.hosts} == {"inactive"}
