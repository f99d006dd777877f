"""The swarm itself: init, join, leave, and its nodes (read, labelled, drained, removed)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from swarmkit import waits
from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import parse
from swarmkit.hosts.dockerapi.calls import call, cli_failures, failure, request, said, short
from swarmkit.hosts.dockerapi.engine import Engine
from swarmkit.hosts.dockerapi.models import NodeRole, SwarmNode

if TYPE_CHECKING:
    import python_on_whales as whales

JOIN_IN_BACKGROUND = "will continue in the background"  # Docker's answer when a join outlasts its own timeout
OUT_OF_SEQUENCE = "update out of sequence"  # Docker's refusal of a node update based on an older version
NODE_UPDATE_S = 30.0
RETRY_HINT = "the swarm kept changing the node meanwhile; run the command again once `docker node ls` shows it ready"


def swarm_init(engine: Engine, advertise_address: str) -> None:
    """Make this engine the swarm's first manager, reached by the others at ``advertise_address``."""
    call(engine, "docker swarm init", lambda c: c.swarm.init(advertise_address=advertise_address))


def swarm_heartbeat(engine: Engine, seconds: int) -> None:
    """How often every node's agent heartbeats the swarm's leader: a node silent for two to three periods is marked
    down, and a down node's tasks are replaced when it returns (Docker's default period: 5 s)."""
    call(engine, "docker swarm update", lambda c: c.swarm.update(dispatcher_heartbeat=timedelta(seconds=seconds)))


def join_token(engine: Engine, role: NodeRole) -> str:
    """Read from the manager's API into memory only: never printed, logged or stored."""
    return call(engine, f"reading the {role} join token", lambda c: c.swarm.join_token(role))


def swarm_join(engine: Engine, manager_address: str, token: str, advertise_address: str) -> bool:
    """Join a swarm; True when Docker is still joining in the background (a slow manager), False once joined."""
    try:
        engine.client.swarm.join(f"{manager_address}:2377", advertise_address=advertise_address, token=token)
    except cli_failures() as error:
        detail = short(engine, error).replace(token, "<token>")
        if JOIN_IN_BACKGROUND in said(engine, error):
            return True
        raise failure(engine, f"joining the swarm from {engine.endpoint} failed: {detail}", error) from None
    return False


def swarm_leave(engine: Engine, force: bool) -> None:
    """Leave the swarm; ``force`` lets a manager leave too (Docker refuses that without it, to guard the quorum)."""
    call(engine, "docker swarm leave", lambda c: c.swarm.leave(force=force))


def swarm_nodes(engine: Engine) -> list[SwarmNode]:
    """Every node of the swarm, in one Engine API request (whole node documents, as ``docker node inspect``)."""
    return [parse.swarm_node(node) for node in request(engine, "listing the swarm's nodes", lambda api: api.nodes())]


def _update_node(engine: Engine, what: str, action: Callable[[whales.DockerClient], Any]) -> None:
    """A node update is a read-modify-write of the node's version, and the swarm writes nodes too (a node that just
    joined gets its status and description): a write between our read and ours is refused as out of sequence, and
    the update is made again on the node read anew."""

    def attempt() -> bool | waits.NotYet:
        try:
            call(engine, what, action)
        except EngineError as error:
            if OUT_OF_SEQUENCE not in str(error):
                raise
            return waits.NotYet(OUT_OF_SEQUENCE)
        return True

    waits.until(attempt, NODE_UPDATE_S, fail=lambda why: EngineError(f"{what} on {engine.endpoint}: {why}", hint=RETRY_HINT))


def update_node_labels(engine: Engine, node_id: str, labels: dict[str, str]) -> None:
    """Add or change node labels (a broker id, a host name): a manager keeps them for the node's life."""
    _update_node(engine, f"labelling node {node_id}", lambda c: c.node.update(node_id, labels_add=labels))


def remove_node_labels(engine: Engine, node_id: str, names: list[str]) -> None:
    """Drop node labels by name (a purged stack's ids and cluster id)."""
    _update_node(engine, f"removing labels from node {node_id}", lambda c: c.node.update(node_id, rm_labels=names))


def set_node_availability(engine: Engine, node_id: str, availability: str) -> None:
    """active, pause or drain: a drained node's tasks shut down (with their stop grace) and none start there."""
    _update_node(engine, f"setting node {node_id} to {availability}", lambda c: c.node.update(node_id, availability=availability))


def remove_node(engine: Engine, node_id: str) -> None:
    """Forget a node in the swarm's list (forced: also one the swarm still sees as up)."""
    call(engine, f"removing node {node_id}", lambda c: c.node.remove(node_id, force=True))


def set_node_role(engine: Engine, node_id: str, role: NodeRole) -> None:
    """Promote a node to manager or demote it to worker (a down manager too, while the others keep a majority)."""
    action = (lambda c: c.node.promote(node_id)) if role == NodeRole.MANAGER else (lambda c: c.node.demote(node_id))
    _update_node(engine, f"making node {node_id} a {role}", action)
