"""`swarmkit upgrade`: move a running cluster to another Kafka release, one node at a time, then finalize.

The order is Kafka's: every controller first, one at a time (followers before the active one, so the quorum
keeps a majority and elects once), each back and caught up with the leader's log end before the next
(``ops.controllers``); then every broker, one at a time, each back in the ISR of all its partitions before
the next (``ops.roll`` with the new image), ending with a preferred-leader election.  A downgrade (allowed
until the finalize) goes the other way round: brokers, then controllers.  Nodes already on the target are
left alone, so a run that was interrupted (Ctrl-C, a node not back in time) resumes where it stopped; the
cluster serves with mixed versions meanwhile.

The finalize raises ``metadata.version`` and the other features the release brings (``kafka.releases``)
through Kafka's UpdateFeatures, once every node runs the new release and the cluster is in sync.  After it
the older release cannot run the cluster: a downgrade is refused with the finalized level named.
Everything that can refuse does so before anything changes: the release, the jump, the finalized level,
a cluster not in sync or missing a voter, an image the nodes cannot get.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from swarmkit import waits
from swarmkit.checks import health
from swarmkit.defaults import ROLL_BROKER_TIMEOUT
from swarmkit.errors import BrokerError, OperationError, SpecError, SwarmkitError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, TaskStatus
from swarmkit.hosts.session import Session
from swarmkit.images import image, shipping
from swarmkit.kafka import quorum, releases
from swarmkit.ops import controllers, roll
from swarmkit.ops.roll import RollOptions, RollReport
from swarmkit.stack.deployed import broker_id_of, host_of
from swarmkit.stack.kafka_settings import KafkaRole
from swarmkit.swarm.view import active_manager, engine_states

READ_TIMEOUT = 15.0
SETTLE_S = 90.0  # before refusing partitions out of sync: a controller's restart shrinks ISRs for a while
FINALIZE_TIMEOUT = 60.0  # the controller writes the new levels to the metadata log
RESUME = "run the same upgrade again to resume"


@dataclass(frozen=True)
class UpgradeOptions:
    version: str = ""  # the release to run; "" with finalize_only
    stack_name: str = "kafka"
    finalize: bool = True  # False (--no-finalize): stop before raising the feature levels
    finalize_only: bool = False  # --finalize alone: raise the levels of the release every node runs
    external_port: int = 9094
    timeout: float = ROLL_BROKER_TIMEOUT  # per node: back and caught up


@dataclass(frozen=True)
class NodeVersion:
    role: KafkaRole
    name: str  # controller-1, or the broker's host
    node_id: int
    version: str  # "" when its task does not run (or its image names no version)
    image: str = ""


@dataclass(frozen=True)
class ClusterVersions:
    """Each node's Kafka release (from the image its running task runs) and the cluster's finalized levels."""

    nodes: tuple[NodeVersion, ...]
    finalized: dict[str, int]
    leader: int = -1  # the active controller

    @property
    def metadata_level(self) -> int:
        return self.finalized.get(releases.METADATA_VERSION, 0)

    @property
    def versions(self) -> tuple[str, ...]:
        return tuple(sorted({n.version for n in self.nodes if n.version}, key=releases.version_key))

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodes": [asdict(n) for n in self.nodes],
            "finalized": dict(self.finalized),
            "metadata_version": releases.metadata_name(self.metadata_level),
        }


@dataclass(frozen=True)
class UpgradeReport:
    stack: str
    target: str
    image: str
    before: tuple[str, ...]  # the releases the nodes ran
    controllers: tuple[str, ...] = ()  # controllers moved, in order
    brokers: RollReport | None = None
    finalized: dict[str, tuple[int, int]] = field(default_factory=dict)  # feature: (before, after)
    total_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.brokers is None or self.brokers.ok

    def error(self) -> SwarmkitError:
        assert self.brokers is not None
        error = self.brokers.error()
        return OperationError(f"{error.message}; the cluster serves with mixed versions", hint=f"{error.hint}; {RESUME}")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self) | {"ok": self.ok, "total_s": round(self.total_s, 2)}
        data["brokers"] = self.brokers.to_dict() if self.brokers else None
        return data


# --- pure ----------------------------------------------------------------------------------------


def check_target(current: ClusterVersions, target: str) -> None:
    """Every refusal that needs only the versions: an unknown release, a jump Kafka does not support, a level
    finalized beyond what the target runs (SpecError: exit 2, nothing changed)."""
    releases.release(target)
    for running in current.versions:
        releases.release(running)
        releases.check_jump(running, target)
    refused = releases.refusal(target, current.finalized)
    if refused:
        raise SpecError(
            f"Kafka {target}: {refused}; nothing was changed",
            hint="a finalized level cannot be lowered: the downgrade window closed with the finalize",
        )


def is_downgrade(current: ClusterVersions, target: str) -> bool:
    return any(releases.version_key(v) > releases.version_key(target) for v in current.versions)


def order(current: ClusterVersions, target: str) -> list[NodeVersion]:
    """The nodes still to move, in turn: controllers (followers first, the active one last), then brokers; the
    other way round for a downgrade."""
    pending = [n for n in current.nodes if n.version != target]
    voters = sorted(
        (n for n in pending if n.role == KafkaRole.CONTROLLER), key=lambda n: (n.node_id == current.leader, n.node_id)
    )
    brokers = sorted((n for n in pending if n.role == KafkaRole.BROKER), key=lambda n: n.node_id)
    return [*brokers, *voters] if is_downgrade(current, target) else [*voters, *brokers]


def plan_lines(current: ClusterVersions, target: str, finalize: bool) -> list[str]:
    """What `plan` shows: ``upgrade 4.3.1 -> 4.4.0``, ``then finalize metadata.version A -> B``."""
    moving = order(current, target)
    lines = []
    if moving:
        word = "downgrade" if is_downgrade(current, target) else "upgrade"
        lines.append(f"{word} {', '.join(current.versions) or '?'} -> {target} ({len(moving)} node(s), one at a time)")
    levels = releases.to_finalize(target, current.finalized) if finalize else {}
    if releases.METADATA_VERSION in levels:
        old, new = current.metadata_level, levels[releases.METADATA_VERSION]
        text = f"finalize {releases.METADATA_VERSION} {releases.metadata_name(old)} -> {releases.metadata_name(new)}"
        lines.append(f"then {text}" if lines else text)
    return lines


def check_finalize(current: ClusterVersions, target: str) -> None:
    """Finalize only when every node reports the target release."""
    behind = [f"{n.name} ({n.version or 'not running'})" for n in current.nodes if n.version != target]
    if behind:
        raise OperationError(
            f"not finalized: {len(behind)} node(s) do not run Kafka {target}: {', '.join(behind)}",
            hint=f"finish the upgrade first: swarmkit upgrade -i INVENTORY --version {target}",
        )


# --- reading the cluster -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Cluster:
    manager: Engine
    targets: list[roll.BrokerTarget]
    view: roll.ClusterView
    quorum: controllers.QuorumView
    controllers: tuple[tuple[str, int, str], ...]  # (controller name, node id, service)


def _running_image(manager: Engine, service: str, container: str = "") -> str:
    state = dockerapi.service_state(manager, service)
    tasks = [t for t in (state.tasks if state else ()) if t.state == t.desired_state == TaskStatus.RUNNING]
    task = next((t for t in tasks if not container or t.container_id == container), None)
    return task.image if task else ""


def _cluster(session: Session, options: UpgradeOptions) -> _Cluster:
    manager = session.docker[active_manager(session.inventory, engine_states(session.inventory, session.docker))]
    roll.replicated_brokers(manager, options.stack_name)
    deployed = RollOptions(**_roll_options(options).__dict__ | {"nodes": _hosts_with_brokers(manager)})
    targets, view = roll.deployed_view(session, deployed)
    addresses = tuple((t.host.address, options.external_port) for t in targets)
    kept = health.kept_controllers(session.inventory, session.docker, options.stack_name).controllers
    named = tuple((c.service, c.node_id, f"{options.stack_name}_{c.service}") for c in kept)
    return _Cluster(manager, targets, view, controllers.QuorumView(manager, addresses, view.security), named)


def _hosts_with_brokers(manager: Engine) -> tuple[str, ...]:
    """The hosts given a broker id by a deploy: one just added to the inventory (a scale-out's `up`) is not read or
    checked here, and the deploy after gives it the image the others run."""
    return tuple(host_of(node) for node in dockerapi.swarm_nodes(manager) if broker_id_of(node) is not None)


def _read(cluster: _Cluster, options: UpgradeOptions) -> ClusterVersions:
    service = f"{options.stack_name}_broker"
    nodes = [
        NodeVersion(KafkaRole.CONTROLLER, name, node_id, "", _running_image(cluster.manager, svc))
        for name, node_id, svc in cluster.controllers
    ]
    nodes += [
        NodeVersion(KafkaRole.BROKER, t.host.name, t.broker_id, "", _running_image(cluster.manager, service, t.container_id))
        for t in cluster.targets
    ]
    host, port = cluster.quorum.addresses[0]
    try:
        features = quorum.describe_features(host, port, READ_TIMEOUT, cluster.view.security)
        leader = cluster.quorum.describe().leader
    except BrokerError as error:
        raise OperationError(f"the cluster cannot be read: {error.message}; nothing was changed", hint=error.hint) from None
    versioned = tuple(NodeVersion(n.role, n.name, n.node_id, releases.version_in(n.image), n.image) for n in nodes)
    return ClusterVersions(versioned, features.finalized, leader)


def read_versions(session: Session, stack_name: str, external_port: int) -> ClusterVersions:
    """Every node's Kafka release and the finalized feature levels (status, verify, plan)."""
    options = UpgradeOptions(stack_name=stack_name, external_port=external_port)
    return _read(_cluster(session, options), options)


def _check_healthy(session: Session, cluster: _Cluster, current: ClusterVersions, bound: float) -> None:
    """Every partition in sync, every broker registered, every voter in the quorum and caught up, looked at for up
    to ``bound`` s with progress: an upgrade run again right after an interrupted one (or a roll) finds ISRs still
    shrunk by those restarts.  Changes nothing."""

    def report(why: str) -> None:
        session.progress(0, 0, f"waiting for the cluster to be healthy: {why}")

    problem = waits.until_ready(lambda: _unhealthy(cluster, current), bound, report)
    if problem:
        raise SpecError(
            f"the cluster is not healthy for an upgrade: {problem}; nothing was changed",
            hint="an upgrade takes one node away at a time: wait until `swarmkit status` shows every partition in sync "
            "and every voter in the quorum",
        )


def _unhealthy(cluster: _Cluster, current: ClusterVersions) -> str:
    try:
        why = roll.not_ready_now(cluster.targets, cluster.view, READ_TIMEOUT)
        state = cluster.quorum.describe()
    except BrokerError as error:
        return f"the cluster cannot be read: {error.message}"
    voters = {v.node_id for v in state.voters}
    missing = [f"controller {n.node_id}" for n in current.nodes if n.role == KafkaRole.CONTROLLER and n.node_id not in voters]
    lagging = [
        f"controller {node_id}: {w}"
        for _, node_id, _ in cluster.controllers
        if (w := controllers.controller_not_ready(state, node_id, 0))
    ]
    return why or ", ".join(missing + lagging)


# --- the image -----------------------------------------------------------------------------------


def image_for(current: str, version: str) -> str:
    """The image of ``version`` beside the one running: the same repository with the version as its tag.  A
    registry's swarmkit/kafka keeps only the version (publishing adds the build's digest)."""
    name, _, _ = current.rpartition(":") if ":" in current.rsplit("/", 1)[-1] else (current, "", "")
    return f"{name}:{version}"


def _is_own(reference: str) -> bool:
    return reference.rpartition(":")[0].endswith(image.KAFKA_REPOSITORY)


def provide_image(session: Session, current: str, version: str) -> str:
    """The image every node will run, on every node (or in the registry they pull from); refused before anything
    changes when a node cannot get it."""
    wanted = image_for(current, version)
    try:
        if _is_own(wanted):
            return _provide_own(session, wanted, version)
        fan_out(lambda host: dockerapi.ensure_image(session.docker[host], wanted), session.inventory.hosts)
    except SwarmkitError as error:
        raise SpecError(f"{error.message}; nothing was changed", hint=error.hint) from None
    return wanted


def _provide_own(session: Session, wanted: str, version: str) -> str:
    """swarmkit's own image of ``version``: built and pushed to the registry the running one came from, or shipped
    from this machine to every host."""
    registry, _, path = wanted.partition("/")
    if path.startswith(image.KAFKA_REPOSITORY) and (":" in registry or "." in registry):
        builder = session.docker[session.inventory.hosts[0]]
        return image.publish(builder, image.kafka_recipe(version), registry)
    tag = image.kafka_tag(version)
    if session.local is None:
        raise SpecError(f"{tag} must be built on this machine", hint="run swarmkit where Docker runs (its local engine)")
    shipping.push_image(session.inventory, session.docker, session.local, tag)
    return tag


# --- changing the cluster ------------------------------------------------------------------------


def upgrade(session: Session, options: UpgradeOptions) -> UpgradeReport:
    """Move every node to ``options.version`` (controllers, then brokers), then finalize unless told not to."""
    started = time.monotonic()
    cluster = _cluster(session, options)
    current = _read(cluster, options)
    target = options.version or (current.versions[-1] if current.versions else "")
    check_target(current, target)
    pending = order(current, target)
    if pending:
        _check_healthy(session, cluster, current, SETTLE_S)
    running = next((n.image for n in current.nodes if n.image), "")
    new_image = provide_image(session, running, target) if pending else running
    say = session.progress
    say(0, len(pending), f"Kafka {', '.join(current.versions)} -> {target}: {len(pending)} node(s) to move, image {new_image}")
    moved, brokers = _move(session, cluster, options, pending, new_image)
    report = UpgradeReport(options.stack_name, target, new_image, current.versions, moved, brokers)
    if report.ok and pending:
        _end_in_sync(session, options, f"every node runs Kafka {target}")
    if report.ok and (options.finalize or options.finalize_only):
        report = _with_finalize(session, report, cluster, options, target)
    return _done(report, started)


def _done(report: UpgradeReport, started: float) -> UpgradeReport:
    return UpgradeReport(**{**report.__dict__, "total_s": time.monotonic() - started})


def _move(
    session: Session, cluster: _Cluster, options: UpgradeOptions, pending: Sequence[NodeVersion], new_image: str
) -> tuple[tuple[str, ...], RollReport | None]:
    """Controllers and brokers in the order given; the brokers all in one roll where they fall in it."""
    moved: list[str] = []
    brokers: RollReport | None = None
    services = {name: service for name, _, service in cluster.controllers}
    for index, node in enumerate(pending):
        if node.role == KafkaRole.CONTROLLER:
            report = functools.partial(_say, session, index, len(pending), node.name)
            report(f"controller {node.node_id}: {node.version or '?'} -> {new_image}")

            def change(service: str = services[node.name]) -> None:
                dockerapi.update_service(cluster.manager, service, image=new_image)

            controllers.restart(cluster.quorum, services[node.name], node.node_id, change, options.timeout, report, RESUME)
            moved.append(node.name)
        elif brokers is None:
            brokers = _roll_brokers(session, options, new_image, moved)
            if not brokers.ok:
                break
    return tuple(moved), brokers


def _roll_brokers(session: Session, options: UpgradeOptions, new_image: str, moved: Sequence[str]) -> RollReport:
    """The brokers' roll, given time to find the cluster in sync (the controllers' restarts leave ISRs shrunk for a
    while); when it refuses after controllers were moved, the error says they were."""
    changes = {"image": new_image, "resume": True, "settle": options.timeout}
    try:
        return roll.roll(session, RollOptions(**_roll_options(options).__dict__ | changes))
    except OperationError as error:
        if not moved:
            raise
        raise OperationError(
            f"{', '.join(moved)} moved to {new_image}, but the brokers' roll did not start: {error.message}", hint=RESUME
        ) from None


def _end_in_sync(session: Session, options: UpgradeOptions, done: str) -> None:
    """Wait (up to ``options.timeout``, with progress) until every partition is in sync again: a controller's
    restart leaves ISRs shrunk until the quorum has its leader back, and the next upgrade, roll or finalize would
    refuse that."""
    why = roll.wait_in_sync(session, _roll_options(options), options.timeout)
    if why:
        raise OperationError(f"{done}, but the cluster is not in sync after {options.timeout:g} s: {why}", hint=RESUME)


def _say(session: Session, index: int, total: int, name: str, message: str) -> None:
    session.progress(index, total, f"{name}: {message}")


def _roll_options(options: UpgradeOptions) -> RollOptions:
    return RollOptions(stack_name=options.stack_name, external_port=options.external_port, broker_timeout=options.timeout)


def _with_finalize(
    session: Session, report: UpgradeReport, cluster: _Cluster, options: UpgradeOptions, target: str
) -> UpgradeReport:
    """Raise the release's feature levels once every node runs it and the cluster is in sync again."""
    cluster = _cluster(session, options)  # the brokers' containers changed
    current = _read(cluster, options)
    check_finalize(current, target)
    levels = releases.to_finalize(target, current.finalized)
    if not levels:
        return report
    _check_healthy(session, cluster, current, options.timeout)
    shown = ", ".join(f"{name} {current.finalized.get(name, 0)} -> {level}" for name, level in levels.items())
    session.progress(1, 1, f"finalize: {shown}")
    host, port = cluster.quorum.addresses[0]
    quorum.update_features(host, port, levels, FINALIZE_TIMEOUT, cluster.view.security)
    after = _finalized_seen(session, cluster, levels)
    finalized = {name: (current.finalized.get(name, 0), after.get(name, 0)) for name in levels}
    return UpgradeReport(**{**report.__dict__, "finalized": finalized})


def _finalized_seen(session: Session, cluster: _Cluster, levels: dict[str, int]) -> dict[str, int]:
    """The finalized levels once a broker shows them: the controller answers UpdateFeatures when the levels are in
    its metadata log, a broker serves them only after it has replayed that record (seconds after, on a busy host)."""
    host, port = cluster.quorum.addresses[0]
    seen: dict[str, int] = {}

    def behind() -> str:
        try:
            seen.update(quorum.describe_features(host, port, READ_TIMEOUT, cluster.view.security).finalized)
        except BrokerError as error:
            return error.message
        return ", ".join(f"{name} {seen.get(name, 0)} of {level}" for name, level in levels.items() if seen.get(name, 0) < level)

    def report(why: str) -> None:
        session.progress(1, 1, f"finalize: waiting for {host}:{port} to show it ({why})")

    waits.until_ready(behind, FINALIZE_TIMEOUT, report)
    return seen


# --- the declared state (plan, up) -----------------------------------------------------------------


def declared_lines(session: Session, stack_name: str, external_port: int, version: str) -> list[str]:
    """What `plan` shows for the inventory's ``stack.kafka_version`` on a deployed cluster ([] when it runs it,
    finalized); a release it cannot move to is refused here already (SpecError)."""
    current = read_versions(session, stack_name, external_port)
    check_target(current, version)
    return plan_lines(current, version, finalize=True)


def apply_declared(session: Session, stack_name: str, external_port: int, version: str) -> str:
    """`up` with ``stack.kafka_version`` on a deployed cluster: the same upgrade (and finalize) as `swarmkit
    upgrade --version`; the image every node then runs, for the deploy that follows to keep."""
    report = upgrade(session, UpgradeOptions(version=version, stack_name=stack_name, external_port=external_port))
    if not report.ok:
        raise report.error()
    return report.image
