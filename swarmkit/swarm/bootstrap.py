"""Swarm bootstrap: init on the first manager, join the others, label nodes; idempotent.

A host already in this swarm is left alone; a host in another swarm is an error naming it,
never forced out. The plan is computed (and checked) for every host before any host changes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace

from swarmkit import names, waits
from swarmkit.errors import SwarmError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, EngineInfo, NodeRole, NodeState, SwarmNode, SwarmState
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.stack.deployed import HOST_LABEL

INIT = "init"
JOIN = "join"
MEMBER = "member"
JOIN_FOLLOW_S = 120.0  # how long a join Docker continues in the background is followed
NODE_READY_S = 30.0  # how long swarm_up waits for new nodes' first heartbeat (well under a second when quiet)


@dataclass(frozen=True)
class HostAction:
    host: str
    action: str
    role: str
    detail: str = ""


@dataclass(frozen=True)
class SwarmResult:
    actions: tuple[HostAction, ...]
    nodes: tuple[SwarmNode, ...]  # every node of the swarm, labels included
    node_ids: dict[str, str] = field(default_factory=dict)  # inventory host name -> swarm node id

    @property
    def changed(self) -> bool:
        return any(a.action != MEMBER for a in self.actions)

    def to_dict(self) -> dict:
        return {
            "changed": self.changed,
            "actions": [asdict(a) for a in self.actions],
            "nodes": [asdict(n) for n in self.nodes],
        }


def engine_infos(inventory: Inventory, docker: DockerHosts) -> dict[str, EngineInfo]:
    """Ask every engine in parallel; the first that does not answer is an error."""
    infos = fan_out(lambda h: dockerapi.engine_info(docker[h]), inventory.hosts)
    return {host.name: info for host, info in zip(inventory.hosts, infos)}


def plan(inventory: Inventory, infos: dict[str, EngineInfo], members: set[str]) -> list[HostAction]:
    """Pure: what to do on each host, given each engine's swarm state and this swarm's node ids."""
    first = inventory.first_manager
    first_info = infos[first.name]
    actions = []
    for host in inventory.hosts:
        info = infos[host.name]
        if host == first:
            action = MEMBER if first_info.swarm_state == SwarmState.ACTIVE else INIT
        elif info.swarm_state == SwarmState.INACTIVE:
            action = JOIN
        elif info.swarm_state == SwarmState.ACTIVE and info.swarm_node_id in members:
            action = MEMBER
        else:
            raise _foreign(host, info)
        if action == INIT and first_info.swarm_state != SwarmState.INACTIVE:
            raise _foreign(host, info)
        actions.append(HostAction(host.name, action, host.role))
    return actions


def _foreign(host: Host, info: EngineInfo) -> SwarmError:
    if info.swarm_state == SwarmState.ACTIVE:
        return SwarmError(
            f"{host.name} is already in another swarm (node {info.swarm_node_id}); swarmkit leaves it untouched",
            hint=f"if it should join this group, run 'docker swarm leave' on {host.name} yourself, then retry",
        )
    return SwarmError(
        f"{host.name}'s swarm state is '{info.swarm_state}'; swarmkit will not change it",
        hint=f"inspect it with 'docker info' on {host.name} (a locked or pending swarm needs a person)",
    )


def current_members(inventory: Inventory, docker: DockerHosts, infos: dict[str, EngineInfo]) -> list[SwarmNode]:
    first = inventory.first_manager
    if infos[first.name].swarm_state != SwarmState.ACTIVE:
        return []
    return dockerapi.swarm_nodes(docker[first])


def swarm_up(inventory: Inventory, *, docker: DockerHosts, infos: Mapping[str, EngineInfo] | None = None) -> SwarmResult:
    """``infos``: every engine's answer when just read (by preflight), else each engine is asked."""
    for host in inventory.hosts:  # an Inventory built in code skips the file's checks: swarmkit's labels stay its own
        for key, value in host.labels.items():
            names.label(key, value)
    infos = dict(infos) if infos is not None else engine_infos(inventory, docker)
    members = current_members(inventory, docker, infos)
    actions = plan(inventory, infos, {node.id for node in members})
    first = inventory.first_manager
    if actions[0].action == INIT:
        dockerapi.swarm_init(docker[first], first.address)
    joining = [inventory.host(a.host) for a in actions if a.action == JOIN]
    if joining:
        tokens = {role: dockerapi.join_token(docker[first], role) for role in {h.role for h in joining}}
        # Managers one at a time (each changes the raft membership), then workers together.
        for host in (h for h in joining if h.is_manager):
            _join(docker, host, first, tokens[NodeRole.MANAGER])
        workers = [h for h in joining if not h.is_manager]
        fan_out(lambda h: _join(docker, h, first, tokens[NodeRole.WORKER]), workers)
    changed = [inventory.host(a.host) for a in actions if a.action != MEMBER]
    ids = {name: info.swarm_node_id for name, info in infos.items()}
    ids.update(
        zip((h.name for h in changed), (i.swarm_node_id for i in fan_out(lambda h: dockerapi.engine_info(docker[h]), changed)))
    )
    joined = {ids[h.name] for h in changed}
    nodes = _apply_labels(inventory, docker, ids, _nodes_once_ready(docker[first], joined))
    return SwarmResult(actions=tuple(actions), nodes=tuple(nodes), node_ids=ids)


