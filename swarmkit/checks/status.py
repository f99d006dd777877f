"""`swarmkit status`: what a deployed cluster looks like right now, read without changing anything.

One pass gathers the swarm's nodes (role, availability, address), each node's broker task (since
when it runs, which image, whether it runs the service's present spec), what the brokers advertise
and whether they are registered (Kafka metadata), the KRaft quorum (the controllers' own tool, as
``verify`` reads it) and, per topic, how many partitions are under-replicated or offline. The
quorum is read while the brokers are asked, so the command costs about one quorum description. Also read
meanwhile: every consumer group's lag per topic (the Admin API, ``kafka.lag``) and, for the apache engine,
each broker's log directory and the free space under it (``checks.disk``).
Assembling the report from what was read is pure.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace

from swarmkit.checks import disk, health, symptoms, verify
from swarmkit.checks.disk import BrokerDisk
from swarmkit.checks.health import Quorum
from swarmkit.checks.verify import BrokerVerdict, VerifyOptions, quorum_of
from swarmkit.errors import BrokerError, OperationError, SwarmkitError
from swarmkit.fanout import in_background
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, EngineInfo, ServiceState, SwarmNode, TaskState, TaskStatus
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin, lag, releases
from swarmkit.kafka.admin import ClusterMetadata, PartitionState
from swarmkit.kafka.lag import GroupLag
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.controllers import Controller, ControllerSet
from swarmkit.stack.deployed import ID_LABEL, DeployedStack, broker_id_of, broker_service
from swarmkit.stack.engines import ENGINES
from swarmkit.swarm import identity
from swarmkit.swarm.view import active_manager, engine_states, node_for

READ_TIMEOUT = 5.0


@dataclass(frozen=True)
class NodeStatus:
    host: str  # the inventory name ("" for a swarm node the inventory does not list)
    hostname: str
    role: str
    state: str  # the swarm's view (ready, down), or "not in the swarm", or "engine not answering"
    availability: str
    address: str
    broker_id: int | None


@dataclass(frozen=True)
class BrokerStatus:
    broker_id: int | None
    node: str
    advertised: str  # what the broker gives clients ("" when it is not in the metadata)
    registered: bool
    task: str  # the state of the node's broker task (none when there is none)
    since: str  # when that task was created (UTC, seconds)
    image: str
    current: bool  # runs the service's present spec (False in the middle of a rolling update)
    container_id: str
    kafka_version: str = ""  # the Kafka release its task's image names ("" for none)


@dataclass(frozen=True)
class TopicStatus:
    topic: str
    partitions: int
    replication_factor: int
    under_replicated: int
    offline: int
    under_min_isr: int


@dataclass(frozen=True)
class ClusterStatus:
    stack: str
    engine: str
    image: str
    nodes: tuple[NodeStatus, ...]
    brokers: tuple[BrokerStatus, ...]
    quorum: Quorum | None  # None for engines without controllers
    controllers: tuple[tuple[int, str], ...]  # (controller id, manager it is pinned to)
    topics: tuple[TopicStatus, ...]
    kafka_error: str
    read_s: float
    certificates: pki.Expiry | None = None  # secure stacks: days left of the CA and of the first broker certificate
    faults: tuple[symptoms.FaultSign, ...] = ()  # a partitioned host, a full log directory, a slow link (symptoms.py)
    lag: tuple[GroupLag, ...] = ()  # every consumer group's lag per topic
    lag_error: str = ""
    disks: tuple[BrokerDisk, ...] = ()  # apache: each node's broker log directory
    controller_versions: tuple[tuple[int, str], ...] = ()  # (controller id, the Kafka release its task runs)
    metadata_version: str = ""  # the finalized metadata.version ("" when it cannot be read)
    swarm_error: str = ""  # the swarm's view is missing (it has no leader): the rows are what the hosts and brokers show

    @property
    def ok(self) -> bool:
        """Everything could be read (the cluster's own health is what the tables show, not this)."""
        return not self.kafka_error and not (self.quorum and self.quorum.error) and not self.swarm_error

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok, "read_s": round(self.read_s, 2)}


