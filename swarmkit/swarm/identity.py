"""Stable broker ids and per-node identity, kept in the swarm itself.

Why labels: swarm templates cannot read node labels and ``.Task.Slot`` is no integer in global
mode, so no stack can compute a broker id.  swarmkit allocates ids and stores them where every
manager sees them and nothing else has to be kept: each node carries ``swarmkit.broker-id=<n>``;
every manager carries the high-water mark ``swarmkit.broker-id.next`` (the next id to hand out).
The mark is read as the maximum over all managers and over all ids still on nodes, and is
written before any new id, so a crash in between leaves a gap, never a reused id; a node that
left takes its label with it but the mark stays.  A node (re)joining gets a new swarm node id and
so a new broker id.

Each node's broker reads its id from ``node.env`` in the volume ``<stack>_identity`` on that node,
written here with a throwaway container before the stack is deployed.  The stack itself never
names a node, so a new node gets an id without any service changing: no other broker restarts.
The apache engine's KRaft cluster id is kept the same way, as ``swarmkit.cluster-id.<stack>``
on every manager, and so are its controllers, as ``swarmkit.quorum.<stack>`` (``stack.controllers``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from swarmkit.assets import STACKS_DIR
from swarmkit.errors import DeployError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, NodeRole, SwarmNode
from swarmkit.hosts.dockerapi.stacks import STACK_LABEL
from swarmkit.stack.controllers import ControllerSet
from swarmkit.stack.deployed import (
    CLUSTER_ID_LABEL,
    ID_LABEL,
    IDENTITY_DIR,
    IDENTITY_FILE,
    MAX_BROKER_ID,
    NEXT_LABEL,
    QUORUM_LABEL,
    identity_job,
)

LABEL_HINT = "fix or remove the label with `docker node update --label-rm LABEL NODE` on a manager, then deploy again"


class Outcome(StrEnum):
    """What became of a file swarmkit puts in a node's volume (the scripts print all but ``unused``)."""

    UNCHANGED = "unchanged"
    WRITTEN = "written"
    REPLACED = "replaced"  # the content changed (e.g. the inventory address): the running broker must restart
    UNUSED = "unused"  # not written: the engine and advertise mode never read it
    ABSENT = "absent"  # the metrics agent only: the image holds no jar to copy


IDENTITY_OUTCOMES = (Outcome.WRITTEN, Outcome.REPLACED, Outcome.UNCHANGED)  # what stacks/write-identity.sh prints
AGENT_OUTCOMES = (Outcome.WRITTEN, Outcome.UNCHANGED, Outcome.ABSENT)  # what stacks/fill-agent.sh prints


@dataclass(frozen=True)
class IdAllocation:
    """Broker id of every wanted node, which of them are new, and the high-water mark to keep."""

    ids: dict[str, int]  # swarm node id -> broker id
    new: tuple[str, ...]  # swarm node ids given an id now
    next_id: int  # the next id ever to be handed out


# --- pure ----------------------------------------------------------------------------------------


def _parse_id(node: SwarmNode, label: str, value: str, maximum: int) -> int:
    if not value.isdigit() or not 1 <= int(value) <= maximum:
        raise DeployError(
            f"node {node.hostname} ({node.id}) has label {label}='{value}', not a whole number 1..{maximum}",
            hint=LABEL_HINT,
        )
    return int(value)


def ids_from_labels(nodes: Iterable[SwarmNode]) -> tuple[dict[str, int], list[int]]:
    """(node id -> broker id of every labelled node, high-water marks found on managers)."""
    ids: dict[str, int] = {}
    marks: list[int] = []
    owners: dict[int, SwarmNode] = {}
    for node in nodes:
        if ID_LABEL in node.labels:
            broker_id = _parse_id(node, ID_LABEL, node.labels[ID_LABEL], MAX_BROKER_ID)
            if broker_id in owners:
                raise DeployError(
                    f"nodes {owners[broker_id].hostname} and {node.hostname} both have {ID_LABEL}={broker_id}",
                    hint=f"a broker id must be unique: remove the label from the node that should get a new id ({LABEL_HINT})",
                )
            owners[broker_id] = node
            ids[node.id] = broker_id
        if node.role == NodeRole.MANAGER and NEXT_LABEL in node.labels:
            marks.append(_parse_id(node, NEXT_LABEL, node.labels[NEXT_LABEL], MAX_BROKER_ID + 1))  # 9001: all used
    return ids, marks


