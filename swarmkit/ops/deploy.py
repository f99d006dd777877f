"""Deploy the Kafka stack and wait until every node's broker really serves clients.

Order matters, so that bad input changes nothing and a redeploy restarts nothing:
1. validate everything that needs no engine (options, listeners, topic specs vs brokers);
2. read the swarm: every inventory host must be a member, no unknown node may be eligible for a
   broker, the apache cluster id kept on the managers must agree with the options;
3. render the stack (it never names a node, so it only changes when the options change);
4. allocate broker ids, copy the metrics agent's jar into each node's volume (apache; first, so that a
   broker task that finds its identity finds the agent too) and write each node's identity volume (only
   where the content differs, and only where the brokers read it: not for tansu advertising hostnames);
5. ``docker stack deploy`` (an unchanged stack leaves every task running);
6. wait until each eligible node runs a task of the present spec whose external port, asked from
   this machine, answers Kafka metadata advertising the host expected for that node (swarmkit.ops.converge);
7. ensure the topics: once for a shared cluster, on every broker when brokers share no storage.
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from swarmkit import waits
from swarmkit.errors import BrokerError, DeployError, EngineError, SpecError
from swarmkit.fanout import fan_out, fan_out_settled, in_background
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Availability, DockerHosts, Engine, NodeState, SwarmNode, SwarmState
from swarmkit.hosts.inventory import ZONE_LABEL, Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.images import shipping
from swarmkit.kafka.admin import TopicResult, ensure_topics, ensure_topics_on_each
from swarmkit.network.preflight import DEFAULT_MEMORY_PER_BROKER, GIB, PreflightReport, run_preflight
from swarmkit.ops import admin_login, declared, upgrade, users
from swarmkit.ops.controllers import QuorumView, redeploy, running_container
from swarmkit.ops.converge import Member, Target, Watch, until_serving
from swarmkit.ops.plan import DeployOptions, DeployPlan, stack_request
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack import metrics
from swarmkit.stack.compose import Advertise, StackRequest, expected_advertised_host
from swarmkit.stack.controllers import ControllerSet, check_manager_set
from swarmkit.stack.deployed import broker_id_of, host_of
from swarmkit.stack.engines import BrokerEngine
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.render import RenderedStack, image_of, render, render_services
from swarmkit.stack.topics import TopicSpec
from swarmkit.swarm import bootstrap as swarm
from swarmkit.swarm import identity
from swarmkit.swarm.bootstrap import SwarmResult
from swarmkit.waits import Progress

# A wait fails when no broker changed phase for a while (swarmkit.waits.StallClock), or at the cap: by
# default a generous time that grows with the nodes (a changed stack rolls one broker at a time).
BASE_CAP = 600.0
CAP_PER_NODE = 60.0
STOP_GRACE_S = 60  # a broker's controlled shutdown (the stack's stop_grace_period)
TOPIC_TIMEOUT = 30.0  # creating topics right after a start: a SCRAM login to a busy broker timed out at 10 s


@dataclass(frozen=True)
class NodeResult:
    host: str
    node_id: str
    hostname: str
    broker_id: int
    new_id: bool  # the id was allocated by this deploy
    identity: str  # written | replaced | unchanged | unused
    eligible: bool  # ready and active: the swarm runs a broker there
    task_id: str = ""
    advertised: str = ""  # host:port this node's broker advertises ("" when not asked)


@dataclass(frozen=True)
class DeployResult:
    stack: str
    engine: str
    image: str
    advertise: str
    cluster_id: str | None
    nodes: tuple[NodeResult, ...]
    topics: tuple[TopicResult, ...]
    deploy_s: float  # validation, identities and `docker stack deploy`
    converge_s: float  # from `docker stack deploy` to every broker answering
    total_s: float
    altered: tuple[str, ...] = ()  # changed live to what is declared: topic settings and partitions, users, grants

    @property
    def ok(self) -> bool:
        """False when a topic is missing or differs from its spec (the command must then fail)."""
        return all(topic.ok for topic in self.topics)

    @property
    def problems(self) -> list[str]:
        return [f"topic {t.name} on {t.bootstrap}: {t.status}: {t.detail}" for t in self.topics if not t.ok]

    def error(self) -> DeployError:
        """The one-line failure for a result that is not ``ok``."""
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        return DeployError(
            f"the brokers run, but {self.problems[0]}{more}",
            hint="swarmkit never alters an existing topic: change the spec, or alter/delete the topic by hand",
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "stack": self.stack,
            "engine": self.engine,
            "image": self.image,
            "advertise": self.advertise,
            "cluster_id": self.cluster_id,
            "nodes": [asdict(node) for node in self.nodes],
            "topics": [topic.to_dict() for topic in self.topics],
            "altered": list(self.altered),
            "problems": self.problems,
            "deploy_s": round(self.deploy_s, 2),
            "converge_s": round(self.converge_s, 2),
            "total_s": round(self.total_s, 2),
        }


# --- validation and rendering (no engine contacted) ----------------------------------------------


def _manager_nodes(inventory: Inventory, docker: DockerHosts) -> list[SwarmNode] | None:
    """The swarm's nodes as the first manager sees them, or None when it is in no swarm."""
    first = inventory.first_manager
    if dockerapi.engine_info(docker[first]).swarm_state != SwarmState.ACTIVE:
        return None
    return dockerapi.swarm_nodes(docker[first])


