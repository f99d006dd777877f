"""`swarmkit roll`: restart, upgrade or reconfigure the brokers one at a time, without losing a write.

Docker's own rolling update (``update_config``: one task at a time, stop-first, pause on
failure) paces itself by time: it starts the next broker ``delay`` seconds after the last one
runs, whether or not that broker has caught up. A health check cannot make it wait for "in sync"
either: in-sync is a property of the cluster, and a check that turned every broker unhealthy while
one replica lags would have swarm restart them all. So swarmkit drives the roll itself and waits,
before each next broker, until the last one is back on the present spec, answers on its node's
port, is registered with the controllers, and no partition is under-replicated or offline:

- a plain restart stops each broker's container (SIGTERM: a controlled shutdown that moves its
  leaderships first) and swarm starts it again with the same spec, id and data volume;
- a new image or setting changes the service spec with the update delay raised to a day, so that
  swarm's updater replaces one broker and then holds; swarmkit waits for that one, then stops the
  others in turn (swarm restarts each from the new spec), and restores the delay at the end.

A broker that does not come back in time stops the roll there: the brokers not rolled yet keep
serving (with a new spec, swarm's updater stays held), and the report says which one failed.
Controllers are never touched. Validation is pure; nothing changes before the cluster is healthy.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field

from swarmkit import names, waits
from swarmkit.defaults import ROLL_BROKER_TIMEOUT
from swarmkit.errors import BrokerError, OperationError, SpecError, SwarmkitError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, SecretChange, ServiceState, TaskStatus
from swarmkit.hosts.dockerapi.stacks import STACK_LABEL
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.kafka.admin import PartitionState
from swarmkit.ops import startup
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity, SecretFile
from swarmkit.stack.compose import BROKER_UPDATE_DELAY_S, kafka_env, secret_change, swarm_escape
from swarmkit.stack.deployed import ROLLED_LABEL, DeployedStack, broker_id_of, broker_service
from swarmkit.stack.engines import engine_for
from swarmkit.stack.engines.apache import BROKER_DEFAULTS
from swarmkit.swarm.view import active_manager, engine_states, node_for
from swarmkit.waits import Progress

HOLD_DELAY_NS = 24 * 3600 * 10**9  # swarm's updater replaces one broker, then waits this long
STOP_GRACE_S = 60  # the stack's stop_grace_period: time for a controlled shutdown
PROBE_TIMEOUT = 3.0  # each poll while waiting for a broker
CHECK_TIMEOUT = 15.0  # the one read before anything changes: a TLS and SCRAM login takes seconds on a busy machine
OWNED_ENV = frozenset(
    {"KAFKA_NODE_ID", "KAFKA_BROKER_ID", "KAFKA_ADVERTISED_LISTENERS", "KAFKA_BROKER_RACK"}
)  # the entrypoint sets them
ELECTION_WAIT_S = 30.0  # until the metadata shows the elected leaders


@dataclass(frozen=True)
class RollOptions:
    stack_name: str = "kafka"
    image: str | None = None
    settings: tuple[tuple[str, str], ...] = ()  # Kafka properties, e.g. ("log.retention.hours", "48")
    nodes: tuple[str, ...] = ()  # inventory hosts to restart (default all); only without image or settings
    external_port: int = 9094
    broker_timeout: float = ROLL_BROKER_TIMEOUT  # per broker: back, registered and in sync
    secrets: tuple[SecretFile, ...] = ()  # the brokers' secrets as they should be (certificates: certs rotate)
    resume: bool = False  # with a spec change: brokers already on the new spec are not restarted again (upgrade)
    settle: float = 0.0  # seconds the cluster may take to be in sync before the roll refuses (after an operation's restarts)

    @property
    def changes_spec(self) -> bool:
        return bool(self.image or self.settings or self.secrets)


@dataclass(frozen=True)
class BrokerRoll:
    node: str
    broker_id: int
    old_container: str
    new_container: str = ""
    seconds: float = 0.0
    ok: bool = False
    detail: str = ""


@dataclass(frozen=True)
class RollReport:
    stack: str
    image: str
    env: dict[str, str]  # what the spec change added
    brokers: tuple[BrokerRoll, ...]  # in the order they were rolled
    not_rolled: tuple[str, ...]  # nodes left as they were after a broker did not come back
    total_s: float = 0.0
    held: bool = False  # swarm's updater is still held (a spec change stopped half-way)
    hint: str = ""
    leaders_before: dict[int, int] = field(default_factory=dict)  # partitions each broker led before the roll
    leaders_after: dict[int, int] = field(default_factory=dict)  # ... after it and the preferred-leader election
    election: tuple[str, ...] = ()  # partitions whose preferred replica could not take the leadership back

    @property
    def ok(self) -> bool:
        return all(b.ok for b in self.brokers) and not self.not_rolled

    def to_dict(self) -> dict:
        return {**asdict(self), "ok": self.ok, "total_s": round(self.total_s, 2)}

    def error(self) -> OperationError:
        failed = next(b for b in self.brokers if not b.ok)
        rest = f"; not rolled: {', '.join(self.not_rolled)} (still serving)" if self.not_rolled else ""
        return OperationError(f"the broker on {failed.node} did not come back: {failed.detail}{rest}", hint=self.hint)


# --- pure ----------------------------------------------------------------------------------------


def parse_settings(pairs: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``key=value`` Kafka properties from the command line."""
    settings = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not names.PROPERTY_KEY.fullmatch(key.strip()):
            raise SpecError(
                f"--set {names.shown(pair)}: not a Kafka property setting",
                hint="write it as key=value, e.g. log.retention.hours=48",
            )
        settings.append((key.strip(), names.text(value, f"--set {key.strip()}")))
    return tuple(settings)


