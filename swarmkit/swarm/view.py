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
    """The first manager in an active swarm; else an error saying why the first is not (its engine's own failure:
    a name that does not resolve, a refused connection, a timeout, a permission), with its fix."""
    why = []
    for host in inventory.managers:
        info = engines[host.name]
        if isinstance(info, EngineInfo) and info.swarm_state == SwarmState.ACTIVE:
            return host
        why.append(info.message if isinstance(info, SwarmkitError) else f"{host.name} is {info.swarm_state or 'in no'} swarm")
    failures = [info for host in inventory.managers if isinstance(info := engines[host.name], SwarmkitError)]
    hint = "build the swarm with: swarmkit up -i INVENTORY, or start dockerd on a manager"
    others = f" (nor {', '.join(h.name for h in inventory.managers[1:])})" if len(why) > 1 else ""
    raise VerifyError(
        f"no manager of the inventory answers as an active swarm manager: {why[0]}{others}",
        hint=failures[0].hint if len(failures) == len(why) and failures[0].hint else hint,
    )


def node_for(host: Host, nodes: list[SwarmNode], engine: EngineInfo | SwarmkitError) -> SwarmNode | None:
    for node in nodes:
        if host_of(node) == host.name:
            return node
    node_id = engine.swarm_node_id if isinstance(engine, EngineInfo) else ""
    return next((n for n in nodes if n.id == node_id), None)