def _kept_cluster_id(inventory: Inventory, options: DeployOptions, docker: DockerHosts) -> str:
    """What ``render`` prints without ``--cluster-id``: the id the swarm keeps for the stack (read-only)."""
    given = "pass --cluster-id (22 characters of base64url)"
    try:
        nodes = _manager_nodes(inventory, docker)
    except EngineError as error:
        raise EngineError(
            f"the cluster id kept in the swarm cannot be read: {error.message}",
            hint=f"{given} to render without asking any engine, or start that engine",
        ) from None
    kept = identity.kept_cluster_id(nodes or (), options.stack_name)
    if not kept:
        raise SpecError(
            f"CLUSTER_ID: the swarm keeps no cluster id for stack '{options.stack_name}' yet",
            hint=f"{given}, or deploy once: swarmkit generates one and keeps it",
        )
    return kept


def render_for(plan: DeployPlan, session: Session) -> RenderedStack:
    """The stack ``deploy`` would deploy: its YAML text and the files its configs name.

    Pure, except for the apache engine without ``cluster_id``: the id kept in the swarm is read
    (read-only), so the printed stack is the deployed one."""
    return render(_request_from_swarm(plan, session))


def _request_from_swarm(plan: DeployPlan, session: Session, controllers: ControllerSet | None = None) -> StackRequest:
    """The request for what the swarm keeps (cluster id, controllers, certificates), read-only; ``controllers``
    instead of the kept ones."""
    inventory, options, docker = plan.inventory, plan.options, session.docker
    cluster_id = options.cluster_id or (_kept_cluster_id(inventory, options, docker) if plan.engine.KRAFT else None)
    request = stack_request(inventory, options, cluster_id, controllers)
    if plan.engine.KRAFT and not options.cluster_id and controllers is None:  # the swarm was read: its controllers
        request = replace(request, controllers=controllers_for(inventory, options, _manager_nodes(inventory, docker) or []))
    if options.listeners.secure:
        nodes = _manager_nodes(inventory, docker) or []
        labelled = [(broker_id, n) for n in nodes if (broker_id := broker_id_of(n)) is not None]
        addresses = {h.name: h.address for h in inventory.hosts}
        brokers = [(i, _advertised_names(options, n.hostname, addresses.get(host_of(n), n.address))) for i, n in labelled]
        request = replace(request, security=pki.material(pki.Pki(pki.store_dir(inventory, options.stack_name)), brokers))
    return request


def deploy_services(plan: DeployPlan, session: Session, controllers: ControllerSet, services: Sequence[str]) -> None:
    """Deploy these services of the stack with ``controllers``, leaving every other service as it runs."""
    request = _request_from_swarm(plan, session, controllers)
    with tempfile.TemporaryDirectory(prefix="swarmkit-stack-") as directory:
        stack = render_services(request, services).write(Path(directory), with_secrets=True)
        dockerapi.deploy_stack(session.docker[plan.inventory.first_manager], request.stack_name, stack)


def _advertised_names(options: DeployOptions, node_hostname: str, address: str) -> list[str]:
    """What a broker's certificate names: exactly the host it advertises to clients."""
    host = expected_advertised_host(options.advertise, node_hostname, address)
    return [host] if host else []