def check_image(image: str | None) -> None:
    if image is not None:
        names.image_ref(image)


def settings_env(settings: Sequence[tuple[str, str]], service_env: dict[str, str], rolled: set[str]) -> dict[str, str]:
    """The broker environment for ``settings``; a setting swarmkit owns (listeners, node id, quorum, replication
    defaults: everything the stack sets, except what an earlier roll set and the brokers' tunable defaults) is refused."""
    env = kafka_env(dict(settings))
    tunable = rolled | set(BROKER_DEFAULTS)
    owned = sorted(key for key in env if key in OWNED_ENV or (key in service_env and key not in tunable))
    if owned:
        names = ", ".join(key for key, _ in settings if next(iter(kafka_env({key: ""}))) in owned)
        raise SpecError(
            f"--set {names}: set by swarmkit's stack, not a roll setting",
            hint="listeners, node ids, the quorum and replication defaults follow swarmkit's own options (swarmkit up)",
        )
    return {key: swarm_escape(value) for key, value in env.items()}


def not_ready(broker_id: int, registered: Sequence[int], partitions: Sequence[PartitionState]) -> str:
    """Why the cluster is not ready for the next broker ("" when it is): the broker is not registered, or a
    partition is under-replicated or offline."""
    if broker_id not in registered:
        return f"broker {broker_id} is not registered with the controllers yet"
    lagging = [f"{p.topic}-{p.partition}" for p in partitions if p.under_replicated or p.offline]
    if lagging:
        more = f" and {len(lagging) - 3} more" if len(lagging) > 3 else ""
        return f"{len(lagging)} partition(s) not fully in sync: {', '.join(lagging[:3])}{more}"
    return ""


def leader_spread(partitions: Sequence[PartitionState]) -> dict[int, int]:
    """How many partitions each broker leads (every replica holder listed, 0 when it leads none)."""
    spread = dict.fromkeys(sorted({r for p in partitions for r in p.replicas}), 0)
    for partition in partitions:
        if partition.leader >= 0:
            spread[partition.leader] = spread.get(partition.leader, 0) + 1
    return spread


def not_preferred(partitions: Sequence[PartitionState]) -> list[tuple[str, int]]:
    """The partitions led by another replica than their first (preferred) one, whose preferred replica is in sync."""
    return [(p.topic, p.partition) for p in partitions if p.replicas and p.leader != p.replicas[0] and p.replicas[0] in p.isr]