# --- pure ----------------------------------------------------------------------------------------


def topic_rows(partitions: Sequence[PartitionState]) -> tuple[TopicStatus, ...]:
    """One row per topic, internal topics included (their replicas move in a roll too)."""
    by_topic: dict[str, list[PartitionState]] = {}
    for state in partitions:
        by_topic.setdefault(state.topic, []).append(state)
    return tuple(
        TopicStatus(
            topic=name,
            partitions=len(states),
            replication_factor=max(len(p.replicas) for p in states),
            under_replicated=sum(p.under_replicated for p in states),
            offline=sum(p.offline for p in states),
            under_min_isr=sum(p.under_min_isr for p in states),
        )
        for name, states in sorted(by_topic.items())
    )


def _broker_id(node: SwarmNode | None) -> int | None:
    return broker_id_of(node) if node else None


def _newest_task(tasks: Sequence[TaskState]) -> TaskState | None:
    """The task that counts on a node: the newest one the swarm still wants running."""
    wanted = [t for t in tasks if t.desired_state == TaskStatus.RUNNING] or list(tasks)
    return max(wanted, key=lambda t: t.created_at, default=None)


def broker_row(node: SwarmNode, name: str, service: ServiceState, image: str, metadata: ClusterMetadata | None) -> BrokerStatus:
    """The broker of one swarm node, from its tasks and the cluster's metadata."""
    task = _newest_task([t for t in service.tasks if t.node_id == node.id])
    broker_id = _broker_id(node)
    listed = metadata.broker(broker_id) if metadata and broker_id is not None else None
    return BrokerStatus(
        broker_id=broker_id,
        node=name,
        advertised=listed.endpoint if listed else "",
        registered=listed is not None,
        task=task.state if task else "none",
        since=task.created_at[:19].replace("T", " ") if task else "",
        image=image if task and task.current else ("(previous spec)" if task else ""),
        current=bool(task and task.current),
        container_id=task.container_id[:12] if task else "",
        kafka_version=releases.version_in(task.image) if task else "",
    )


def node_row(host: str, node: SwarmNode | None, engine: EngineInfo | Exception | None) -> NodeStatus:
    if node is None:
        state = "engine not answering" if isinstance(engine, Exception) else "not in the swarm"
        return NodeStatus(host, "", "", state, "", "", None)
    return NodeStatus(host, node.hostname, node.role, node.state, node.availability, node.address, _broker_id(node))


def leaderless_row(host: Host, engine: EngineInfo | Exception) -> NodeStatus:
    """A host as its own engine shows it while the swarm has no leader (no role, availability or broker id to read)."""
    if not isinstance(engine, EngineInfo):
        return node_row(host.name, None, engine)
    return NodeStatus(host.name, engine.hostname, "", f"{engine.swarm_state or 'no'} swarm, no leader", "", host.address, None)


def asked_row(host: Host, asked: BrokerVerdict, metadata: ClusterMetadata | None, engine: EngineInfo | Exception) -> BrokerStatus:
    """A host's broker asked from here without the swarm: the metadata's broker advertising the host's name, hostname
    or address, if any (its task is not read)."""
    names = {host.name, host.address} | ({engine.hostname} if isinstance(engine, EngineInfo) else set())
    listed = next((b for b in metadata.brokers if b.host in names), None) if metadata else None
    task = f"{verify.NOT_READ} (" + ("answers from here" if asked.ok else asked.detail) + ")"
    return BrokerStatus(
        broker_id=listed.node_id if listed else None,
        node=host.name,
        advertised=listed.endpoint if listed else "",
        registered=listed is not None,
        task=task,
        since="",
        image="",
        current=False,
        container_id="",
    )


# --- reading -------------------------------------------------------------------------------------