# --- the swarm's view ----------------------------------------------------------------------------


def _members(inventory: Inventory, docker: DockerHosts, known: SwarmResult | None = None) -> tuple[list[Member], list[SwarmNode]]:
    """Each inventory host's swarm node (inventory order), then every other node eligible for a broker
    (one joined by hand with `swarmkit join`: reached through the swarm only), and the swarm's node list;
    read from the engines unless ``known`` from the swarm step just before."""
    ids = dict(known.node_ids) if known else swarm.node_ids(inventory, docker=docker)
    missing = [host.name for host in inventory.hosts if host.name not in ids]
    if missing:
        raise DeployError(
            f"not in a swarm: {', '.join(missing)}",
            hint="run `swarmkit up` (or `swarmkit swarm up`) first; deploy changes no swarm membership",
        )
    nodes = list(known.nodes) if known else (_manager_nodes(inventory, docker) or [])
    by_id = {node.id: node for node in nodes}
    foreign = [name for name, node_id in ids.items() if node_id not in by_id]
    if foreign:
        raise DeployError(
            f"in another swarm than {inventory.first_manager.name}: {', '.join(foreign)}",
            hint="swarmkit never moves a host between swarms; see `swarmkit swarm up`",
        )
    inventoried = set(ids.values())
    joined = [
        Member(Host(n.hostname, "", n.address, n.role), n, via_swarm=True)
        for n in nodes
        if n.id not in inventoried and n.state == NodeState.READY and n.availability == Availability.ACTIVE
    ]
    return [Member(host, by_id[ids[host.name]]) for host in inventory.hosts] + joined, nodes


def _cluster_id(engine: BrokerEngine, options: DeployOptions, nodes: Sequence[SwarmNode]) -> str:
    """The kept id, else the given one, else a new one; a given id differing from the kept one is an error."""
    kept = identity.kept_cluster_id(nodes, options.stack_name)
    if kept and options.cluster_id and options.cluster_id != kept:
        raise DeployError(
            f"cluster id {options.cluster_id} differs from {kept}, the one stack '{options.stack_name}' was deployed with",
            hint="brokers refuse data formatted for another cluster id: drop --cluster-id to keep the current one",
        )
    return kept or options.cluster_id or engine.generate_cluster_id()


def controllers_for(inventory: Inventory, options: DeployOptions, nodes: Sequence[SwarmNode]) -> ControllerSet:
    """The controllers to deploy: the set the managers keep; a cluster deployed before sets were kept keeps its
    static voters (one per inventory manager, as rendered then); a new cluster gets a dynamic quorum.  An
    inventory whose managers differ from the kept set is refused (SpecError naming `replace-node`)."""
    managers = [host.name for host in inventory.managers]
    kept = identity.kept_controllers(nodes, options.stack_name)
    if kept is None:
        existing = identity.kept_cluster_id(nodes, options.stack_name) is not None
        return ControllerSet.static(managers) if existing else ControllerSet.first(managers)
    check_manager_set(kept, managers, inventory.path or "INVENTORY")
    return kept


def guard_controllers(plan: DeployPlan, session: Session) -> None:
    """``up`` refuses a changed manager set before its swarm step promotes or joins anyone; an engine that does
    not answer is left to preflight to name."""
    try:
        nodes = _manager_nodes(plan.inventory, session.docker)
    except EngineError:
        return
    if nodes:
        controllers_for(plan.inventory, plan.options, nodes)


# --- topics --------------------------------------------------------------------------------------


def _ensure_topics(
    engine: BrokerEngine, specs: Sequence[TopicSpec], targets: Sequence[Target]
) -> tuple[list[TopicResult], list[str]]:
    """Existing topics of a shared cluster first get their declared settings and partitions (live, no restart);
    then the missing ones are created. Returns the results and what was altered."""
    if not specs or not targets:
        return [], []
    try:
        security = targets[0].security
        if engine.SHARED_CLUSTER:
            altered = declared.reconcile(targets[0].bootstrap, specs, security, TOPIC_TIMEOUT)
            return ensure_topics(targets[0].bootstrap, specs, TOPIC_TIMEOUT, security), altered
        return ensure_topics_on_each([t.bootstrap for t in targets], specs, TOPIC_TIMEOUT, security), []
    except BrokerError as error:
        raise DeployError(f"creating topics: {error.message}", hint=error.hint) from None


