"""The health of one replicated Kafka cluster, as an operator reads it.

Brokers registered against the nodes that should run one, the KRaft controller quorum, partitions
without a leader, short of replicas or below ``min.insync.replicas``, and how replicas and leaders
spread over the brokers. Partitions come from one broker through confluent-kafka; the quorum from a
broker's answer to one DescribeQuorum request (``kafka.quorum``: librdkafka has none), else from
Kafka's own ``kafka-metadata-quorum.sh`` run inside a controller container (a JVM start: it still
answers when no broker does), so no Java is needed where swarmkit runs. Judging is pure.
"""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace

from swarmkit.errors import BrokerError, SwarmkitError
from swarmkit.fanout import fan_out_settled, first_success
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, TaskStatus
from swarmkit.hosts.inventory import Inventory
from swarmkit.kafka import admin, quorum, releases
from swarmkit.kafka.admin import PartitionState
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.controllers import Controller, ControllerSet
from swarmkit.stack.deployed import broker_id_of
from swarmkit.swarm import identity

QUORUM_TOOL = "/opt/kafka/bin/kafka-metadata-quorum.sh"
QUORUM_TIMEOUT = 20.0  # the quorum tool's JVM is killed after this long (a starved or stuck controller)
LAG_LIMIT_MS = 10_000  # a voter that has not caught up with the leader for this long is lagging


@dataclass(frozen=True)
class QuorumMember:
    node_id: int
    status: str  # Leader, Follower or Observer
    lag: int
    caught_up_ms_ago: int | None  # None: never caught up


@dataclass(frozen=True)
class Quorum:
    leader: int  # -1: no leader known
    voters: tuple[QuorumMember, ...] = ()
    observers: tuple[QuorumMember, ...] = ()
    error: str = ""
    unavailable: tuple[str, ...] = ()  # controllers whose container is paused, stopped or missing

    @property
    def lagging(self) -> tuple[QuorumMember, ...]:
        return tuple(
            v for v in self.voters if v.status != "Leader" and (v.caught_up_ms_ago is None or v.caught_up_ms_ago > LAG_LIMIT_MS)
        )


def _number(text: str) -> int | None:
    return int(text) if text.lstrip("-").isdigit() else None


