"""`swarmkit replace-node DEAD NEW`: replace a manager that is gone for good, its controller included.

Everything that can refuse does so before anything changes: the cluster must keep a dynamic quorum
(``stack.controllers``; a static one cannot change its voters), DEAD must be a manager the swarm sees down
and no longer a manager in the inventory, NEW a manager in the inventory whose engine answers and which is
in the swarm, and the voters other than DEAD must hold a majority.  Then, each step re-checked so that a run
that stopped half way can simply be repeated: DEAD is demoted and removed from the swarm, NEW promoted; DEAD's
controller is removed from the voters (RemoveRaftVoter); a controller with a new id starts on NEW (its own
service, no other service changes), catches up as an observer, and is added as a voter (AddRaftVoter).  The
voter changes go through Kafka's ``kafka-metadata-quorum.sh`` inside a controller container (neither
librdkafka nor kafka-python sends them); the quorum is read through a broker (DescribeQuorum).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from swarmkit import names, waits
from swarmkit.checks import health
from swarmkit.errors import BrokerError, OperationError, SpecError, SwarmkitError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine, NodeRole, NodeState, SwarmNode
from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import quorum
from swarmkit.kafka.quorum import QuorumState, Replica
from swarmkit.ops.deploy import deploy_services
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.controllers import STATIC_REFUSAL, Controller, ControllerSet, majority
from swarmkit.stack.deployed import DeployedStack, host_of
from swarmkit.stack.engines.apache import DATA_DIR, internal_client_config
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.swarm import identity

QUORUM_TOOL = health.QUORUM_TOOL
TOOL_SECONDS = 60  # a quorum tool's JVM is killed after this long
POLL_S = 2.0
CAUGHT_UP_MS = 5_000  # an observer that fetched the leader's end this recently has caught up
READ_TIMEOUT = 15.0  # one DescribeQuorum through a broker (a busy controller right after a broker died is slow)
STEPS = 9  # what a whole replacement reports as progress (a repeated run skips what is done)


@dataclass(frozen=True)
class ReplaceOptions:
    stack_name: str = "kafka"
    external_port: int = 9094
    timeout: float = 300.0  # for each wait: the new controller caught up, then a voter


@dataclass(frozen=True)
class ReplacePlan:
    """What replace-node does (pure): DEAD's controller leaves the voters, NEW's joins them."""

    dead: Controller
    new: Controller
    after: ControllerSet


@dataclass(frozen=True)
class ReplaceResult:
    dead: str
    new: str
    removed_voter: int
    added_voter: int
    voters: tuple[int, ...]
    observers: tuple[int, ...]
    steps: tuple[tuple[str, float], ...]  # (what was done, seconds it took)
    total_s: float

    def to_dict(self) -> dict[str, object]:
        return {"ok": True, **asdict(self), "total_s": round(self.total_s, 2)}


# --- pure ----------------------------------------------------------------------------------------


def check_hosts(dead: str, new: str, managers: Sequence[str]) -> None:
    """What the command line and the inventory alone decide, before any engine is asked (bad input, exit 2)."""
    names.host_name(dead)
    names.host_name(new)
    if new not in managers:
        raise SpecError(f"{new} is not a manager in the inventory", hint=f"give {new} role: manager in the inventory first")
    if dead in managers:
        raise SpecError(f"{dead} is still a manager in the inventory", hint=f"remove {dead} from the inventory first")


def plan_replacement(kept: ControllerSet | None, dead: str, new: str, managers: Sequence[str]) -> ReplacePlan:
    """Which voter leaves and which joins; SpecError when the kept quorum or the inventory does not allow it."""
    if kept is None or not kept.dynamic:
        raise SpecError(
            f"{STATIC_REFUSAL}: the cluster's controller voters are fixed (controller.quorum.voters)",
            hint="clusters created by this swarmkit version have a dynamic quorum; this one keeps its managers",
        )
    check_hosts(dead, new, managers)
    leaving = kept.on(dead)
    if leaving is None:
        raise SpecError(
            f"{dead} runs no controller of this stack (controllers: {', '.join(kept.hosts)})",
            hint="name the manager that is gone for good",
        )
    if kept.on(new) is not None:
        raise SpecError(f"{new} runs a controller already", hint="choose a host without a controller")
    after = kept.replaced(dead, new)
    joining = after.on(new)
    assert joining is not None
    return ReplacePlan(leaving, joining, after)


def _leader_clock(state: QuorumState) -> int:
    """The leader's time when it answered: its own entry is always caught up now.  Ages are measured against it,
    not against this machine's clock, which may differ from the servers' by more than the limits."""
    return max((r.last_caught_up_ms for r in (*state.voters, *state.observers)), default=-1)


def _recent(replica: Replica, state: QuorumState, limit_ms: int) -> bool:
    return replica.last_caught_up_ms > 0 and _leader_clock(state) - replica.last_caught_up_ms <= limit_ms


def check_majority(state: QuorumState, leaving: int) -> None:
    """The voters other than ``leaving`` must hold a majority of the voter set as it will be after the removal:
    each followed the leader within the lag limit (the leader itself counts)."""
    if state.leader < 0:
        raise OperationError("the controller quorum has no leader: nothing can change its voters", hint="see `swarmkit status`")
    staying = [v for v in state.voters if v.node_id != leaving]
    alive = [v for v in staying if v.node_id == state.leader or _recent(v, state, health.LAG_LIMIT_MS)]
    if len(alive) < majority(len(staying)):
        raise OperationError(
            f"only {len(alive)} of the {len(staying)} other voters follow the leader; removing controller {leaving} "
            f"needs {majority(len(staying))}",
            hint="bring the other controllers back first (see `swarmkit status`); nothing was changed",
        )


def caught_up(state: QuorumState, node_id: int) -> bool:
    """Whether ``node_id`` fetched up to the leader's log end recently (as an observer or a voter)."""
    member = next((r for r in (*state.voters, *state.observers) if r.node_id == node_id), None)
    return member is not None and _recent(member, state, CAUGHT_UP_MS)


