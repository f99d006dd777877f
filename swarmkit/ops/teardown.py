"""`swarmkit down`: remove a deployed stack, and with ``purge`` everything it kept.

What a stack leaves behind on purpose: each node's data volumes (``<stack>_data``, the
controllers' ``<stack>_controller-data``), its identity volume, the broker-id labels and
high-water mark in the swarm, and the KRaft cluster id kept on the managers. Kept, a later ``up``
brings the same cluster back: same broker ids, same cluster id, same logs. Purged, the next ``up``
starts a new cluster.

The brokers go first, while the controllers still run: each broker's controlled shutdown then
hands its leaderships over and ends in seconds, instead of waiting out its stop grace period for
a controller that is already gone (and recovering its logs at the next start). Then the rest of
the stack (controllers, configs, the overlay network) goes with ``docker stack rm``, and ``down``
waits until no container of the stack is left on any node, so an ``up`` right after starts clean.
An interrupted ``down`` may leave the stack's network, configs or secrets without its services: the
next ``down`` removes them.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace

from swarmkit import names, waits
from swarmkit.errors import OperationError, SpecError, SwarmkitError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, NodeRole, SwarmNode
from swarmkit.hosts.dockerapi.stacks import STACK_LABEL
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.ops import metrics
from swarmkit.stack import prometheus
from swarmkit.stack.deployed import (
    CLUSTER_ID_LABEL,
    ID_LABEL,
    NEXT_LABEL,
    QUORUM_LABEL,
    broker_service,
    data_volume,
    identity_volume,
    verified_state_path,
)
from swarmkit.swarm.view import engine_states
from swarmkit.waits import Progress

GONE_TIMEOUT = 150.0  # a broker's stop grace period (60 s) and a controller's, with room
POLL_INTERVAL = 0.5


@dataclass(frozen=True)
class DownReport:
    stack: str
    removed_services: tuple[str, ...]
    purged: bool
    volumes: dict[str, list[str]] = field(default_factory=dict)  # host -> volumes removed (purge)
    labels: dict[str, list[str]] = field(default_factory=dict)  # swarm node -> labels removed (purge)
    shared_with: tuple[str, ...] = ()  # other stacks keeping broker ids: the swarm-wide id labels stayed
    leftovers: tuple[str, ...] = ()  # networks, configs, secrets an interrupted `down` left, removed now
    brokers_gone_s: float = 0.0
    total_s: float = 0.0

    @property
    def ok(self) -> bool:
        return True

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok, "brokers_gone_s": round(self.brokers_gone_s, 2), "total_s": round(self.total_s, 2)}


def check_purge(purge: bool, yes: bool) -> None:
    """Purging deletes every broker's data: it needs an explicit yes."""
    if purge and not yes:
        raise SpecError(
            "--purge-data deletes every broker's and controller's data, the node identities, the broker ids and the"
            " cluster id: the next `up` starts an empty cluster",
            hint="add --yes to confirm; without --purge-data, `down` keeps all of them for the next `up`",
        )


def labels_to_purge(node: SwarmNode, stack: str, shared: bool = True) -> list[str]:
    """What ``purge`` removes from one node: this stack's cluster id on a manager, and when ``shared`` (no other
    stack keeps broker ids) the swarm-wide broker id and, on a manager, the id mark."""
    names = [ID_LABEL] if shared else []
    if node.role == NodeRole.MANAGER:
        names += ([NEXT_LABEL] if shared else []) + [f"{CLUSTER_ID_LABEL}.{stack}", f"{QUORUM_LABEL}.{stack}"]
    return [name for name in names if name in node.labels]


def kafka_stacks(services: dict[str, list[str]], volumes: dict[str, list[str]], nodes: list[SwarmNode]) -> set[str]:
    """The stacks that hold broker ids here: a broker service, an identity or data volume, or a kept cluster id.

    ``services`` and ``volumes`` map a stack to its services and volumes (a Spark stack has neither kind)."""
    found = {stack for stack, named in services.items() if broker_service(stack) in named}
    found |= {stack for stack, named in volumes.items() if {identity_volume(stack), data_volume(stack)} & set(named)}
    prefix = f"{CLUSTER_ID_LABEL}."
    found |= {label[len(prefix) :] for node in nodes for label in node.labels if label.startswith(prefix)}
    return found


def check_something_to_purge(stack: str, present: set[str], deployed: bool, verified: bool) -> None:
    """Broker ids are swarm-wide: a purge of a stack that is neither deployed nor keeps anything (a typo) is refused."""
    if stack in present or deployed or verified:
        return
    raise SpecError(
        f"stack '{stack}' is not deployed and keeps no data, identity or cluster id here: nothing to purge, nothing changed",
        hint=f"stacks here: {', '.join(sorted(present)) or 'none'}; check --stack",
    )


def _reachable(inventory: Inventory, docker: DockerHosts) -> None:
    """Every engine must answer: containers are waited for, and volumes removed, on every node."""
    states = engine_states(inventory, docker)
    silent = [f"{name} ({state.message})" for name, state in states.items() if isinstance(state, SwarmkitError)]
    if silent:
        raise OperationError(
            f"not every Docker engine answers: {'; '.join(silent)}; nothing was changed",
            hint="start those engines (or remove the hosts from the inventory), then run down again",
        )