def _ensure_declared(plan: DeployPlan, session: Session, targets: Sequence[Target], total: int) -> list[str]:
    """The declared users and their grants, then the declared client quotas (live, no broker restarted);
    returns what was done."""
    options, altered = plan.options, []
    if declared_users := plan.users:
        session.progress(total, total, f"ensuring users {', '.join(declared_users)}")
        altered += users.reconcile_users(session, options.stack_name, declared_users, options.listeners.external_listener.port)
    if plan.quotas is not None and targets:
        session.progress(total, total, "ensuring client quotas")
        try:
            altered += declared.reconcile_quotas(targets[0].bootstrap, plan.quotas, targets[0].security, TOPIC_TIMEOUT)
        except BrokerError as error:
            raise DeployError(f"setting client quotas: {error.message}", hint=error.hint) from None
    return altered


# --- deploy and up -------------------------------------------------------------------------------


def _deploy_stack(manager: Engine, name: str, stack: RenderedStack) -> None:
    """Deploy from a private directory holding stack.yml and its config files, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="swarmkit-stack-") as directory:
        dockerapi.deploy_stack(manager, name, stack.write(Path(directory), with_secrets=True))


def deploy(plan: DeployPlan, session: Session, swarm_result: SwarmResult | None = None) -> DeployResult:
    """Deploy the stack on an existing swarm, wait until every broker serves, ensure the topics.

    ``swarm_result``: what `swarm_up` just found and did (``up``), so the swarm is not read again."""
    started = time.monotonic()
    inventory, options, engine, docker, progress = plan.inventory, plan.options, plan.engine, session.docker, session.progress
    manager = docker[inventory.first_manager]
    members, nodes = _members(inventory, docker, swarm_result)
    cluster_kept = identity.kept_cluster_id(nodes, options.stack_name)
    cluster_id = _cluster_id(engine, options, nodes) if engine.KRAFT else None
    controllers = controllers_for(inventory, options, nodes) if engine.KRAFT else None
    request = stack_request(inventory, options, cluster_id, controllers)
    eligible = [m for m in members if m.eligible]
    total = len(eligible)
    image = image_of(request, engine)
    allocation = _allocate_ids(manager, request, members, nodes, progress)
    request, security = _secured(inventory, options, request, members, allocation)
    targets = _targets(options, eligible, allocation, security)
    limits = waits.WaitLimits(options.stall_timeout, options.timeout or BASE_CAP + CAP_PER_NODE * total)
    rollout = _Rollout(docker, request, targets, Watch(options.check_kafka, limits, engine.START_MARKERS))
    if metrics.AGENT_VOLUME in engine.volumes(request):  # before the identities: a broker task that can start has it
        progress(0, total, "copying the metrics agent to every node")
        _deliver_agent(docker, request, members)
    if engine.NEEDS_IDENTITY or options.advertise != Advertise.HOSTNAME:  # a hostname command may read it too
        progress(0, total, "writing node identities")
        identities = _write_identities(docker, request, image, members, allocation)
    else:  # the brokers never read it: writing it would only slow their start
        identities = _Identities(allocation, dict.fromkeys((m.node.id for m in members), identity.Outcome.UNUSED))
    restore_admin = admin_login.needed(manager, options.stack_name, options.listeners.sasl, cluster_kept)
    rollout.controllers_one_at_a_time(progress, options.stall_timeout)
    deployed = rollout.deploy_stack(progress)
    if restore_admin:
        admin_login.restore(docker, request, limits.stall, progress)
    rollout.restart_for_new_identity(identities, progress)
    rollout.converge(progress)
    converged = time.monotonic()
    if request.topics:
        progress(total, total, f"ensuring topics {', '.join(spec.name for spec in request.topics)}")
    topics, altered = _ensure_topics(engine, request.topics, targets)
    altered += _ensure_declared(plan, session, targets, total)
    return DeployResult(
        stack=options.stack_name,
        engine=request.engine,
        image=image,
        advertise=options.advertise,
        cluster_id=cluster_id,
        nodes=_node_results(members, identities, targets),
        topics=tuple(topics),
        deploy_s=deployed - started,
        converge_s=converged - deployed,
        total_s=time.monotonic() - started,
        altered=tuple(altered),
    )


@dataclass(frozen=True)
class _Identities:
    allocation: identity.IdAllocation
    outcomes: dict[str, identity.Outcome]  # by swarm node id


@dataclass(frozen=True)
class _Rollout:
    """The stack going live: deployed, then waited on until every target serves."""

    docker: DockerHosts
    request: StackRequest
    targets: list[Target]
    watch: Watch

    @property
    def manager(self) -> Engine:
        return self.docker[self.request.inventory.first_manager]

    def deploy_stack(self, progress: Progress) -> float:
        """`docker stack deploy`; returns when it returned (monotonic)."""
        progress(0, len(self.targets), f"deploying stack {self.request.stack_name}")
        _deploy_stack(self.manager, self.request.stack_name, render(self.request))
        return time.monotonic()

    def controllers_one_at_a_time(self, progress: Progress, timeout: float) -> None:
        """Each running controller whose spec the stack changes (another image, a setting, or only what `docker
        service update` left: `upgrade`, `certs rotate`) is deployed alone first, the followers before the active
        one, each back and caught up before the next; the stack deploy then finds them as it renders them.  Deployed
        together, every changed controller would restart at once and leave the quorum without a leader."""
        stack, kept = self.request.stack_name, self.request.controllers
        running = [c for c in (kept.controllers if kept else ()) if running_container(self.manager, f"{stack}_{c.service}")]
        if not running or not self.targets:
            return
        addresses = tuple((host, int(port)) for host, _, port in (t.bootstrap.rpartition(":") for t in self.targets))
        view = QuorumView(self.manager, addresses, self.targets[0].security)
        try:
            leader = view.describe().leader
        except BrokerError:
            return  # no quorum to keep led: the stack deploy goes on as before
        for controller in sorted(running, key=lambda c: (c.node_id == leader, c.node_id)):
            name = controller.service
            alone = functools.partial(_deploy_stack, self.manager, stack, render_services(self.request, [name]))
            said = functools.partial(_say, progress, len(running), name)
            redeploy(view, f"{stack}_{name}", controller.node_id, alone, timeout, said)

    def converge(self, progress: Progress) -> None:
        until_serving(self.docker, self.manager, self.request.broker_service, self.targets, self.watch, progress)

    def restart_for_new_identity(self, identities: _Identities, progress: Progress) -> None:
        """A broker that read an identity since changed (its inventory address) restarts alone, one at a time,
        each serving again before the next; the other brokers keep running.  During a rolling update of the
        service every task is replaced anyway, so nothing is stopped then."""
        service = self.request.broker_service
        restarting = [
            t
            for t in self.targets
            if identities.outcomes[t.member.node.id] == identity.Outcome.REPLACED and not t.member.via_swarm
        ]
        state = dockerapi.service_state(self.manager, service) if restarting else None
        for target in restarting:
            task = state.running_on(target.member.node.id) if state and state.update_state != "updating" else None
            if task is None:
                continue
            progress(0, 1, f"restarting the broker on {target.name}: its identity changed")
            dockerapi.stop_container(self.docker[target.member.host], task.container_id, STOP_GRACE_S)
            until_serving(self.docker, self.manager, service, [target], self.watch, progress)


def _say(progress: Progress, total: int, name: str, message: str) -> None:
    progress(0, total, f"{name}: {message}")


def _allocate_ids(
    manager: Engine, request: StackRequest, members: list[Member], nodes: list[SwarmNode], progress: Progress
) -> identity.IdAllocation:
    """Broker ids (kept in node labels) and the apache cluster id, before anything needs them."""
    progress(0, sum(1 for m in members if m.eligible), "allocating broker ids")
    allocation = identity.assign_broker_ids(manager, nodes, [m.node.id for m in members])
    if request.cluster_id:
        identity.keep_cluster_id(manager, nodes, request.stack_name, request.cluster_id)
    if request.controllers:
        identity.keep_controllers(manager, nodes, request.stack_name, request.controllers)
    return allocation


def _write_identities(
    docker: DockerHosts, request: StackRequest, image: str, members: list[Member], allocation: identity.IdAllocation
) -> _Identities:
    """Each node's identity volume: directly where swarmkit reaches the engine, else through the swarm."""
    manager = docker[request.inventory.first_manager]
    content = {
        m.node.id: identity.node_env(allocation.ids[m.node.id], m.host.address, m.host.labels.get(ZONE_LABEL, ""))
        for m in members
    }
    direct = [m for m in members if not m.via_swarm]
    volume, stack = request.identity_volume, request.stack_name
    outcomes = identity.write_identities([(docker[m.host], content[m.node.id]) for m in direct], image, volume, stack)
    joined = [m for m in members if m.via_swarm]
    outcomes += fan_out(
        lambda m: identity.write_identity_through_swarm(manager, m.node, image, volume, stack, content[m.node.id]), joined
    )
    return _Identities(allocation, dict(zip((m.node.id for m in direct + joined), outcomes)))