def _tool(listeners: ListenerPlan, command_config: str | None) -> str:
    """Kafka's quorum tool asking the controller in this container, its JVM killed after TOOL_SECONDS."""
    listener = listeners.controller_listener
    assert listener is not None, "the apache engine always plans a controller listener"
    config = f" --command-config {command_config}" if command_config else ""
    return f"timeout -s KILL {TOOL_SECONDS} {QUORUM_TOOL}{config} --bootstrap-controller localhost:{listener.port}"


def remove_controller_script(voter: Replica, listeners: ListenerPlan, command_config: str | None) -> str:
    """RemoveRaftVoter for a voter, by its id and directory id, from inside a controller that stays."""
    return f"{_tool(listeners, command_config)} remove-controller --controller-id {voter.node_id} --controller-directory-id {shlex.quote(voter.directory_id)}"


def add_controller_script(controller: Controller, listeners: ListenerPlan, command_config: str | None) -> str:
    """AddRaftVoter from inside the new controller: the tool reads the controller's id, its directory id (from its
    data directory) and its endpoint (its service name) from a configuration written here, which also holds
    the client settings of ``command_config`` (TLS)."""
    listener = listeners.controller_listener
    assert listener is not None and listeners.controller
    lines = [
        "process.roles=controller",
        f"node.id={controller.node_id}",
        f"log.dirs={DATA_DIR}",
        f"controller.listener.names={listeners.controller}",
        f"listeners={listeners.controller}://{controller.service}:{listener.port}",
    ]
    extra = f' && cat {shlex.quote(command_config)} >>"$config"' if command_config else ""
    tool = _tool(listeners, '"$config"')
    return (
        f"config=$(mktemp) && printf '%s\\n' {' '.join(shlex.quote(line) for line in lines)} >\"$config\"{extra}"
        f' && {tool} add-controller; status=$?; rm -f "$config"; exit $status'
    )


# --- on the cluster --------------------------------------------------------------------------------


@dataclass
class _Run:
    session: Session
    options: ReplaceOptions
    security: ClientSecurity | None
    listeners: ListenerPlan
    steps: list[tuple[str, float]]

    @property
    def inventory(self) -> Inventory:
        return self.session.inventory

    @property
    def manager(self) -> Engine:
        return self.session.docker[self.inventory.first_manager]

    def step(self, what: str, action: Callable[[], object]) -> None:
        self.session.progress(len(self.steps), STEPS, what)
        started = time.monotonic()
        action()
        self.steps.append((what, round(time.monotonic() - started, 1)))

    def describe(self) -> QuorumState:
        failure: SwarmkitError = BrokerError("no broker to ask")
        for host in self.inventory.hosts:
            try:
                return quorum.describe_quorum(host.address, self.options.external_port, READ_TIMEOUT, self.security)
            except BrokerError as error:
                failure = error
        raise failure

    def wait_for(self, what: str, done: Callable[[QuorumState], bool]) -> QuorumState:
        """Poll the quorum until ``done``; OperationError after the timeout, naming the last state seen."""
        deadline, last = waits.Deadline(self.options.timeout, first=POLL_S), "not read yet"
        while True:
            try:
                state = self.describe()
                if done(state):
                    return state
                last = f"voters {[v.node_id for v in state.voters]}, observers {[o.node_id for o in state.observers]}"
            except BrokerError as error:
                last = error.message
            if deadline.passed():
                raise OperationError(
                    f"{what}: not within {self.options.timeout:g}s (last seen: {last})",
                    hint="see `swarmkit status` and the controller's log; replace-node can be run again",
                )
            deadline.sleep()

    def tool_in(self, controller: Controller, script: str) -> str:
        engine = self.session.docker[self.inventory.host(controller.host)]
        service = f"{self.options.stack_name}_{controller.service}"
        found = dockerapi.service_container(engine, service)
        if found is None or found[1] != "running":
            raise OperationError(f"no running container of {service} on {controller.host}", hint="see `swarmkit status`")
        return dockerapi.exec_in_container(engine, found[0], ["/bin/sh", "-c", script])


def _nodes(manager: Engine, name: str) -> tuple[list[SwarmNode], SwarmNode | None]:
    nodes = dockerapi.swarm_nodes(manager)
    return nodes, next((n for n in nodes if host_of(n) == name or n.hostname == name), None)


