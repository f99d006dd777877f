"""What swarmkit reads from Docker, as typed values: the parsing layer builds them, the callers use them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from swarmkit.hosts.roles import NodeRole

S = TypeVar("S", bound=StrEnum)


class TaskStatus(StrEnum):
    """A swarm task's state (and desired state), as Docker names them."""

    NEW = "new"
    ALLOCATED = "allocated"
    PENDING = "pending"
    ASSIGNED = "assigned"
    ACCEPTED = "accepted"
    PREPARING = "preparing"
    READY = "ready"
    STARTING = "starting"
    RUNNING = "running"
    COMPLETE = "complete"
    SHUTDOWN = "shutdown"
    FAILED = "failed"
    REJECTED = "rejected"
    REMOVE = "remove"
    ORPHANED = "orphaned"
    UNKNOWN = "unknown"  # a state this Docker version has and swarmkit does not know (or none)


ENDED = (TaskStatus.COMPLETE, TaskStatus.FAILED, TaskStatus.REJECTED)
FAILED_START = (TaskStatus.FAILED, TaskStatus.REJECTED)


class NodeState(StrEnum):
    UNKNOWN = "unknown"
    DOWN = "down"
    READY = "ready"
    DISCONNECTED = "disconnected"


class Availability(StrEnum):
    ACTIVE = "active"
    PAUSE = "pause"
    DRAIN = "drain"


class SwarmState(StrEnum):
    """An engine's own place in a swarm (``docker info``'s LocalNodeState)."""

    INACTIVE = "inactive"
    PENDING = "pending"
    ACTIVE = "active"
    ERROR = "error"
    LOCKED = "locked"


def member(kind: type[S], value: str, unknown: S) -> S:
    """``value`` as a member of ``kind``; ``unknown`` for a value Docker has and swarmkit does not."""
    return kind(value) if value in kind._value2member_map_ else unknown


@dataclass(frozen=True)
class EngineInfo:
    """What ``docker system info`` says of an engine that preflight, swarm and sandbox decide on."""

    endpoint: str
    version: str
    hostname: str
    swarm_state: SwarmState
    swarm_node_id: str
    swarm_cluster_id: str
    memory_bytes: int


@dataclass(frozen=True)
class SwarmNode:
    """One swarm node as a manager sees it, labels included (they carry broker ids and host names)."""

    id: str
    hostname: str
    role: NodeRole
    state: NodeState
    availability: Availability
    address: str
    labels: dict[str, str]


@dataclass(frozen=True)
class TaskState:
    """One task of a service, as ``docker service ps --no-trunc`` shows it."""

    id: str
    name: str
    node_id: str
    desired_state: TaskStatus
    state: TaskStatus
    message: str
    error: str
    container_id: str
    created_at: str
    current: bool  # runs the service's present container spec (not a task an update will replace)
    image: str = ""  # the image reference the task runs (as the service spec named it)


@dataclass(frozen=True)
class ServiceState:
    """A service and every task it has: what convergence, status and roll decide on."""

    name: str
    update_state: str  # "" (never updated), updating, paused, completed, rollback_*
    update_message: str
    env: dict[str, str]
    tasks: tuple[TaskState, ...]
    labels: dict[str, str] = field(default_factory=dict)

    def tasks_on(self, node_id: str) -> list[TaskState]:
        """The node's tasks, newest first."""
        return sorted((t for t in self.tasks if t.node_id == node_id), key=lambda t: t.created_at, reverse=True)

    def running_on(self, node_id: str) -> TaskState | None:
        """The node's task that runs the present spec now; None while it starts, fails or is replaced."""
        for task in self.tasks_on(node_id):
            if task.current and task.desired_state == "running" and task.state == "running":
                return task
        return None


@dataclass(frozen=True)
class SecretChange:
    """Secret mounts to take off a service and to put on it (``source=NAME,target=FILE,uid=…`` as the CLI
    writes them)."""

    remove: tuple[str, ...]
    add: tuple[str, ...]


@dataclass(frozen=True)
class ServiceSpec:
    """What a running service was told to run, beyond its tasks: its image and rolling-update delay."""

    image: str
    update_delay_ns: int
    labels: dict[str, str]
    secrets: tuple[tuple[str, str], ...] = ()  # (secret name, file name under /run/secrets) of each mount