def allocate_broker_ids(existing: Mapping[str, int], wanted: Sequence[str], marks: Iterable[int] = ()) -> IdAllocation:
    """Keep every existing id; give each wanted node without one the next id, in ``wanted`` order.

    ``existing`` holds the ids of every node in the swarm (wanted or not), ``marks`` the kept
    high-water marks: the next id is above all of them, so no id is ever handed out twice.
    """
    next_id = max([1, *marks, *(broker_id + 1 for broker_id in existing.values())])
    ids: dict[str, int] = {}
    new: list[str] = []
    for node_id in wanted:
        if node_id in existing:
            ids[node_id] = existing[node_id]
            continue
        if next_id > MAX_BROKER_ID:
            raise DeployError(
                f"no broker id left for node {node_id}: ids 1..{MAX_BROKER_ID} have all been handed out",
                hint=f"ids are never reused; ids above {MAX_BROKER_ID} belong to KRaft controllers",
            )
        ids[node_id] = next_id
        new.append(node_id)
        next_id += 1
    return IdAllocation(ids, tuple(new), next_id)


def node_env(broker_id: int, address: str, rack: str = "") -> str:
    """The content of ``node.env`` that ``stacks/node-identity.sh`` reads; the rack (the host's zone) only when
    it has one, so that a cluster without zones keeps its identities (and its brokers keep running)."""
    return f"BROKER_ID={broker_id}\nNODE_ADDRESS={address}\n" + (f"NODE_RACK={rack}\n" if rack else "")


def kept_cluster_id(nodes: Iterable[SwarmNode], stack: str) -> str | None:
    """The KRaft cluster id kept on the managers for a stack, if any; managers that disagree are an error."""
    label = f"{CLUSTER_ID_LABEL}.{stack}"
    found = {node.labels[label] for node in nodes if node.role == NodeRole.MANAGER and node.labels.get(label)}
    if len(found) > 1:
        raise DeployError(
            f"the managers keep different cluster ids for stack {stack}: {', '.join(sorted(found))}",
            hint=f"keep the one the brokers' data was formatted with on every manager ({label})",
        )
    return found.pop() if found else None


def kept_controllers(nodes: Iterable[SwarmNode], stack: str) -> ControllerSet | None:
    """The controllers kept on the managers for a stack, if any; where managers disagree (a change that stopped
    half way), the latest one: the one that handed out the most ids."""
    label = f"{QUORUM_LABEL}.{stack}"
    found = [
        ControllerSet.parse(node.labels[label]) for node in nodes if node.role == NodeRole.MANAGER and node.labels.get(label)
    ]
    return max(found, key=lambda kept: kept.next_id) if found else None


# --- on the swarm ----------------------------------------------------------------------------------


def assign_broker_ids(manager: Engine, nodes: Sequence[SwarmNode], wanted: Sequence[str]) -> IdAllocation:
    """Allocate ids for ``wanted`` (swarm node ids, in a stable order) and store them as labels.

    The high-water mark goes on every manager first (all at once), then each new node gets its
    label (all at once); labels already right are not touched."""
    existing, marks = ids_from_labels(nodes)
    allocation = allocate_broker_ids(existing, wanted, marks)
    mark = str(allocation.next_id)
    stale = [node.id for node in nodes if node.role == NodeRole.MANAGER and node.labels.get(NEXT_LABEL) != mark]
    fan_out(lambda node_id: dockerapi.update_node_labels(manager, node_id, {NEXT_LABEL: mark}), stale)
    fan_out(
        lambda node_id: dockerapi.update_node_labels(manager, node_id, {ID_LABEL: str(allocation.ids[node_id])}), allocation.new
    )
    return allocation


def keep_cluster_id(manager: Engine, nodes: Sequence[SwarmNode], stack: str, cluster_id: str) -> None:
    """Store the cluster id on every manager that lacks it (a manager that joined later included)."""
    label = f"{CLUSTER_ID_LABEL}.{stack}"
    lacking = [node.id for node in nodes if node.role == NodeRole.MANAGER and node.labels.get(label) != cluster_id]
    fan_out(lambda node_id: dockerapi.update_node_labels(manager, node_id, {label: cluster_id}), lacking)


def keep_controllers(manager: Engine, nodes: Sequence[SwarmNode], stack: str, controllers: ControllerSet) -> None:
    """Store the controller set on every manager whose label differs."""
    label, value = f"{QUORUM_LABEL}.{stack}", controllers.label()
    stale = [node.id for node in nodes if node.role == NodeRole.MANAGER and node.labels.get(label) != value]
    fan_out(lambda node_id: dockerapi.update_node_labels(manager, node_id, {label: value}), stale)


