"""The wait of ``deploy`` (and ``up``): until each eligible node runs a task of the present spec whose external
port, asked from this machine, answers Kafka metadata advertising the host expected for that node.

A module of its own because it is the one long-running part of a deploy: it polls the swarm and the brokers,
reports each broker's phase as it changes (swarmkit.ops.startup reads the phases) and, when it gives up, says
per node why that broker does not serve.  Everything before it (validation, the swarm's view, identities,
``docker stack deploy``) and after it (topics, users) stays in swarmkit.ops.deploy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from swarmkit import waits
from swarmkit.errors import BrokerError, DeployError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import (
    FAILED_START,
    Availability,
    DockerHosts,
    Engine,
    NodeState,
    ServiceState,
    SwarmNode,
    TaskState,
)
from swarmkit.hosts.inventory import Host
from swarmkit.kafka.admin import BrokerInfo, ClusterMetadata, broker_metadata
from swarmkit.ops import startup
from swarmkit.security.settings import ClientSecurity
from swarmkit.waits import Progress

CRASH_LOOP = 3  # a node whose broker failed to start this often during one wait fails it at once
PROBE_TIMEOUT = 2.0
SECURE_PROBE_TIMEOUT = 20.0  # a TLS handshake and a SCRAM login on a starting broker of a loaded machine (9 s seen)
STOPPED_UPDATE = ("paused", "rollback_paused", "rollback_completed")


@dataclass(frozen=True)
class Member:
    """A swarm node of the deployment and its inventory host (one made up for a node joined by hand)."""

    host: Host
    node: SwarmNode
    via_swarm: bool = False  # a node joined by hand (`swarmkit join`): no engine of its own to reach

    @property
    def eligible(self) -> bool:
        return self.node.state == NodeState.READY and self.node.availability == Availability.ACTIVE


@dataclass
class Target:
    """One eligible node being waited on."""

    member: Member
    broker_id: int
    bootstrap: str  # where this machine asks for metadata
    expected: str | None  # the host:port it must advertise (None: cannot be known in advance)
    security: ClientSecurity | None = None  # how to connect (secure modes), host names unchecked at bootstrap
    task_id: str = ""  # the task verified to serve (empty until then)
    advertised: str = ""
    problem: str = ""  # why it is not verified yet
    phase: str = ""  # what its broker is doing, as last reported
    furthest: tuple[str, int] = ("", -1)  # (task id, rank of the furthest start marker its log showed)

    @property
    def name(self) -> str:
        return self.member.host.name


def _own_broker(metadata: ClusterMetadata, broker_id: int) -> BrokerInfo | None:
    """This node's broker in the metadata: by id (shared cluster) or the only one (tansu lists itself)."""
    return metadata.broker(broker_id) or (metadata.brokers[0] if len(metadata.brokers) == 1 else None)


def _probe(target: Target) -> tuple[str, str]:
    """(advertised endpoint, problem) after asking this node's port for metadata."""
    try:
        metadata = broker_metadata(
            target.bootstrap, SECURE_PROBE_TIMEOUT if target.security else PROBE_TIMEOUT, security=target.security
        )
    except BrokerError as error:
        return "", f"{target.bootstrap} does not answer Kafka metadata yet ({error.message})"
    broker = _own_broker(metadata, target.broker_id)
    if target.expected is None:
        return (broker.endpoint if broker else ""), ""
    if broker is None or broker.endpoint != target.expected:
        shown = ", ".join(b.endpoint for b in metadata.brokers) or "no broker"
        return (broker.endpoint if broker else ""), f"{target.bootstrap} advertises {shown}, expected {target.expected}"
    return broker.endpoint, ""


def _why_not_running(state: ServiceState, target: Target, output_of: Callable[[TaskState], str]) -> str:
    """What `docker service ps` says about a node whose broker does not serve, with the last line
    the failed container printed (``output_of``): usually the entrypoint's own explanation."""
    tasks = state.tasks_on(target.member.node.id)
    if not tasks:
        return f"no broker task on this node (swarm node state {target.member.node.state}, availability {target.member.node.availability})"
    running = state.running_on(target.member.node.id)
    if running is not None:
        said = startup.last_lines(output_of(running)) if running.container_id else ""
        return f"task {running.name} runs, but {target.problem or 'it was not checked yet'}" + (
            f"; its log: {said}" if said else ""
        )
    latest = tasks[0]
    line = f"task {latest.name} is {latest.state}"
    if latest.desired_state != latest.state:
        line += f" (desired {latest.desired_state})"
    detail = latest.error or (latest.message if latest.message != latest.state else "")
    if detail:
        line += f": {detail}"
    failed = latest if latest.error else next((t for t in tasks[1:] if t.error), None)
    if failed is not None:
        if failed is not latest:
            line += f"; last failure: {failed.error}"
        said = startup.last_lines(output_of(failed), 1) if failed.container_id else ""
        if said:
            line += f" ({said})"
    return line


