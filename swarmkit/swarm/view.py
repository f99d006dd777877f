"""The swarm as one command finds it: which engines answer, which manager leads the way, which node is which host."""

from __future__ import annotations

import functools
import time

from swarmkit.errors import EngineError, SwarmkitError, VerifyError
from swarmkit.fanout import settle_by
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, EngineInfo, SwarmNode, SwarmState
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.stack.deployed import host_of

ENGINE_BOUND = 10.0  # one Docker engine's answer


def engine_states(
    inventory: Inventory, docker: DockerHosts, deadline: float | None = None
) -> dict[str, EngineInfo | SwarmkitError]:
    """Every engine's answer, or why there is none (an engine silent past ``deadline`` too)."""
    deadline = deadline or time.monotonic() + ENGINE_BOUND
    calls = [functools.partial(dockerapi.engine_info, docker[host]) for host in inventory.hosts]
    states: dict[str, EngineInfo | SwarmkitError] = {}
    for host, answer in zip(inventory.hosts, settle_by(calls, deadline)):
        if isinstance(answer, TimeoutError):
            answer = EngineError(f"the Docker engine of {host.name} did not answer in time ({host.endpoint})")
        if isinstance(answer, Exception) and not isinstance(answer, SwarmkitError):
            raise answer
        states[host.name] = answer
    return states


def active_manager(inventory: Inventory, engines: dict[str, EngineInfo | SwarmkitError]) -> Host:
    for host in inventory.managers:
        info = engines[host.name]
        if isinstance(info, EngineInfo) and info.swarm_state == SwarmState.ACTIVE:
            return host
    raise VerifyError(
        "no manager of the inventory answers as an active swarm manager",
        hint="start dockerd on a manager, or build the swarm with: swarmkit up -i INVENTORY",
    )


def node_for(host: Host, nodes: list[SwarmNode], engine: EngineInfo | SwarmkitError) -> SwarmNode | None:
    for node in nodes:
        if host_of(node) == host.name:
            return node
    node_id = engine.swarm_node_id if isinstance(engine, EngineInfo) else ""
    return next((n for n in nodes if n.id == node_id), None)