def _deliver_agent(docker: DockerHosts, request: StackRequest, members: list[Member]) -> None:
    """Each node's metrics-agent volume, filled from swarmkit's probe image (shipped where missing, as for
    preflight) before the stack starts: directly where swarmkit reaches the engine, else through the swarm."""
    probe = shipping.with_probe_image(request.inventory, docker).stack.probe_image
    manager = docker[request.inventory.first_manager]
    copy = identity.AgentCopy(
        probe, metrics.PROBE_AGENT, metrics.agent_volume(request.stack_name), metrics.AGENT_FILE, request.stack_name
    )
    fan_out(lambda m: identity.fill_agent(docker[m.host], copy), [m for m in members if not m.via_swarm])
    fan_out(lambda m: identity.fill_agent_through_swarm(manager, m.node, copy), [m for m in members if m.via_swarm])


def _secured(
    inventory: Inventory, options: DeployOptions, request: StackRequest, members: list[Member], allocation: identity.IdAllocation
) -> tuple[StackRequest, ClientSecurity | None]:
    """A secure request gets its certificates (one per broker id, for the names it advertises) and
    swarmkit its client settings; bootstrapping through a node's address checks no host name (verify does)."""
    security = pki.for_stack(inventory, options.stack_name, options.listeners.security)
    if security is None:
        return request, None
    brokers = [(allocation.ids[m.node.id], _advertised_names(options, m.node.hostname, m.host.address)) for m in members]
    store = pki.Pki(pki.store_dir(inventory, options.stack_name))
    return replace(request, security=pki.material(store, brokers)), replace(security, verify_hostname=False)