def _nodes_once_ready(manager: Engine, joined: set[str]) -> list[SwarmNode]:
    """The swarm's nodes once each one just made or joined is ready: until its first heartbeat reaches the manager,
    a new node is listed with no hostname and state unknown.  After NODE_READY_S, as last listed (the deploy's wait
    names a node that never gets there)."""
    listed: list[SwarmNode] = []

    def look() -> list[SwarmNode] | waits.NotYet:
        listed[:] = dockerapi.swarm_nodes(manager)
        waiting = sorted(n.id[:12] for n in listed if n.id in joined and n.state != NodeState.READY)
        return waits.NotYet(f"nodes not ready yet: {', '.join(waiting)}") if waiting else listed

    waits.until(look, NODE_READY_S, first=0.1, longest=1.0)
    return listed


def _join(docker: DockerHosts, host: Host, first: Host, token: str) -> None:
    """Join, and follow a join Docker continues in the background (a busy manager) until the node is active."""
    if not dockerapi.swarm_join(docker[host], first.address, token, host.address):
        return

    def stuck(state: str) -> SwarmError:
        return SwarmError(
            f"{host.name} did not finish joining the swarm (state {state} after {JOIN_FOLLOW_S:g}s in the background)",
            hint=f"see `docker info` on {host.name}: it must reach {first.address}:2377/tcp; then rerun `swarmkit up`",
        )

    def active() -> bool | waits.NotYet:
        if (state := dockerapi.engine_info(docker[host]).swarm_state) in (SwarmState.PENDING, SwarmState.INACTIVE):
            return waits.NotYet(state)
        if state != SwarmState.ACTIVE:
            raise stuck(state)
        return True

    waits.until(active, JOIN_FOLLOW_S, fail=stuck)


def node_ids(inventory: Inventory, *, docker: DockerHosts) -> dict[str, str]:
    """Inventory host name -> swarm node id, from each engine's own view (names may differ from hostnames)."""
    return {
        name: info.swarm_node_id
        for name, info in engine_infos(inventory, docker).items()
        if info.swarm_state == SwarmState.ACTIVE
    }


def _apply_labels(inventory: Inventory, docker: DockerHosts, ids: dict[str, str], nodes: list[SwarmNode]) -> list[SwarmNode]:
    """Inventory labels plus swarmkit.host=<inventory name>, added only where missing."""
    manager = docker[inventory.first_manager]
    by_id = {node.id: node for node in nodes}
    updates = []
    for host in inventory.hosts:
        wanted = {**host.labels, HOST_LABEL: host.name}
        node = by_id[ids[host.name]]
        missing = {k: v for k, v in wanted.items() if node.labels.get(k) != v}
        if missing:
            updates.append((node.id, missing))
    fan_out(lambda update: dockerapi.update_node_labels(manager, *update), updates)
    for node_id, added in updates:  # what the swarm now holds, without reading it again
        by_id[node_id] = replace(by_id[node_id], labels={**by_id[node_id].labels, **added})
    return list(by_id.values())


def swarm_down(inventory: Inventory, *, docker: DockerHosts) -> list[HostAction]:
    """Leave the swarm on every host: workers first, the first manager last."""
    infos = engine_infos(inventory, docker)
    ordered = sorted(inventory.hosts, key=lambda h: (h.is_manager, h == inventory.first_manager))
    actions = []
    for host in ordered:
        if infos[host.name].swarm_state == SwarmState.INACTIVE:
            actions.append(HostAction(host.name, "not in a swarm", host.role))
            continue
        dockerapi.swarm_leave(docker[host], force=host.is_manager)
        actions.append(HostAction(host.name, "left", host.role))
    return actions


def join_command(inventory: Inventory, role: NodeRole, show_token: bool, *, docker: DockerHosts) -> str:
    """The exact command for a server swarmkit cannot reach; the token stays hidden unless asked.  The first
    manager must answer and be in a swarm (its token is read either way): else there is nothing to join."""
    first = inventory.first_manager
    if dockerapi.engine_info(docker[first]).swarm_state != SwarmState.ACTIVE:
        raise SwarmError(
            f"{first.name}, the first manager, is in no swarm: there is nothing to join yet",
            hint="form the swarm first: swarmkit swarm up -i INV (or swarmkit up)",
        )
    token = dockerapi.join_token(docker[first], role)
    return f"docker swarm join --token {token if show_token else '<token: swarmkit join --show-token>'} {first.address}:2377"