# --- the cluster ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BrokerTarget:
    host: Host
    node_id: str
    broker_id: int
    container_id: str  # the container being replaced
    bootstrap: str  # this node's own client port

    def result(self, started: float, new_container: str, ok: bool = False, detail: str = "") -> BrokerRoll:
        seconds = time.monotonic() - started
        return BrokerRoll(self.host.name, self.broker_id, self.container_id[:12], new_container[:12], seconds, ok, detail)


@dataclass(frozen=True)
class ClusterView:
    """How the roll reads the cluster: every chosen node's client port, swarmkit's admin login by address."""

    bootstrap: str
    security: ClientSecurity | None


def _readiness(target: BrokerTarget, state: ServiceState, cluster: ClusterView) -> tuple[str, str]:
    """(new container id, why not ready yet or "")."""
    task = state.running_on(target.node_id)
    if task is None or task.container_id == target.container_id:
        newest = next(iter(state.tasks_on(target.node_id)), None)
        return "", f"its new task is not running yet ({startup.task_phase(newest)})"
    try:
        if admin.broker_metadata(target.bootstrap, PROBE_TIMEOUT, cluster.security).broker(target.broker_id) is None:
            return task.container_id, f"{target.bootstrap} does not list broker {target.broker_id} yet"
        registered, partitions = admin.partition_states(cluster.bootstrap, PROBE_TIMEOUT, cluster.security)
    except BrokerError as error:
        return task.container_id, error.message
    return task.container_id, not_ready(target.broker_id, registered, partitions)


def _wait_back(
    manager: Engine, service: str, target: BrokerTarget, cluster: ClusterView, timeout: float, report: Callable[[str], None]
) -> BrokerRoll:
    """Poll until the target's broker is back and the cluster in sync, or the timeout passes."""
    started, container = time.monotonic(), ""

    def look() -> BrokerRoll | waits.NotYet:
        nonlocal container
        state = dockerapi.service_state(manager, service)
        if state is None:
            raise OperationError(f"service {service} disappeared during the roll", hint="was the stack removed meanwhile?")
        container, why = _readiness(target, state, cluster)
        return waits.NotYet(why) if why else target.result(started, container, ok=True)

    found = waits.until(look, timeout, report=lambda why: report(f"{target.host.name}: {why}"))
    if isinstance(found, waits.NotYet):
        return target.result(started, container, detail=f"not ready after {timeout:g} s: {found.why}")
    return found


def _targets(
    inventory: Inventory, docker: DockerHosts, manager: Engine, state: ServiceState, options: RollOptions
) -> list[BrokerTarget]:
    """Each chosen host's broker as it runs now; a broker not running stops the roll before it starts."""
    engines = engine_states(inventory, docker)
    nodes = dockerapi.swarm_nodes(manager)
    chosen = [h for h in inventory.hosts if not options.nodes or h.name in options.nodes]
    targets = []
    for host in chosen:
        node = node_for(host, nodes, engines[host.name])
        broker_id = broker_id_of(node) if node else None
        running = [t for t in state.tasks if node and t.node_id == node.id and t.state == t.desired_state == TaskStatus.RUNNING]
        if isinstance(engines[host.name], SwarmkitError) or node is None or broker_id is None or not running:
            raise OperationError(
                f"the broker on {host.name} is not running: a roll needs every broker serving; nothing was changed",
                hint="see `swarmkit status -i INVENTORY`; bring it back (or `swarmkit up`) first",
            )
        bootstrap = f"{host.address}:{options.external_port}"
        targets.append(BrokerTarget(host, node.id, broker_id, running[0].container_id, bootstrap))
    return targets


def not_ready_now(targets: Sequence[BrokerTarget], cluster: ClusterView, timeout: float) -> str:
    """Why the brokers cannot be rolled now ("" when they can); BrokerError when the cluster cannot be read."""
    registered, partitions = admin.partition_states(cluster.bootstrap, timeout, cluster.security)
    return next((why for target in targets if (why := not_ready(target.broker_id, registered, partitions))), "")