def _targets(
    options: DeployOptions, eligible: list[Member], allocation: identity.IdAllocation, security: ClientSecurity | None
) -> list[Target]:
    """What to wait on: each eligible node's own port, and the address it must advertise when known in advance."""
    port = options.listeners.external_listener.port

    def expected(member: Member) -> str | None:
        host = expected_advertised_host(options.advertise, member.node.hostname, member.host.address)
        return f"{host}:{port}" if host else None

    return [Target(m, allocation.ids[m.node.id], f"{m.host.address}:{port}", expected(m), security) for m in eligible]


def _node_results(members: list[Member], identities: _Identities, targets: list[Target]) -> tuple[NodeResult, ...]:
    by_host = {t.name: t for t in targets}
    allocation = identities.allocation
    return tuple(
        NodeResult(
            host=m.host.name,
            node_id=m.node.id,
            hostname=m.node.hostname,
            broker_id=allocation.ids[m.node.id],
            new_id=m.node.id in allocation.new,
            identity=identities.outcomes[m.node.id],
            eligible=m.eligible,
            task_id=by_host[m.host.name].task_id if m.host.name in by_host else "",
            advertised=by_host[m.host.name].advertised if m.host.name in by_host else "",
        )
        for m in members
    )


@dataclass(frozen=True)
class UpResult:
    preflight: PreflightReport | None  # None when skipped
    swarm: SwarmResult
    deploy: DeployResult
    shipped: shipping.PushResult | None = None  # swarmkit's own broker image, shipped from this machine

    @property
    def ok(self) -> bool:
        return self.deploy.ok

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "preflight": self.preflight.to_dict() if self.preflight is not None else None,
            "swarm": self.swarm.to_dict(),
            "deploy": self.deploy.to_dict(),
            "shipped": self.shipped.to_dict() if self.shipped is not None else None,
        }


