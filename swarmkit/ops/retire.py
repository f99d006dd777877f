"""`swarmkit remove-node`: retire a server from a replicated cluster without losing a record.

Everything that can refuse does so before anything changes: the host must be a worker of the
inventory (a manager also runs a KRaft controller and a share of the swarm's raft), the stack an
Apache Kafka one, and every partition it holds must fit on the brokers that stay. Then its
replicas move to the brokers holding the fewest, its node is drained (a controlled shutdown of its
broker), the broker is unregistered from the controllers, and the node leaves the swarm. Its
broker id label leaves with the node while the managers' high-water mark stays, so the id is never
handed out again; its data volume stays on the server.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from swarmkit import waits
from swarmkit.errors import DeployError, EngineError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, SwarmNode, TaskStatus
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.ops import reassign
from swarmkit.ops.reassign import Move
from swarmkit.stack.deployed import broker_id_of, broker_service, host_of
from swarmkit.stack.engines import apache

CLUSTER_TOOL = "/opt/kafka/bin/kafka-cluster.sh"
POLL_INTERVAL = 0.5


@dataclass(frozen=True)
class RetireOptions:
    stack_name: str = "kafka"
    external_port: int = 9094
    internal_port: int = 9092
    timeout: float = 600.0  # for the replicas to move, and again for the broker to stop


@dataclass(frozen=True)
class RetireResult:
    host: str
    broker_id: int
    moves: tuple[Move, ...]
    left_swarm: bool  # False: its engine did not answer; the node was removed from the managers' view only
    total_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": True,
            "host": self.host,
            "broker_id": self.broker_id,
            "moved_partitions": [f"{m.topic}-{m.partition}" for m in self.moves],
            "left_swarm": self.left_swarm,
            "total_s": round(self.total_s, 2),
        }


def _leaving_host(inventory: Inventory, name: str) -> Host:
    if name not in {h.name for h in inventory.hosts}:
        known = ", ".join(h.name for h in inventory.hosts)
        raise SpecError(f"no host '{name}' in the inventory", hint=f"hosts are: {known}")
    host = inventory.host(name)
    if host.is_manager:
        raise SpecError(
            f"{name} is a manager: it runs a KRaft controller and holds a share of the swarm's raft",
            hint="retire workers only; to move a manager, add a new manager first and change the inventory's roles",
        )
    return host


def _broker_node(manager: Engine, host: Host) -> tuple[SwarmNode, int]:
    """The host's swarm node and the broker id it carries."""
    node = next((n for n in dockerapi.swarm_nodes(manager) if host_of(n) == host.name), None)
    broker_id = broker_id_of(node) if node else None
    if node is None or broker_id is None:
        raise SpecError(f"{host.name} carries no broker id in this swarm", hint="nothing to retire: see `swarmkit status`")
    return node, broker_id


def retire(session: Session, host_name: str, options: RetireOptions = RetireOptions()) -> RetireResult:
    started = time.monotonic()
    inventory, docker, progress = session.inventory, session.docker, session.progress
    leaving = _leaving_host(inventory, host_name)
    manager = docker[inventory.first_manager]
    security = reassign.require_replicated_stack(inventory, manager, options.stack_name)
    node, broker_id = _broker_node(manager, leaving)
    staying = next(h for h in inventory.hosts if h != leaving)
    bootstrap = f"{staying.address}:{options.external_port}"
    kafka = admin.KafkaAdmin(bootstrap, security)  # the command's one client: the reads and the wait
    registered, partitions = kafka.partition_states()
    moves = reassign.plan_moves_off(partitions, broker_id, [b for b in registered if b != broker_id])
    service = broker_service(options.stack_name)
    connection = reassign.tool_connection(options.internal_port, security)
    if moves:
        reassign.start(docker[staying], service, moves, connection)
        reassign.wait_done(kafka, moves, options.timeout, progress)
    kafka.close()
    progress(0, 1, f"stopping the broker on {leaving.name}")
    dockerapi.set_node_availability(manager, node.id, "drain")
    _wait_stopped(manager, service, node.id, options.timeout)
    apache.run_tool(docker[staying], service, [CLUSTER_TOOL, "unregister", *connection, "--id", str(broker_id)])
    left = _leave_swarm(docker[leaving], manager, node)
    return RetireResult(leaving.name, broker_id, tuple(moves), left, time.monotonic() - started)


def _wait_stopped(manager: Engine, service: str, node_id: str, timeout: float) -> None:
    deadline = waits.Deadline(timeout, first=POLL_INTERVAL)
    while True:
        state = dockerapi.service_state(manager, service)
        if state is None or not any(t.node_id == node_id and t.state == TaskStatus.RUNNING for t in state.tasks):
            return
        if deadline.passed():
            raise DeployError(
                f"the broker on the drained node still runs after {timeout:g}s",
                hint=f"see `docker service ps {service}`; the node stays drained, run remove-node again",
            )
        deadline.sleep()


def _leave_swarm(engine: Engine, manager: Engine, node: SwarmNode) -> bool:
    """Leave from the node itself when its engine answers, then drop it from the managers' list."""
    try:
        dockerapi.swarm_leave(engine, force=False)
        left = True
    except EngineError:
        left = False
    dockerapi.remove_node(manager, node.id)
    return left