def _check_ready(targets: Sequence[BrokerTarget], cluster: ClusterView, settle: float, progress: Progress) -> None:
    """Nothing is stopped unless every broker is registered and every partition in sync, looked at for up to
    ``settle`` s (0: once): an operation's own restarts just before the roll leave replicas catching up for a while,
    and a check that waited apart from this one could pass while this one does not."""
    why = waits.until_ready(lambda: _not_in_sync(targets, cluster), settle, _waiting_for_sync(progress))
    if why:
        raise OperationError(
            f"the cluster is not ready for a roll: {why}; nothing was changed",
            hint="a roll takes one replica away at a time: wait until `swarmkit status` shows every partition in sync",
        )


def _not_in_sync(targets: Sequence[BrokerTarget], cluster: ClusterView) -> str:
    try:
        return not_ready_now(targets, cluster, CHECK_TIMEOUT)
    except BrokerError as error:
        return f"the cluster cannot be read: {error.message}"


def _waiting_for_sync(progress: Progress) -> Callable[[str], None]:
    return lambda why: progress(0, 0, f"waiting for the cluster to be in sync: {why}")


def _pull(docker: DockerHosts, targets: Sequence[BrokerTarget], image: str) -> None:
    try:
        fan_out(lambda target: dockerapi.ensure_image(docker[target.host], image), targets)
    except SwarmkitError as error:
        raise OperationError(f"{error.message}; nothing was changed", hint=error.hint) from None


def _first_taken(manager: Engine, service: str, targets: list[BrokerTarget], timeout: float) -> BrokerTarget | None:
    """The broker swarm's updater replaces after a spec change (None: the spec did not change, or an interrupted
    roll left brokers on the present spec: the held updater replaces no other, the roll restarts them in turn)."""

    def look() -> BrokerTarget | None | waits.NotYet:
        state = dockerapi.service_state(manager, service)
        if state is None:
            raise OperationError(f"service {service} disappeared during the roll", hint="was the stack removed meanwhile?")
        old = {t.container_id: t for t in state.tasks if t.state == t.desired_state == TaskStatus.RUNNING}
        taken = [target for target in targets if target.container_id not in old]
        if taken:
            return taken[0]
        return None if any(task.current for task in old.values()) else waits.NotYet()

    def late(why: str) -> OperationError:
        return OperationError(
            f"swarm did not start replacing a broker within {timeout:g} s of the spec change",
            hint=f"see `docker service ps {service}`; the update delay is held at a day until a roll completes",
        )

    return waits.until(look, timeout, fail=late)


def validate(inventory: Inventory, options: RollOptions) -> None:
    """Every check that needs no engine."""
    check_image(options.image)
    settings_env(options.settings, {}, set())  # what swarmkit always sets (node id, listeners), refused unasked
    unknown = sorted(set(options.nodes) - {h.name for h in inventory.hosts})
    if unknown:
        raise SpecError(f"--node {', '.join(unknown)}: not in the inventory", hint="name inventory hosts")
    if options.nodes and options.changes_spec:
        raise SpecError(
            "--node with --image or --set: a new spec reaches every broker",
            hint="roll every broker (drop --node), or restart only the named ones (drop --image/--set)",
        )
    if options.broker_timeout <= 0:
        raise SpecError(f"--timeout {options.broker_timeout:g}", hint="give each broker a positive time, e.g. 300")


@dataclass(frozen=True)
class _SpecChange:
    env: dict[str, str]  # broker settings added
    labels: dict[str, str]  # the settings rolls have added so far
    restore_delay_ns: int  # the update delay to give back once every broker runs the new spec
    secrets: SecretChange | None  # secret mounts replaced


def _plan_change(manager: Engine, service: str, options: RollOptions, state: ServiceState) -> _SpecChange:
    """What the spec change will add; a setting swarmkit owns is refused here, before anything changes."""
    spec = dockerapi.service_spec(manager, service)
    if spec is None:
        raise OperationError(f"service {service} disappeared", hint="was the stack removed meanwhile?")
    rolled = {key for key in spec.labels.get(ROLLED_LABEL, "").split(",") if key}
    env = settings_env(options.settings, state.env, rolled)
    # a roll interrupted (or stopped) half-way left the delay held: the next one gives back the stack's own
    restore = spec.update_delay_ns if spec.update_delay_ns != HOLD_DELAY_NS else BROKER_UPDATE_DELAY_S * 10**9
    secrets = secret_change(options.stack_name, spec.secrets, options.secrets)
    return _SpecChange(env, {ROLLED_LABEL: ",".join(sorted(rolled | set(env)))}, restore, secrets)