def write_identity(engine: Engine, image: str, volume: str, stack: str, content: str) -> Outcome:
    """Fill ``node.env`` in the node's identity volume; returns ``written``, ``replaced`` or ``unchanged``.

    The volume is created with the label docker stack deploy gives its own volumes, so the stack
    adopts it (checked on real engines: a stack volume is a local volume named ``<stack>_<name>``,
    and an existing one is mounted as it is)."""
    dockerapi.ensure_volume(engine, volume, {STACK_LABEL: stack})
    output = dockerapi.run_with_volume(engine, image, volume, IDENTITY_DIR, _writer(), _writer_env(content))
    return _outcome(output, f"writing {IDENTITY_FILE} into volume {volume} on {engine.endpoint}", image)


def write_identity_through_swarm(manager: Engine, node: SwarmNode, image: str, volume: str, stack: str, content: str) -> Outcome:
    """``write_identity`` on a node swarmkit reaches only through the swarm (one joined by hand with
    ``swarmkit join``): a one-off job pinned to that node mounts the volume, labelled for the stack."""
    mount = f"type=volume,source={volume},target={IDENTITY_DIR},volume-label={STACK_LABEL}={stack}"
    job = identity_job(stack, node.id)
    output = dockerapi.run_job_on_node(manager, job, node.id, image, mount, _writer(), _writer_env(content))
    return _outcome(output, f"writing {IDENTITY_FILE} into volume {volume} on node {node.hostname}", image)


def _writer() -> str:
    return (STACKS_DIR / "write-identity.sh").read_text(encoding="utf-8")


def _writer_env(content: str) -> dict[str, str]:
    return {"SWARMKIT_IDENTITY_FILE": IDENTITY_FILE, "SWARMKIT_NODE_ENV": content}


def _outcome(output: str, doing: str, image: str, allowed: tuple[Outcome, ...] = IDENTITY_OUTCOMES) -> Outcome:
    outcome = output.strip().splitlines()[-1] if output.strip() else ""
    if outcome not in allowed:
        raise DeployError(
            f"{doing} failed: {output.strip() or 'no output'}",
            hint=f"the image {image} must have /bin/sh; check the engine's disk space",
        )
    return Outcome(outcome)


AGENT_MOUNT = "/swarmkit/metrics-agent"  # where the helper container mounts the agent's volume


@dataclass(frozen=True)
class AgentCopy:
    """The metrics agent's jar: where ``image`` (swarmkit's probe image) holds it, and which volume of the stack
    gets it under ``name``."""

    image: str
    source: str
    volume: str
    name: str
    stack: str


def fill_agent(engine: Engine, copy: AgentCopy) -> Outcome:
    """Copy the jar into the node's volume, created with the stack's label as the identity volume is;
    returns ``written``, ``unchanged`` or ``absent`` (an image without it)."""
    dockerapi.ensure_volume(engine, copy.volume, {STACK_LABEL: copy.stack})
    output = dockerapi.run_with_volume(engine, copy.image, copy.volume, AGENT_MOUNT, _filler(), _filler_env(copy))
    where = f"volume {copy.volume} on {engine.endpoint}"
    return _outcome(output, f"copying the metrics agent into {where}", copy.image, AGENT_OUTCOMES)


def fill_agent_through_swarm(manager: Engine, node: SwarmNode, copy: AgentCopy) -> Outcome:
    """``fill_agent`` on a node swarmkit reaches only through the swarm: a one-off job pinned to it."""
    mount = f"type=volume,source={copy.volume},target={AGENT_MOUNT},volume-label={STACK_LABEL}={copy.stack}"
    job = f"{identity_job(copy.stack, node.id)}-agent"
    output = dockerapi.run_job_on_node(manager, job, node.id, copy.image, mount, _filler(), _filler_env(copy))
    where = f"volume {copy.volume} on node {node.hostname}"
    return _outcome(output, f"copying the metrics agent into {where}", copy.image, AGENT_OUTCOMES)


def _filler() -> str:
    return (STACKS_DIR / "fill-agent.sh").read_text(encoding="utf-8")


def _filler_env(copy: AgentCopy) -> dict[str, str]:
    return {"SWARMKIT_AGENT_SOURCE": copy.source, "SWARMKIT_AGENT_TARGET": f"{AGENT_MOUNT}/{copy.name}"}


def write_identities(targets: Sequence[tuple[Engine, str]], image: str, volume: str, stack: str) -> list[Outcome]:
    """``write_identity`` on many engines at once: ``targets`` holds (engine, content) pairs."""
    return fan_out(lambda target: write_identity(target[0], image, volume, stack, target[1]), targets)