def _check_swarm(run: _Run, dead: str, new: str) -> tuple[SwarmNode | None, SwarmNode]:
    _, dead_node = _nodes(run.manager, dead)
    if dead_node is not None and dead_node.state != NodeState.DOWN:
        raise SpecError(
            f"{dead} is {dead_node.state} in the swarm: replace-node is for a manager that is gone for good",
            hint="stop it first, or keep it: `swarmkit status` shows whether its controller follows",
        )
    dockerapi.engine_info(run.session.docker[run.inventory.host(new)])  # EngineError when NEW does not answer
    _, new_node = _nodes(run.manager, new)
    if new_node is None or new_node.state != NodeState.READY:
        raise SpecError(
            f"{new} is not a ready node of this swarm",
            hint=f"add {new} as a worker first (`swarmkit up` while every host answers, or `swarmkit join`)",
        )
    return dead_node, new_node


def replace_node(session: Session, dead: str, new: str, options: ReplaceOptions = ReplaceOptions()) -> ReplaceResult:
    started = time.monotonic()
    inventory = session.inventory
    check_hosts(dead, new, [h.name for h in inventory.managers])
    manager = session.docker[inventory.first_manager]
    deployed = DeployedStack.require(manager, options.stack_name)
    nodes, _ = _nodes(manager, dead)
    kept = identity.kept_controllers(nodes, options.stack_name)
    replacing = plan_replacement(kept, dead, new, [h.name for h in inventory.managers])
    listeners = ListenerPlan().with_security(deployed.security)
    security = pki.admin_by_address(inventory, options.stack_name, deployed.security)
    run = _Run(session, options, security, listeners, [])
    dead_node, new_node = _check_swarm(run, dead, new)
    state = run.wait_for("reading the controller quorum", lambda s: True)
    if any(v.node_id == replacing.dead.node_id for v in state.voters):
        check_majority(state, replacing.dead.node_id)
    _swarm_steps(run, dead_node, new_node)
    _quorum_steps(run, replacing, state)
    final = run.wait_for("reading the controller quorum", lambda s: True)
    return ReplaceResult(
        dead,
        new,
        replacing.dead.node_id,
        replacing.new.node_id,
        tuple(v.node_id for v in final.voters),
        tuple(o.node_id for o in final.observers),
        tuple(run.steps),
        time.monotonic() - started,
    )


def _swarm_steps(run: _Run, dead_node: SwarmNode | None, new_node: SwarmNode) -> None:
    if dead_node is not None:
        if dead_node.role == NodeRole.MANAGER:
            run.step(
                f"demoting {dead_node.hostname} (down) in the swarm",
                lambda: dockerapi.set_node_role(run.manager, dead_node.id, NodeRole.WORKER),
            )
        run.step(f"removing {dead_node.hostname} from the swarm", lambda: dockerapi.remove_node(run.manager, dead_node.id))
    if new_node.role != NodeRole.MANAGER:
        run.step(
            f"promoting {new_node.hostname} to manager",
            lambda: dockerapi.set_node_role(run.manager, new_node.id, NodeRole.MANAGER),
        )


def _quorum_steps(run: _Run, replacing: ReplacePlan, state: QuorumState) -> None:
    stack, dead, new = run.options.stack_name, replacing.dead, replacing.new
    command_config = internal_client_config().target if run.listeners.secure else None
    voter = next((v for v in state.voters if v.node_id == dead.node_id), None)
    if voter is not None:
        staying = next(c for c in replacing.after.controllers if c != new)
        script = remove_controller_script(voter, run.listeners, command_config)
        run.step(f"removing controller {dead.node_id} ({dead.host}) from the voters", lambda: run.tool_in(staying, script))
    run.step(f"removing service {stack}_{dead.service}", lambda: _remove_service(run.manager, f"{stack}_{dead.service}"))
    deploy_plan = plan(run.inventory, DeployOptions(stack_name=stack, security=run.listeners.security))
    run.step(
        f"starting controller {new.node_id} on {new.host}",
        lambda: deploy_services(deploy_plan, run.session, replacing.after, [new.service]),
    )
    if not any(v.node_id == new.node_id for v in state.voters):
        run.step(
            f"waiting until controller {new.node_id} has caught up as an observer",
            lambda: run.wait_for(f"controller {new.node_id} catching up", lambda s: caught_up(s, new.node_id)),
        )
        script = add_controller_script(new, run.listeners, command_config)
        run.step(f"adding controller {new.node_id} to the voters", lambda: run.tool_in(new, script))
    run.step(
        f"waiting until controller {new.node_id} is a voter",
        lambda: run.wait_for(
            f"controller {new.node_id} joining the voters", lambda s: any(v.node_id == new.node_id for v in s.voters)
        ),
    )
    nodes = dockerapi.swarm_nodes(run.manager)
    identity.keep_controllers(run.manager, nodes, stack, replacing.after)


def _remove_service(manager: Engine, service: str) -> None:
    if dockerapi.service_state(manager, service) is not None:
        dockerapi.remove_service(manager, service)