def create_secrets(manager: Engine, stack: str, secrets: Sequence[SecretFile]) -> None:
    """The stack's secrets that do not exist yet, named and labelled as `docker stack deploy` makes them (a later
    deploy of the same content finds them)."""
    for secret in secrets:
        dockerapi.create_secret(manager, f"{stack}_{secret.name}", secret.content, {STACK_LABEL: stack})


def replicated_brokers(manager: Engine, stack: str) -> ServiceState:
    """The broker service, when its brokers form one replicated cluster: a roll waits for replicas to catch up."""
    service = broker_service(stack)
    state = dockerapi.service_state(manager, service)
    if state is None:
        raise OperationError(
            f"stack '{stack}' is not deployed (no service {service})", hint="deploy it with: swarmkit up -i INVENTORY"
        )
    engine = DeployedStack(stack, state).engine
    if not engine_for(engine).SHARED_CLUSTER:
        raise OperationError(
            f"stack '{stack}' runs {engine} brokers, each its own cluster with no replicas to wait for",
            hint="change them with `swarmkit up` (Docker's own rolling update); roll is for the apache engine",
        )
    return state


def _view(session: Session, manager: Engine, state: ServiceState, options: RollOptions) -> tuple[list[BrokerTarget], ClusterView]:
    """Each broker to roll, and how to read the cluster; OperationError unless every broker runs."""
    targets = _targets(session.inventory, session.docker, manager, state, options)
    login = pki.admin_by_address(session.inventory, options.stack_name, DeployedStack(options.stack_name, state).security)
    return targets, ClusterView(",".join(t.bootstrap for t in targets), login)


def _ready(
    session: Session, manager: Engine, state: ServiceState, options: RollOptions
) -> tuple[list[BrokerTarget], ClusterView]:
    """Each broker to roll, and how to read the cluster; OperationError unless every broker runs, is registered
    and every partition is in sync."""
    targets, cluster = _view(session, manager, state, options)
    _check_ready(targets, cluster, options.settle, session.progress)
    return targets, cluster


def deployed_view(session: Session, options: RollOptions) -> tuple[list[BrokerTarget], ClusterView]:
    manager = session.docker[active_manager(session.inventory, engine_states(session.inventory, session.docker))]
    return _view(session, manager, replicated_brokers(manager, options.stack_name), options)


def check_ready(session: Session, options: RollOptions) -> None:
    """What a roll checks before it changes anything, for an operation that changes something else first."""
    _check_ready(*deployed_view(session, options), options.settle, session.progress)


def wait_in_sync(session: Session, options: RollOptions, bound: float) -> str:
    """What a roll checks before it stops a broker, looked at again for up to ``bound`` s with progress: an
    operation's own restarts leave replicas catching up for a while.  Why the cluster is still not ready ("" when
    it is); OperationError when a broker is not running at all."""
    targets, cluster = deployed_view(session, options)
    return waits.until_ready(lambda: _not_in_sync(targets, cluster), bound, _waiting_for_sync(session.progress))


def roll(session: Session, options: RollOptions) -> RollReport:
    """Roll the brokers one at a time, each back and in sync before the next; stop at the first that is not."""
    started = time.monotonic()
    inventory, docker, progress = session.inventory, session.docker, session.progress
    validate(inventory, options)
    manager = docker[active_manager(inventory, engine_states(inventory, docker))]
    service = broker_service(options.stack_name)
    state = replicated_brokers(manager, options.stack_name)
    change = _plan_change(manager, service, options, state) if options.changes_spec else None
    targets, cluster = _ready(session, manager, state, options)
    before = _spread(cluster)
    if options.image:
        progress(0, len(targets), f"pulling {options.image} on every node")
        _pull(docker, targets, options.image)
    first = None
    if change:
        create_secrets(manager, options.stack_name, options.secrets if change.secrets else ())
        hold = HOLD_DELAY_NS
        dockerapi.update_service(
            manager,
            service,
            image=options.image,
            env=change.env,
            labels=change.labels,
            update_delay_ns=hold,
            secrets=change.secrets,
        )
        first = _first_taken(manager, service, targets, ROLL_BROKER_TIMEOUT)
    order = ([first] if first else []) + [t for t in targets if t is not first and not _skipped(manager, service, t, options)]
    results = _roll_each(docker, manager, service, order, first, cluster, options, progress)
    done = not order or (len(results) == len(order) and results[-1].ok)
    if change and done:
        dockerapi.update_service(manager, service, update_delay_ns=change.restore_delay_ns)
    after, refused = _elect(cluster, progress) if done else ({}, [])
    return RollReport(
        stack=options.stack_name,
        image=options.image or "",
        env=change.env if change else {},
        brokers=tuple(results),
        not_rolled=tuple(t.host.name for t in order[len(results) :]),
        total_s=time.monotonic() - started,
        held=options.changes_spec and not done,
        hint="" if done else _failure_hint(service, options),
        leaders_before=before,
        leaders_after=after,
        election=tuple(refused),
    )