def parse_quorum_replication(text: str, now_ms: int) -> Quorum:
    """Read ``kafka-metadata-quorum.sh describe --replication`` (a header line, one row per member)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if not lines or lines[0][:1] != ["NodeId"]:
        return Quorum(-1, error=f"unexpected quorum description: {text.strip()[:200] or 'empty'}")
    header = lines[0]
    members: list[QuorumMember] = []
    for row in lines[1:]:
        fields = dict(zip(header, row)) if len(row) == len(header) else dict(zip(header[:1], row[:1]))
        fields["Status"] = row[-1]
        caught_up = _number(fields.get("LastCaughtUpTimestamp", ""))
        members.append(
            QuorumMember(
                node_id=int(row[0]),
                status=row[-1],
                lag=_number(fields.get("Lag", "")) or 0,
                caught_up_ms_ago=max(0, now_ms - caught_up) if caught_up and caught_up > 0 else None,
            )
        )
    leader = next((m.node_id for m in members if m.status == "Leader"), -1)
    voters = tuple(m for m in members if m.status in ("Leader", "Follower"))
    observers = tuple(m for m in members if m.status == "Observer")
    return Quorum(leader, voters, observers)


def quorum_from_state(state: quorum.QuorumState, now_ms: int) -> Quorum:
    """Pure: the members as the quorum tool prints them (lag behind the leader's log end, caught-up age)."""
    leader_end = next((v.log_end_offset for v in state.voters if v.node_id == state.leader), state.high_watermark)

    def member(replica: quorum.Replica, status: str) -> QuorumMember:
        caught_up = replica.last_caught_up_ms
        ago = max(0, now_ms - caught_up) if caught_up > 0 else None
        return QuorumMember(replica.node_id, status, max(0, leader_end - replica.log_end_offset), ago)

    ordered = sorted(state.voters, key=lambda v: v.node_id != state.leader)  # the leader first, as the tool prints
    voters = tuple(member(v, "Leader" if v.node_id == state.leader else "Follower") for v in ordered)
    return Quorum(state.leader, voters, tuple(member(o, "Observer") for o in state.observers))


def quorum_from_brokers(
    addresses: Sequence[tuple[str, int]], seconds: float, security: ClientSecurity | None, controllers: Controllers
) -> Quorum:
    """The first broker that describes the quorum within ``seconds``, every broker asked at once (one cut off from the
    others does not hold their answers); BrokerError naming the first failure."""
    calls = [functools.partial(quorum.describe_quorum, host, port, seconds, security) for host, port in addresses]
    try:
        state = first_success(calls, time.monotonic() + seconds)
    except TimeoutError:
        raise BrokerError(f"no broker described the quorum within {seconds:g}s") from None
    return replace(quorum_from_state(state, int(time.time() * 1000)), unavailable=controllers.unavailable)


@dataclass(frozen=True)
class Controllers:
    """Each controller's container as its manager's engine reports it (a cheap look, before the quorum tool)."""

    running: tuple[tuple[str, str], ...]  # (manager host name, container id)
    unavailable: tuple[str, ...]  # a line naming each controller that is paused, stopped, missing or unreachable


def metadata_version(inventory: Inventory, port: int, security: ClientSecurity | None, timeout: float = 5.0) -> str:
    """The finalized metadata.version as Kafka names it, asked of the first broker that answers ("" when none)."""
    for host in inventory.hosts:
        try:
            level = quorum.describe_features(host.address, port, timeout, security).metadata_level
        except BrokerError:
            continue
        return releases.metadata_name(level)
    return ""


def controller_versions(manager: dockerapi.Engine, controllers: Sequence[Controller], stack: str) -> tuple[tuple[int, str], ...]:
    """Each controller's Kafka release, from the image its running task runs ("" when none runs)."""
    found = []
    for controller in controllers:
        state = dockerapi.service_state(manager, f"{stack}_{controller.service}")
        images = (
            [t.image for t in sorted(state.tasks, key=lambda t: t.created_at) if t.state == TaskStatus.RUNNING] if state else []
        )
        found.append((controller.node_id, releases.version_in(images[-1]) if images else ""))
    return tuple(found)


@dataclass(frozen=True)
class KafkaReleases:
    """Each node's Kafka release and the cluster's finalized metadata.version (verify, the report page)."""

    nodes: tuple[tuple[str, str], ...]  # ("broker 1" or "controller 9001", "4.4.0"; "" when its image names none)
    metadata_version: str  # e.g. "4.4-IV2 (33)"; "" when no broker answered

    def line(self) -> str:
        found = ", ".join(f"{node} {version or '?'}" for node, version in self.nodes)
        return f"Kafka: {found}; finalized metadata.version {self.metadata_version or '(not read)'}"


def kafka_releases(
    manager: dockerapi.Engine,
    inventory: Inventory,
    brokers: dockerapi.ServiceState,
    nodes: Sequence[dockerapi.SwarmNode],
    stack: str,
    security: tuple[int, ClientSecurity | None],
) -> KafkaReleases:
    """Brokers' releases from their running tasks' images, the controllers' from theirs, the finalized level from
    the first broker that answers on ``security``'s (port, login)."""
    by_node = {node.id: node for node in nodes}
    found = []
    for task in sorted((t for t in brokers.tasks if t.state == TaskStatus.RUNNING), key=lambda t: t.created_at):
        node = by_node.get(task.node_id)
        broker_id = broker_id_of(node) if node else None
        found.append((f"broker {broker_id if broker_id is not None else '?'}", releases.version_in(task.image)))
    kept = identity.kept_controllers(list(nodes), stack) or ControllerSet.static([host.name for host in inventory.managers])
    found += [(f"controller {node_id}", version) for node_id, version in controller_versions(manager, kept.controllers, stack)]
    port, login = security
    return KafkaReleases(tuple(sorted(found)), metadata_version(inventory, port, login))


def kept_controllers(inventory: Inventory, docker: DockerHosts, stack_name: str) -> ControllerSet:
    """The stack's controllers as the managers keep them; a cluster that keeps none (deployed before sets were
    kept, or a manager that does not answer) has its static voters on the inventory's managers."""
    for manager in inventory.managers:
        try:
            kept = identity.kept_controllers(dockerapi.swarm_nodes(docker[manager]), stack_name)
        except SwarmkitError:
            continue
        return kept or ControllerSet.static([host.name for host in inventory.managers])
    return ControllerSet.static([host.name for host in inventory.managers])


def controller_containers(
    inventory: Inventory, docker: DockerHosts, stack_name: str, kept: ControllerSet | None = None
) -> Controllers:
    """One cheap Docker call per manager, at once."""
    controllers = (kept or kept_controllers(inventory, docker, stack_name)).controllers
    known = {host.name for host in inventory.hosts}
    states = fan_out_settled(
        lambda c: _container_of(inventory, docker, stack_name, c.service, c.host) if c.host in known else None,
        controllers,
        SwarmkitError,
    )
    running, unavailable = [], []
    for controller, state in zip(controllers, states):
        service, node_id, host_name = controller.service, controller.node_id, controller.host
        if isinstance(state, tuple) and state[1] == "running":
            running.append((host_name, state[0]))
            continue
        if isinstance(state, SwarmkitError):
            why = state.message
        else:
            why = f"its container is {state[1]}" if state else "no container runs"
        unavailable.append(f"controller {node_id} ({service} on {host_name}): {why}")
    return Controllers(tuple(running), tuple(unavailable))


def _container_of(inventory: Inventory, docker: DockerHosts, stack: str, service: str, host: str) -> tuple[str, str] | None:
    return dockerapi.service_container(docker[inventory.host(host)], f"{stack}_{service}")


def read_quorum(
    inventory: Inventory,
    docker: DockerHosts,
    controllers: Controllers,
    controller_port: int,
    command_config: str | None = None,
    seconds: float = QUORUM_TIMEOUT,
) -> Quorum:
    """Ask a running controller to describe the quorum (over TLS with ``command_config``, a client configuration
    inside the container), its JVM killed after ``seconds``; controllers that do not run are named in the result."""
    command = ["timeout", "-s", "KILL", str(max(1, int(seconds))), QUORUM_TOOL]
    command += ["--bootstrap-controller", f"localhost:{controller_port}", "describe", "--replication"]
    command[5:5] = ["--command-config", command_config] if command_config else []
    errors = []
    for host_name, container in controllers.running:
        try:
            output = dockerapi.exec_in_container(docker[inventory.host(host_name)], container, command)
        except SwarmkitError as error:
            errors.append(f"on {host_name}: {error.message}")
            continue
        return replace(parse_quorum_replication(output, int(time.time() * 1000)), unavailable=controllers.unavailable)
    return unread_quorum(controllers, "no controller described the quorum: " + "; ".join(errors or ["none runs"]))


def unread_quorum(controllers: Controllers, why: str) -> Quorum:
    """A quorum that could not be described, with what the containers showed."""
    return Quorum(-1, error="; ".join([why, *controllers.unavailable]), unavailable=controllers.unavailable)


@dataclass(frozen=True)
class BrokerShare:
    broker_id: int
    node: str  # "" when no inventory node carries this id
    registered: bool
    replicas: int
    leaders: int


@dataclass(frozen=True)
class ClusterHealth:
    brokers: tuple[BrokerShare, ...]
    quorum: Quorum
    offline: tuple[str, ...]
    under_replicated: tuple[str, ...]
    under_min_isr: tuple[str, ...]
    problems: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok}