def until_serving(
    docker: DockerHosts,
    manager: Engine,
    service: str,
    targets: list[Target],
    watch: Watch,
    progress: Progress,
) -> None:
    """Wait until every target runs a task of the present spec that answers as expected, reporting each
    broker's phase as it changes; fail on a stall, the cap, a stopped update or a crash-looping broker."""
    baseline: dict[str, frozenset[str]] = {}
    seen: list[tuple[ServiceState, list[Target]]] = []  # the last look's state and the targets not serving then

    def look() -> bool | waits.NotYet:
        state = dockerapi.service_state(manager, service)
        if state is None:
            raise DeployError(f"service {service} disappeared while deploying", hint="was the stack removed meanwhile?")
        if not baseline:  # the failed starts before this wait are not counted
            baseline.update({t.name: _failed_tasks(state, t) for t in targets})
        changed = _look(docker, state, targets, watch)
        waiting = [t for t in targets if not t.task_id]
        for target in changed:
            progress(len(targets) - len(waiting), len(targets), f"{target.name}: {target.phase}")
        if not waiting:
            return True
        _check_not_stopped(state, service)
        looping = [t for t in waiting if len(_failed_tasks(state, t) - baseline[t.name]) >= CRASH_LOOP]
        if looping:
            raise _not_serving(docker, state, looping, f"{CRASH_LOOP} failed starts in a row", len(targets))
        seen[:] = [(state, waiting)]
        return waits.NotYet("; ".join(f"{t.name}: {t.phase}" for t in targets))  # a phase changed: progress

    waits.until(look, watch.limits, fail=lambda why: _not_serving(docker, *seen[-1], why, len(targets)))


@dataclass(frozen=True)
class Watch:
    """What a wait checks and how long it may take."""

    check_kafka: bool  # False: a running task is enough (an image that serves no Kafka)
    limits: waits.WaitLimits
    markers: tuple[tuple[str, str], ...] = ()  # the engine's start log markers


def _failed_tasks(state: ServiceState, target: Target) -> frozenset[str]:
    return frozenset(t.id for t in state.tasks_on(target.member.node.id) if t.current and t.state in FAILED_START)


def _check_not_stopped(state: ServiceState, service: str) -> None:
    if state.update_state in STOPPED_UPDATE:
        raise DeployError(
            f"the update of {service} stopped ({state.update_state}): {state.update_message}",
            hint=f"see `docker service ps --no-trunc {service}` on a manager, fix the cause, deploy again",
        )


def _look(docker: DockerHosts, state: ServiceState, targets: list[Target], watch: Watch) -> list[Target]:
    """Probe the targets whose present task runs and read each one's phase; returns those whose phase changed.
    Only a present task can answer: the state showed it running, so an old one had stopped (a host port has
    one holder)."""
    running = {t.name: task for t in targets if (task := state.running_on(t.member.node.id)) is not None}
    probed = [t for t in targets if t.name in running and running[t.name].id != t.task_id]
    answers = fan_out(_probe, probed) if watch.check_kafka else [("", "")] * len(probed)
    for target, (advertised, problem) in zip(probed, answers):
        target.advertised, target.problem = advertised, problem
        target.task_id = "" if problem else running[target.name].id
    for target in targets:
        if target.name not in running:
            target.task_id, target.problem = "", "no running task of the present spec yet"
    phases = fan_out(lambda t: _phase(docker, state, t, running.get(t.name), watch.markers), targets)
    changed = [t for t, phase in zip(targets, phases) if phase != t.phase]
    for target, phase in zip(targets, phases):
        target.phase = phase
    return changed


def _phase(
    docker: DockerHosts, state: ServiceState, target: Target, task: TaskState | None, markers: Sequence[tuple[str, str]]
) -> str:
    """What the target's broker is doing: serving, else what its log or its task says."""
    if target.task_id:
        return f"serving as {target.advertised}" if target.advertised else "running"
    if task is None:
        present = [t for t in state.tasks_on(target.member.node.id) if t.current]
        return startup.task_phase(present[0] if present else None)
    if not markers or target.member.via_swarm:
        return "container running, not answering yet"
    log = dockerapi.container_output(docker[target.member.host], task.container_id, startup.LOG_LINES)
    rank, logged = startup.log_phase(log, markers)
    if target.furthest[0] == task.id and rank < target.furthest[1]:
        return target.phase  # its marker scrolled out of the log's tail: the broker is still at least there
    target.furthest = (task.id, rank)
    return logged or "container running, not answering yet"


def _not_serving(docker: DockerHosts, state: ServiceState, waiting: list[Target], why: str, total: int) -> DeployError:
    def output_of(target: Target) -> Callable[[TaskState], str]:
        if target.member.via_swarm:
            return lambda task: ""  # its engine is out of reach; `docker service logs` on a manager has it
        return lambda task: dockerapi.container_output(docker[target.member.host], task.container_id, startup.LOG_LINES)

    lines = "; ".join(f"{t.name} ({t.phase}): {_why_not_running(state, t, output_of(t))}" for t in waiting)
    return DeployError(
        f"brokers not serving ({why}) on {len(waiting)} of {total} node(s): {lines}",
        hint=f"`docker service ps --no-trunc {state.name}` and `docker service logs {state.name}` on a manager",
    )