def _skipped(manager: Engine, service: str, target: BrokerTarget, options: RollOptions) -> bool:
    """A resumed spec change leaves out the brokers whose running task already runs the new spec."""
    if not (options.resume and options.changes_spec):
        return False
    state = dockerapi.service_state(manager, service)
    return state is not None and state.running_on(target.node_id) is not None


def _spread(cluster: ClusterView) -> dict[int, int]:
    _, partitions = admin.partition_states(cluster.bootstrap, CHECK_TIMEOUT, cluster.security)
    return leader_spread(partitions)


def _elect(cluster: ClusterView, progress: Progress) -> tuple[dict[int, int], list[str]]:
    """Give each partition back to its preferred replica (a restarted broker leads nothing until then), and wait
    until the metadata shows it; the leader spread after, and the partitions that refused."""
    with admin.KafkaAdmin(cluster.bootstrap, cluster.security, CHECK_TIMEOUT) as kafka:  # one client, closed after
        return _elect_through(kafka, progress)


def _elect_through(kafka: admin.KafkaAdmin, progress: Progress) -> tuple[dict[int, int], list[str]]:
    try:
        _, partitions = kafka.partition_states()
        wanted = not_preferred(partitions)
        refused = kafka.elect_preferred_leaders(wanted, CHECK_TIMEOUT) if wanted else []
    except BrokerError as error:
        return {}, [f"no preferred-leader election: {error.message}"]
    progress(0, 0, f"preferred-leader election: {len(wanted)} partition(s) handed back to their preferred replica")

    def look() -> str:
        nonlocal partitions
        try:
            _, partitions = kafka.partition_states()
        except BrokerError as error:
            return error.message
        left = len(not_preferred(partitions)) - len(refused)
        return f"{left} partition(s) not led by their preferred replica yet" if left > 0 else ""

    waits.until_ready(look, ELECTION_WAIT_S, lambda why: progress(0, 0, why))
    return leader_spread(partitions), refused


def _roll_each(
    docker: DockerHosts,
    manager: Engine,
    service: str,
    order: list[BrokerTarget],
    first: BrokerTarget | None,
    cluster: ClusterView,
    options: RollOptions,
    progress: Progress,
) -> list[BrokerRoll]:
    results: list[BrokerRoll] = []
    for index, target in enumerate(order):
        report = functools.partial(progress, index, len(order))
        if target is not first:
            report(f"{target.host.name}: controlled shutdown of broker {target.broker_id}")
            dockerapi.stop_container(docker[target.host], target.container_id, STOP_GRACE_S)
        results.append(_wait_back(manager, service, target, cluster, options.broker_timeout, report))
        if not results[-1].ok:
            break
        report(f"{target.host.name}: broker {target.broker_id} back and in sync after {results[-1].seconds:.1f} s")
    return results


def _failure_hint(service: str, options: RollOptions) -> str:
    if not options.changes_spec:
        return f"see `docker service ps --no-trunc {service}` and its logs; fix the cause, then roll again"
    return (
        f"swarm's updater stays held (update delay a day), so no other broker takes the new spec; fix the cause and roll"
        f" again with the same options, or go back with `docker service rollback {service}`"
    )