def _kafka_view(bootstrap: str, security: ClientSecurity | None) -> tuple[ClusterMetadata | None, list[PartitionState], str]:
    try:
        with admin.KafkaAdmin(bootstrap, security, READ_TIMEOUT) as kafka:
            return kafka.metadata(), kafka.partition_states()[1], ""
    except BrokerError as error:
        return None, [], error.message


def _lag(bootstrap: str, security: ClientSecurity | None) -> tuple[tuple[GroupLag, ...], str]:
    try:
        return lag.by_topic(lag.consumer_lag(bootstrap, READ_TIMEOUT, security)), ""
    except BrokerError as error:
        return (), error.message


def _broker_service(docker: DockerHosts, manager: dockerapi.Engine, stack: str) -> tuple[ServiceState, str]:
    service_name = broker_service(stack)
    service = dockerapi.service_state(manager, service_name)
    spec = dockerapi.service_spec(manager, service_name)
    if service is None or spec is None:
        raise OperationError(
            f"stack '{stack}' is not deployed (no service {service_name})", hint="deploy it with: swarmkit up -i INVENTORY"
        )
    return service, spec.image


def status(session: Session, stack: str = "kafka", external_port: int = 9094) -> ClusterStatus:
    """Read the cluster once; OperationError only when no manager answers or the stack is not deployed (a swarm without
    a leader is read without its view: ``_leaderless``).  What each host sees of its peers and its data directory is
    read meanwhile, then judged with what was read (symptoms.py)."""
    inventory = session.inventory
    with in_background(lambda: symptoms.read_views(session.docker, inventory, stack, symptoms.BOUND)) as views:
        read = _read(session, stack, external_port)
    fenced = [b.node for b in read.brokers if not b.registered]
    plaintext = read.certificates is None
    return replace(read, faults=symptoms.named(inventory, views.result(), external_port, plaintext, None, fenced, symptoms.BOUND))


@dataclass(frozen=True)
class _KafkaReads:
    """What status reads of the brokers at the hosts' addresses, without the swarm."""

    metadata: ClusterMetadata | None
    partitions: list[PartitionState]
    kafka_error: str
    metadata_version: str
    lag: tuple[tuple[GroupLag, ...], str]
    disks: tuple[BrokerDisk, ...]


def _kafka_reads(session: Session, stack: str, engine: str, security: ClientSecurity | None, port: int) -> _KafkaReads:
    """The metadata, the partitions, the finalized metadata.version, the consumer lag and the log directories, at once."""
    inventory, docker = session.inventory, session.docker
    data_dir = ENGINES[engine].DATA_DIR if engine in ENGINES else ""
    bootstrap = ",".join(f"{host.address}:{port}" for host in inventory.hosts)
    with (
        in_background(lambda: _lag(bootstrap, security)) as lags,
        in_background(lambda: disk.broker_disks(docker, inventory.hosts, stack, data_dir) if data_dir else ()) as disks,
    ):
        metadata, partitions, kafka_error = _kafka_view(bootstrap, security)
        finalized = health.metadata_version(inventory, port, security) if _kraft(engine) else ""
    return _KafkaReads(metadata, partitions, kafka_error, finalized, lags.result(), disks.result())


def _kraft(engine: str) -> bool:
    """Whether the engine has a quorum of controllers and a metadata version to read."""
    return engine in ENGINES and ENGINES[engine].KRAFT