@dataclass(frozen=True)
class PreflightGate:
    """``up`` probes the hosts first and stops, changing nothing, when they fail; ``on_report`` shows the report."""

    memory_gib: float = DEFAULT_MEMORY_PER_BROKER / GIB
    on_report: Callable[[PreflightReport], None] = lambda report: None


def up(plan: DeployPlan, session: Session, preflight: PreflightGate | None = PreflightGate()) -> UpResult:
    """Preflight (unless ``preflight`` is None), swarm, deploy: the one path of ``swarmkit up``.

    The broker image reaches the hosts while the swarm forms: each host pulls it where missing, except
    swarmkit's own image, which ``session.local`` (this machine's engine, when given) builds if need be (before
    any host changes) and ships to the hosts that lack it. Not during preflight: on a small machine a pull
    beside the probe containers slows them by more than it saves. A failed shipment stops ``up`` before
    the deploy; a host that cannot pull is named when the swarm starts its broker."""
    inventory, docker = plan.inventory, session.docker
    if plan.engine.KRAFT:
        guard_controllers(plan, session)
        plan = _declared_release(plan, session)
    source = session.local if shipping.is_own(plan.broker_image) else None
    built_here = shipping.ensure_here(source, plan.broker_image) if source is not None else False
    report = gate_preflight(plan, session, preflight) if preflight is not None else None
    with in_background(lambda: _distribute(inventory, docker, plan.broker_image, source, built_here)) as distributing:
        session.progress(0, len(inventory.hosts), "swarm")
        infos = {e.host: info for e in report.engines if (info := e.engine_info())} if report else None
        swarm_result = swarm.swarm_up(inventory, docker=docker, infos=infos)
    shipped = distributing.result()
    return UpResult(report, swarm_result, deploy(plan, session, swarm_result), shipped)


def _declared_release(plan: DeployPlan, session: Session) -> DeployPlan:
    """A deployed cluster on another release than the inventory's ``stack.kafka_version`` is moved to it first
    (`swarmkit upgrade`'s way: one node at a time, then finalized); the deploy keeps the image it then runs."""
    version, stack = plan.inventory.stack.kafka_version, plan.options.stack_name
    if not version or not _deployed(session.docker[plan.inventory.first_manager], stack):
        return plan
    port = plan.options.listeners.external_listener.port
    image = upgrade.apply_declared(session, stack, port, version)
    return replace(plan, options=replace(plan.options, image=image))


def _deployed(manager: Engine, stack: str) -> bool:
    """Whether the stack's brokers run; False before the swarm exists (a first `up`: its manager is none yet)."""
    try:
        return dockerapi.service_state(manager, f"{stack}_broker") is not None
    except EngineError:
        return False


def _distribute(
    inventory: Inventory, docker: DockerHosts, image: str, source: Engine | None, built_here: bool
) -> shipping.PushResult | None:
    """Ship ``image`` from ``source`` to the hosts that lack it, or without a source pull it where missing."""
    if source is not None:
        return shipping.ship(inventory, docker, source, image, built_here=built_here)
    fan_out_settled(lambda host: dockerapi.ensure_image(docker[host], image), inventory.hosts, EngineError)
    return None


def probe(inventory: Inventory, docker: DockerHosts, listeners: ListenerPlan, memory_gib: float) -> PreflightReport:
    """Preflight with the probe image (shipped where missing): `swarmkit preflight`, `swarm up` and `up`."""
    return run_preflight(
        shipping.with_probe_image(inventory, docker),
        docker=docker,
        memory_per_broker=int(memory_gib * GIB),
        client_port=listeners.external_listener.port,
        internal_port=listeners.internal_listener.port,
    )


def gate_preflight(plan: DeployPlan, session: Session, gate: PreflightGate) -> PreflightReport:
    """Probe engines, ports and memory with the probe image (shipped where missing); show the report, then
    refuse to go on when it failed."""
    session.progress(0, len(plan.inventory.hosts), "preflight")
    report = probe(plan.inventory, session.docker, plan.options.listeners, gate.memory_gib)
    gate.on_report(report)
    if not report.ok:
        raise report.error()
    return report