def _wait_gone(inventory: Inventory, docker: DockerHosts, label: str, what: str, progress: Progress) -> None:
    """Poll every engine until no container carries ``label``."""
    deadline = waits.Deadline(GONE_TIMEOUT, first=POLL_INTERVAL)
    while True:
        left = fan_out(lambda host: dockerapi.labelled_containers(docker[host], label), inventory.hosts)
        total = sum(left)
        if not total:
            return
        busy = ", ".join(f"{host.name} ({count})" for host, count in zip(inventory.hosts, left) if count)
        progress(0, 0, f"waiting for {total} {what} container(s) to stop: {busy}")
        if deadline.passed():
            raise OperationError(
                f"{what} containers still present after {GONE_TIMEOUT:.0f} s on {busy}",
                hint="see `docker ps -a` on those hosts; run down again once they are gone",
            )
        deadline.sleep()


def _remove_stack(
    inventory: Inventory, docker: DockerHosts, manager: Engine, stack: str, services: list[str], progress: Progress
) -> float:
    """Brokers first (controlled shutdowns while the controllers run), then the rest; returns the brokers' time."""
    started = time.monotonic()
    broker = broker_service(stack)
    if broker in services:
        progress(0, 0, f"removing {broker}")
        dockerapi.remove_service(manager, broker)
        _wait_gone(inventory, docker, f"com.docker.swarm.service.name={broker}", "broker", progress)
    brokers_gone = time.monotonic() - started
    progress(0, 0, f"removing the rest of stack {stack}")
    dockerapi.remove_stack(manager, stack)
    _wait_gone(inventory, docker, f"{STACK_LABEL}={stack}", f"stack {stack}", progress)
    return brokers_gone


def _stack_volumes(inventory: Inventory, docker: DockerHosts) -> list[dict[str, list[str]]]:
    """Per host (inventory order): every stack's volumes there, by stack."""
    return fan_out(lambda host: dockerapi.names_by_label(docker[host], "volume", STACK_LABEL), inventory.hosts)


def _purge(inventory: Inventory, docker: DockerHosts, manager: Engine, stack: str, deployed: bool) -> DownReport:
    """Every node's volumes of the stack, then the labels swarmkit kept for it (the swarm-wide broker ids only
    when no other stack keeps any); refused, changing nothing, when the stack has nothing here."""
    on_hosts = _stack_volumes(inventory, docker)
    nodes = dockerapi.swarm_nodes(manager)
    services = dockerapi.names_by_label(manager, "service", STACK_LABEL)
    present = kafka_stacks(services, {s: v for host in on_hosts for s, v in host.items()}, nodes)
    check_something_to_purge(stack, present, deployed, verified_state_path(inventory, stack).exists())
    others = tuple(sorted(present - {stack}))

    def volumes(host: Host) -> list[str]:
        return dockerapi.remove_labelled_volumes(docker[host], f"{STACK_LABEL}={stack}")

    removed = dict(zip((h.name for h in inventory.hosts), fan_out(volumes, inventory.hosts)))
    labels = {}
    for node in nodes:
        names = labels_to_purge(node, stack, shared=not others)
        if names:
            dockerapi.remove_node_labels(manager, node.id, names)
            labels[node.hostname] = names
    verified_state_path(inventory, stack).unlink(missing_ok=True)
    return DownReport(stack, (), True, removed, labels, others)


def _remove_metrics(session: Session, stack: str, purge: bool) -> tuple[str, ...]:
    """The stack's Prometheus goes first: it is attached to the stack's network, which would otherwise stay."""
    if not dockerapi.stack_services(session.docker[session.inventory.first_manager], prometheus.stack_name(stack)):
        return ()
    session.progress(0, 1, f"removing {prometheus.stack_name(stack)}, which watches stack {stack}")
    return metrics.metrics_down(session, kafka_stack=stack, purge=purge).removed


def down(session: Session, stack: str = "kafka", *, purge: bool = False, yes: bool = False) -> DownReport:
    """Remove the stack and wait until its containers are gone everywhere; with ``purge``, its kept state too."""
    started = time.monotonic()
    inventory, docker, progress = session.inventory, session.docker, session.progress
    names.stack_name(stack)
    check_purge(purge, yes)
    _reachable(inventory, docker)
    manager = docker[inventory.first_manager]
    services = dockerapi.stack_services(manager, stack)
    leftovers = () if services else tuple(dockerapi.stack_leftovers(manager, stack))
    if not services and not leftovers and not purge:
        raise OperationError(
            f"stack '{stack}' is not deployed: nothing to remove",
            hint=f"its data, if any, is kept; `swarmkit down --purge-data --yes` deletes it (check --stack, now '{stack}')",
        )
    removing = services or leftovers
    watching = _remove_metrics(session, stack, purge)
    brokers_gone = _remove_stack(inventory, docker, manager, stack, services, progress) if removing else 0.0
    # not deployed: nothing was removed above, and _purge refuses a stack that keeps nothing here either
    report = _purge(inventory, docker, manager, stack, bool(services)) if purge else DownReport(stack, (), False)
    return replace(
        report,
        removed_services=tuple(services) + watching,
        leftovers=leftovers,
        brokers_gone_s=brokers_gone,
        total_s=time.monotonic() - started,
    )