def _read(session: Session, stack: str, external_port: int) -> ClusterStatus:
    started = time.monotonic()
    inventory, docker = session.inventory, session.docker
    engines = engine_states(inventory, docker)
    manager = docker[active_manager(inventory, engines)]
    try:
        nodes = dockerapi.swarm_nodes(manager)
        service, image = _broker_service(docker, manager, stack)
    except SwarmkitError as error:
        if verify.NO_SWARM_LEADER not in error.message:
            raise
        return _leaderless(session, stack, external_port, engines, error, started)
    deployed = DeployedStack(stack, service)
    engine, kraft = deployed.engine, _kraft(deployed.engine)
    security = pki.admin_by_address(inventory, stack, deployed.security)
    options = VerifyOptions(stack_name=stack, security=security)
    with in_background(lambda: quorum_of(inventory, docker, service, options)) as quorum:
        reads = _kafka_reads(session, stack, engine, security, external_port)
    by_host = {host.name: node_for(host, nodes, engines[host.name]) for host in inventory.hosts}
    listed = {node.id for node in by_host.values() if node}
    strangers = [node for node in nodes if node.id not in listed]
    rows = [node_row(name, node, engines[name]) for name, node in by_host.items()] + [node_row("", n, None) for n in strangers]
    members = [(name, node) for name, node in by_host.items() if node] + [(n.hostname, n) for n in strangers]
    brokers = tuple(
        broker_row(node, name, service, image, reads.metadata) for name, node in members if _has_broker(node, service)
    )
    controllers = _controllers(inventory, nodes, stack) if kraft else ()
    read = _assembled(session, stack, engine, security, reads, started)
    return replace(
        read,
        image=image,
        nodes=tuple(rows),
        brokers=brokers,
        quorum=quorum.result() if kraft else None,
        controllers=tuple((c.node_id, c.host) for c in controllers),
        controller_versions=health.controller_versions(manager, controllers, stack) if kraft else (),
    )


def _assembled(
    session: Session, stack: str, engine: str, security: ClientSecurity | None, reads: _KafkaReads, started: float
) -> ClusterStatus:
    """The status of what was read without the swarm (its nodes, brokers and controllers are left empty here)."""
    store = pki.store_dir(session.inventory, stack)
    return ClusterStatus(
        stack=stack,
        engine=engine,
        image="",
        nodes=(),
        brokers=(),
        quorum=None,
        controllers=(),
        topics=topic_rows(reads.partitions),
        kafka_error=reads.kafka_error,
        read_s=time.monotonic() - started,
        certificates=pki.expiry(pki.Pki(store)) if security else None,
        lag=reads.lag[0],
        lag_error=reads.lag[1],
        disks=reads.disks,
        metadata_version=reads.metadata_version,
    )


def _leaderless(
    session: Session,
    stack: str,
    port: int,
    engines: dict[str, EngineInfo | SwarmkitError],
    missing: SwarmkitError,
    started: float,
) -> ClusterStatus:
    """The swarm has no leader: no node, service or task to read.  The hosts as their own engines show them, every
    broker and the controller quorum asked from here as verify does (``verify.asked_from_here``), and what the brokers
    tell of the cluster; the status says the swarm's view is missing."""
    inventory = session.inventory
    engine, kraft = inventory.stack.engine, _kraft(inventory.stack.engine)
    security = pki.admin_by_address(inventory, stack, inventory.stack.security or "plaintext")
    options = VerifyOptions(stack_name=stack, external_port=port, timeout=READ_TIMEOUT, security=security)
    with in_background(lambda: verify.asked_from_here(inventory, options, READ_TIMEOUT)) as asked:
        reads = _kafka_reads(session, stack, engine, security, port)
    verdicts, quorum = asked.result()
    hosts = inventory.hosts
    return replace(
        _assembled(session, stack, engine, security, reads, started),
        nodes=tuple(leaderless_row(h, engines[h.name]) for h in hosts),
        brokers=tuple(asked_row(h, v, reads.metadata, engines[h.name]) for h, v in zip(hosts, verdicts)),
        quorum=quorum if kraft else None,
        controllers=tuple((voter.node_id, "") for voter in quorum.voters) if kraft else (),  # their managers: not read
        swarm_error=verify.view_missing(missing, quorum if kraft else None),
    )


def _controllers(inventory: Inventory, nodes: list[SwarmNode], stack: str) -> tuple[Controller, ...]:
    kept = identity.kept_controllers(nodes, stack) or ControllerSet.static([host.name for host in inventory.managers])
    return kept.controllers


def _has_broker(node: SwarmNode, service: ServiceState) -> bool:
    return ID_LABEL in node.labels or any(t.node_id == node.id for t in service.tasks)