def _by_topic(partitions: Sequence[PartitionState]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for state in partitions:
        found.setdefault(state.topic, []).append(state.partition)
    return found


def _partition_problems(partitions: Sequence[PartitionState]) -> list[str]:
    problems = []
    checks = (
        ("offline", "have no leader (offline: nothing can be written or read there)"),
        ("under_replicated", "are under-replicated (a replica is out of sync)"),
        ("under_min_isr", "are below min.insync.replicas (acks=all writes are refused)"),
    )
    for attribute, meaning in checks:
        for topic, numbers in _by_topic([p for p in partitions if getattr(p, attribute)]).items():
            problems.append(f"topic {topic}: partitions {','.join(map(str, numbers))} {meaning}")
    return problems


def quorum_problems(quorum: Quorum) -> list[str]:
    if quorum.error:
        return [f"controller quorum: {quorum.error}"]
    problems = [] if quorum.leader >= 0 else ["controller quorum has no leader"]
    problems += [f"{controller}; the quorum runs without it" for controller in quorum.unavailable]
    for voter in quorum.lagging:
        since = (
            "never caught up" if voter.caught_up_ms_ago is None else f"last caught up {voter.caught_up_ms_ago / 1000:.0f} s ago"
        )
        problems.append(f"controller {voter.node_id} lags the quorum leader ({since}, {voter.lag} records behind)")
    return problems


def _shares(expected: Mapping[str, int], registered: Sequence[int], partitions: Sequence[PartitionState]) -> list[BrokerShare]:
    user = [p for p in partitions if not p.topic.startswith("__")]
    replicas = Counter(r for p in user for r in p.replicas)
    leaders = Counter(p.leader for p in user if p.leader >= 0)
    node_of = {broker_id: node for node, broker_id in expected.items()}
    ids = sorted(set(node_of) | set(registered))
    return [BrokerShare(i, node_of.get(i, ""), i in registered, replicas[i], leaders[i]) for i in ids]


def judge(
    expected: Mapping[str, int], registered: Sequence[int], partitions: Sequence[PartitionState], quorum: Quorum
) -> ClusterHealth:
    """Pure: the verdict on a cluster. ``expected`` maps each inventory node with a broker id to that id."""
    shares = _shares(expected, registered, partitions)
    problems = quorum_problems(quorum)
    for share in shares:
        if not share.registered:
            problems.append(
                f"broker {share.broker_id} ({share.node}) is not registered with the controllers: it is down, fenced or "
                "cannot reach the controller quorum"
            )
        elif not share.node:
            problems.append(f"broker {share.broker_id} is registered but no inventory node carries that id")
    problems += _partition_problems(partitions)
    notes = [
        f"broker {s.broker_id} ({s.node}) holds no partitions yet: new topics use it; existing ones need a "
        "partition reassignment to move replicas onto it"
        for s in shares
        if s.registered and s.node and s.replicas == 0
    ]
    return ClusterHealth(
        brokers=tuple(shares),
        quorum=quorum,
        offline=tuple(f"{p.topic}-{p.partition}" for p in partitions if p.offline),
        under_replicated=tuple(f"{p.topic}-{p.partition}" for p in partitions if p.under_replicated),
        under_min_isr=tuple(f"{p.topic}-{p.partition}" for p in partitions if p.under_min_isr),
        problems=tuple(problems),
        notes=tuple(notes),
    )


def cluster_health_from(
    quorum: Quorum, bootstrap: str, expected: Mapping[str, int], timeout: float, security: ClientSecurity | None = None
) -> ClusterHealth:
    """Read the partitions from one healthy broker, then judge them with the quorum already read."""
    registered, partitions = admin.partition_states(bootstrap, timeout, security)
    return judge(expected, registered, partitions, quorum)
