"""Verify a deployed cluster from the client's side: every node, every broker, every topic.

Each broker is judged the way a client meets it: ask the node's published port for metadata,
check that it advertises the address swarmkit expects for that node, then resolve and dial that
advertised address from here. The last passing result is kept beside the inventory so that a
later run can say what changed (a node added or lost, a broker that moved).
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TypeVar, cast

from swarmkit import fanout, files, waits
from swarmkit.checks import diagnose, disk, health, symptoms
from swarmkit.checks.diagnose import BrokerCheck
from swarmkit.checks.disk import BrokerDisk
from swarmkit.checks.health import ClusterHealth
from swarmkit.errors import BrokerError, SwarmkitError, VerifyError
from swarmkit.fanout import Future, fan_out, in_background
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import (
    FAILED_START,
    DockerHosts,
    Engine,
    EngineInfo,
    NodeState,
    ServiceState,
    SwarmNode,
    SwarmState,
    TaskState,
    TaskStatus,
)
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin, lag
from swarmkit.kafka.lag import PartitionLag
from swarmkit.security import certs, pki
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.compose import Advertise, expected_advertised_host
from swarmkit.stack.deployed import DeployedStack, broker_id_of, broker_service, host_of, verified_state_path
from swarmkit.stack.engines import engine_for
from swarmkit.stack.engines.apache import DATA_DIR, internal_client_config
from swarmkit.stack.topics import TopicSpec, creation_configs, declared_topics
from swarmkit.swarm.view import ENGINE_BOUND, active_manager, engine_states, node_for
from swarmkit.traffic import spark as sparkjob
from swarmkit.traffic import spark_streaming

SPARK_TOPIC = "swarmkit-verify"
SPARK_PARTITIONS_PER_BROKER = 2  # Kafka places leaders round-robin: every broker leads some
SPARK_TANSU_PARTITIONS = 3  # each tansu broker is its own cluster


SWARM_BOUND = 15.0  # the manager's view: nodes and the broker service
MANAGER_HEDGE = 3.0  # a manager's view normally comes in well under a second: one this slow may be cut off
NO_SWARM_LEADER = "does not have a leader"  # Docker's answer while the managers elect one
LEADERLESS = "the swarm has no leader"
ENGINE_LATE = "did not answer in time"  # engine_states' words for an engine silent past its bound: busy, not stopped
NOT_READ = "not read"  # the task of a broker asked from here only
ENGINE_BUSY = "its Docker engine did not answer in time: busy (e.g. while the swarm elects a leader), not refusing"
BROKER_BOUND = 30.0  # every broker checked from here, the controller quorum read beside them
READS_BOUND = 20.0  # the topics, the lag, the log directories, the releases and the cluster's state, read at once
LINKS_SHARE = 2.0  # seconds of the budget kept for timing the links once everything else is read
LATE = "no answer within verify's --timeout"
# The hosts' own views (peers reached, data directory), read while everything else is checked: a broker that Kafka
# stopped has its volume read in the node exporter's container beside it (a throwaway container, the fallback, took
# 7-9 s on the busy 2-core machine, past symptoms.BOUND, 8 s, in two drills of six: the full disk went unnamed).
VIEWS_BOUND = 15.0
QUORUM_MARGIN = 3.0  # the quorum tool is killed this long before its step's deadline, so its answer is read
PROBES_PER_BROKER = 4  # a broker's check waits at most this many probe timeouts (bootstrap, advertised, certificate)
Say = Callable[[str], None]
T = TypeVar("T")


def _silent(message: str) -> None:
    """The default progress callback: say nothing."""


@dataclass(frozen=True)
class VerifyOptions:
    stack_name: str = "kafka"
    external_port: int = 9094
    timeout: float = 5.0  # one probe
    budget: float = 180.0  # every check together (the CLI's --timeout, default 60; the Spark job has its own bound)
    spark: bool = False
    spark_records: int | None = None
    spark_master: str | None = None
    spark_report: str | None = None
    security: ClientSecurity | None = None  # None: as the deployed stack says (its label), from the kept store
    spark_stream: spark_streaming.StreamOptions | None = None  # the job's streaming mode instead of its batch


@dataclass(frozen=True, kw_only=True)
class BrokerVerdict(BrokerCheck):
    """A broker check seen from its node: what swarmkit expected it to advertise, and its task's state."""

    node: str
    expected: str
    task: str

    @classmethod
    def of(cls, host: Host, expected: str, task: str, check: BrokerCheck) -> BrokerVerdict:
        return cls(**{f.name: getattr(check, f.name) for f in fields(BrokerCheck)}, node=host.name, expected=expected, task=task)


@dataclass(frozen=True)
class TopicVerdict:
    broker: str
    topic: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class VerifyReport:
    brokers: tuple[BrokerVerdict, ...]
    topics: tuple[TopicVerdict, ...]
    changes: tuple[str, ...]
    spark: sparkjob.SparkReport | None = None
    spark_error: str = ""
    spark_stream: spark_streaming.StreamReport | None = None
    cluster: ClusterHealth | None = None  # for engines whose brokers form one cluster
    cluster_error: str = ""
    certificates: pki.Expiry | None = None  # secure stacks: days left of the CA and of the first broker certificate
    faults: tuple[symptoms.FaultSign, ...] = ()  # a partitioned host, a full log directory, a slow link
    lag: tuple[PartitionLag, ...] = ()  # every consumer group's lag per partition (not a check: a figure)
    lag_error: str = ""
    disks: tuple[BrokerDisk, ...] = ()  # apache: each node's broker log directory and the space under it
    kafka: health.KafkaReleases | None = None  # each node's Kafka release, the finalized metadata.version (apache)

    @property
    def ok(self) -> bool:
        return (
            all(b.ok for b in self.brokers)
            and all(t.ok for t in self.topics)
            and not self.spark_error
            and not self.cluster_error
            and (self.cluster is None or self.cluster.ok)
            and not self.faults
        )

    @property
    def problems(self) -> list[str]:
        """Every failed check, one line each (empty when ``ok``)."""
        found = [f"{f.node}: {f.kind}: {f.detail}" for f in self.faults]
        found += [f"{b.node}: {b.detail}" for b in self.brokers if not b.ok]
        found += [f"topic {t.topic} on {t.broker}: {t.detail}" for t in self.topics if not t.ok]
        found += [e for e in (self.cluster_error, self.spark_error) if e]
        return found + (list(self.cluster.problems) if self.cluster else [])

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "brokers": [b.to_dict() for b in self.brokers],
            "cluster": self.cluster.to_dict() if self.cluster else None,
            "cluster_error": self.cluster_error or None,
            "topics": [asdict(t) for t in self.topics],
            "spark": self.spark.to_dict() if self.spark else None,
            "spark_error": self.spark_error or None,
            "spark_stream": self.spark_stream.to_dict() if self.spark_stream else None,
            "changes": list(self.changes),
            "certificates": asdict(self.certificates) if self.certificates else None,
            "faults": [f.to_dict() for f in self.faults],
            "lag": [asdict(p) | {"lag": p.lag} for p in self.lag],
            "lag_error": self.lag_error or None,
            "disks": [asdict(d) for d in self.disks],
            "kafka": asdict(self.kafka) if self.kafka else None,
        }


# --- gathering ------------------------------------------------------------------------------


def _task_summary(tasks: list[TaskState]) -> tuple[str, str]:
    """(state of the node's current broker task, a problem description or '').

    Between two attempts of a crash-looping task the old one is shut down and the next one waits
    out the restart delay, so the newest task that is not being removed is the one that counts.
    """
    if not tasks:
        return "none", "no broker task is scheduled on this node"
    newest = sorted(tasks, key=lambda t: t.created_at, reverse=True)
    current = next((t for t in newest if t.desired_state not in (TaskStatus.SHUTDOWN, TaskStatus.REMOVE)), newest[0])
    failures = [t for t in tasks if t.state in FAILED_START]
    last_error = next((t.error or t.message for t in newest if t.state in FAILED_START), "")
    if current.state == TaskStatus.RUNNING:
        if len(failures) >= 2:
            return current.state, f"running, but failed {len(failures)} times before (last error: {last_error})"
        return current.state, ""
    attempts = f" after {len(failures)} failed attempts" if failures else ""
    detail = current.error or last_error or current.message
    return current.state, f"broker task is {current.state}{attempts}" + (f": {detail}" if detail else "")


FIX_BY_MODE: dict[str, str] = {
    Advertise.HOSTNAME: "clients must resolve every node's hostname (DNS or /etc/hosts), or redeploy with --advertise inventory-address",
    Advertise.INVENTORY_ADDRESS: "check the inventory address of this host: clients must reach it",
    Advertise.COMMAND: "fix HOSTNAME_COMMAND so it prints a name clients resolve (e.g. the public hostname from the "
    "cloud metadata service), or redeploy with --advertise inventory-address",
}


def _own_entry(answered: tuple[tuple[int, str], ...], node: SwarmNode) -> tuple[int, str] | None:
    """The metadata entry of this node's broker: by its id where swarmkit gave one, else the only one."""
    broker_id = broker_id_of(node)
    if broker_id is not None and len(answered) > 1:
        return next((entry for entry in answered if entry[0] == broker_id), None)
    return answered[0] if answered else (0, "")


def _ready_node(host: Host, engine: EngineInfo | SwarmkitError, node: SwarmNode | None) -> SwarmNode | BrokerCheck:
    """The host's swarm node when it can run a broker, else why not (engine down, not in the swarm)."""
    if isinstance(engine, SwarmkitError):
        detail = f"the Docker engine of {host.name} does not answer: {engine.message}"
        fix = f"on {host.name} ({host.endpoint}): {engine.hint}" if engine.hint else f"start dockerd on {host.name}"
    elif node is None:
        detail, fix = f"{host.name} is not in the swarm", "join it with: swarmkit up -i INVENTORY"
    elif node.state != NodeState.READY:
        detail, fix = f"{host.name} is '{node.state}' in the swarm", f"bring {host.name}'s engine back or remove it"
    else:
        return node
    return BrokerCheck(-1, "", False, False, False, detail, fix=fix)


def late_engines(engines: dict[str, EngineInfo | SwarmkitError]) -> str:
    """Pure: the engines that gave no answer in time, whose brokers were asked from here only ("" when none)."""
    late = [name for name, engine in engines.items() if _late(engine)]
    if not late:
        return ""
    return f"the Docker engines of {', '.join(late)} did not answer in time: their brokers were asked from here only"


def _late(engine: EngineInfo | SwarmkitError) -> bool:
    """Pure: whether an engine gave no answer within its bound (it may well run: busy, or its managers electing a
    leader), as against one that refused or failed."""
    return isinstance(engine, SwarmkitError) and ENGINE_LATE in engine.message


def _judge_node(
    host: Host,
    engine: EngineInfo | SwarmkitError,
    node: SwarmNode | None,
    tasks: list[TaskState],
    mode: str,
    options: VerifyOptions,
) -> BrokerVerdict:
    if _late(engine):  # a busy engine (its managers electing a leader): its broker is asked from here all the same
        return _asked_from_here(host, _probe_here(host, options, options.timeout), options, ENGINE_BUSY)
    ready = _ready_node(host, engine, node)
    if isinstance(ready, BrokerCheck):
        return BrokerVerdict.of(host, "", "", ready)
    node = ready
    task_state, task_problem = _task_summary(tasks)
    host_expected = expected_advertised_host(mode, node.hostname, host.address)
    expected = diagnose.endpoint(host_expected, options.external_port) if host_expected else ""
    check = _check_broker(host, node, expected, mode, options)
    if task_problem:
        check = replace(check, detail=f"{check.detail}; {task_problem}")
    return BrokerVerdict.of(host, expected, task_state, check)


def _check_broker(host: Host, node: SwarmNode, expected: str, mode: str, options: VerifyOptions) -> BrokerCheck:
    """Bootstrap through the node's own port, find its broker in the metadata, then dial what it advertises.
    The address it should advertise is dialled while the bootstrap is asked: when it advertises that, the answer is ready."""
    ahead = functools.partial(_probe_advertised, expected, options) if expected else lambda: None
    with in_background(ahead) as expected_probe:
        where = diagnose.endpoint(host.address, options.external_port)
        security = pki.by_address(options.security)
        bootstrap = diagnose.probe_address(host.address, options.external_port, options.timeout, security)
        if not bootstrap.answered:
            return _unanswered(host, where, bootstrap, options)
        own = _own_entry(bootstrap.answered_brokers, node)
        if own is None:
            detail = (
                f"{where} answers, but broker {broker_id_of(node)} of {host.name} is not in its metadata "
                "(not registered with the controllers yet, or fenced)"
            )
            fix = f"see `docker service logs {broker_service(options.stack_name)}` for {host.name}'s broker"
            return BrokerCheck(-1, "", False, True, False, detail, fix=fix)
        node_id, advertised = own
        if expected and advertised != expected:
            detail = f"{host.name} advertises {advertised}, but clients should get {expected}"
            return BrokerCheck(node_id, advertised, False, True, True, detail, fix=FIX_BY_MODE[mode])
        probe = expected_probe.result() or _probe_advertised(advertised, options)
    check = diagnose.judge_broker(node_id, probe, client_local=False)
    if options.security and (check.ok or diagnose.security_failure(probe.metadata_error)):
        return _with_certificate(check, probe.host, probe.port, options)  # a fix about certificates, not addresses
    return replace(check, fix=check.fix and f"{check.cause}. {FIX_BY_MODE[mode]}")


def _probe_advertised(advertised: str, options: VerifyOptions) -> diagnose.Probe:
    host, port = diagnose.split_endpoint(advertised)
    return diagnose.probe_address(host, port, options.timeout, options.security)


def _with_certificate(check: BrokerCheck, host: str, port: int, options: VerifyOptions) -> BrokerCheck:
    """The certificate the broker presents: issued by the cluster's CA, naming what it advertises,
    and how long it lasts (a warning under ``pki.RENEW_DAYS`` days: the next deploy renews it)."""
    assert options.security is not None
    try:
        presented = pki.presented_certificate(host, port, options.timeout)
    except OSError as error:
        return replace(check, detail=f"{check.detail}; its certificate could not be read: {error}")
    if not certs.signed_by(presented, options.security.ca_pem):
        detail = f"{check.advertised} presents a certificate the cluster CA did not issue"
        return replace(check, cause="unknown CA", fix=diagnose.FIX_CERTIFICATE, detail=detail)
    names = certs.sans_of(presented)
    if host not in names:
        detail = f"{check.advertised}: its certificate names {', '.join(names) or 'nothing'}"
        return replace(check, cause="hostname mismatch", fix=diagnose.FIX_CERTIFICATE, detail=detail)
    if not check.ok:
        return check  # the certificate is right: the client's own verdict stands (e.g. its login)
    days = certs.days_left(presented)
    note = f"certificate from the cluster CA for {', '.join(names)}, {days} days left"
    if days < pki.RENEW_DAYS:
        note += " (warning: run swarmkit deploy to renew it)"
    return replace(check, detail=f"{check.detail}; {note}" if check.detail else note)


def _unanswered(host: Host, where: str, bootstrap: diagnose.Probe, options: VerifyOptions) -> BrokerCheck:
    """The node's own port gave no metadata: a firewall (timeout) or a broker that is not running there."""
    why = {
        "refused": "refuses connections",
        "timeout": "does not answer (connections time out: a firewall drops them)",
    }.get(bootstrap.connect, bootstrap.connect_error or bootstrap.metadata_error or bootstrap.connect)
    fix = (
        f"open {options.external_port}/tcp inbound on {host.name} for clients"
        if bootstrap.connect == "timeout"
        else f"see `docker service ps {options.stack_name}_broker` for {host.name}'s broker"
    )
    return BrokerCheck(-1, "", False, False, False, f"{where} {why}", fix=fix)


def _topics_on(bootstrap: str, specs: list[TopicSpec], options: VerifyOptions, settings: bool = False) -> list[TopicVerdict]:
    """Each topic's counts, and with ``settings`` (a shared cluster) its declared settings: drift is a failure."""
    try:
        with admin.KafkaAdmin(bootstrap, options.security, options.timeout) as kafka:
            topics = {t.name: t for t in kafka.metadata().topics}
            present = [s.name for s in specs if s.name in topics] if settings else []
            configs = kafka.topic_configs(present)
    except BrokerError as error:
        return [TopicVerdict(bootstrap, "*", False, error.message)]
    verdicts = []
    for spec in specs:
        found = topics.get(spec.name)
        if found is None:
            verdicts.append(TopicVerdict(bootstrap, spec.name, False, "missing: run swarmkit deploy to create it"))
            continue
        actual = (found.partition_count, found.replication_factor)
        ok = actual == (spec.partitions, spec.replicas)
        detail = f"{actual[0]} partitions, replication {actual[1]}" + ("" if ok else f"; expected {spec.to_spec_string()}")
        drift = _setting_drift(spec, configs.get(spec.name))
        verdicts.append(TopicVerdict(bootstrap, spec.name, ok and not drift, "; ".join([detail, *drift])))
    return verdicts


def _setting_drift(spec: TopicSpec, actual: dict[str, str] | None) -> list[str]:
    """Declared settings the topic does not have (None: not read)."""
    if actual is None:
        return []
    return [
        f"drift: {key}={actual.get(key, '(unset)')}, declared {value} (`swarmkit plan` shows it, `swarmkit up` sets it)"
        for key, value in sorted(creation_configs(spec).items())
        if actual.get(key, "").replace(" ", "") != value.replace(" ", "")
    ]


def _check_topics(
    brokers: list[BrokerVerdict], specs: list[TopicSpec], shared: bool, options: VerifyOptions
) -> list[TopicVerdict]:
    """One broker speaks for a shared cluster; otherwise every broker is asked, all at once."""
    healthy = [b.advertised for b in brokers if b.ok]
    targets = healthy[:1] if shared else healthy
    return [verdict for found in fan_out(lambda b: _topics_on(b, specs, options, shared), targets) for verdict in found]


# --- changes since the last passing run -----------------------------------------------------


def _snapshot(brokers: list[BrokerVerdict]) -> dict[str, str]:
    return {b.node: b.advertised for b in brokers if b.ok}


def compare(previous: dict[str, str] | None, current: list[BrokerVerdict]) -> list[str]:
    """Pure: what changed between the last verified brokers and this run."""
    if previous is None:
        return ["first verification: no earlier state to compare with"]
    changes = []
    now = {b.node: b for b in current}
    for node in sorted(set(now) - set(previous)):
        changes.append(f"node added: {node} (broker {'ok' if now[node].ok else 'failing'})")
    for node, advertised in sorted(previous.items()):
        verdict = now.get(node)
        if verdict is None:
            changes.append(f"node lost: {node} is no longer in the inventory (was {advertised})")
        elif not verdict.ok:
            changes.append(f"node lost: {node}'s broker ({advertised}) no longer passes: {verdict.detail}")
        elif verdict.advertised != advertised and verdict.task != NOT_READ:  # asked from here: what it advertises unread
            changes.append(f"broker moved: {node} advertised {advertised}, now {verdict.advertised}")
    return changes


def _load_previous(path: Path) -> dict[str, str] | None:
    try:
        return json.loads(files.read_text(path))["brokers"]
    except (OSError, ValueError, KeyError, files.FileProblem):
        return None


# --- the whole verification -----------------------------------------------------------------


def verify(session: Session, options: VerifyOptions, on_progress: Say | None = None) -> VerifyReport:
    """Every check within ``options.budget`` seconds, each step within its own bound; a step that does not answer
    in time is named in the report (or, for the swarm itself, in the error) instead of holding the command.
    What each host sees of its peers and its data directory is read meanwhile (a partitioned host's own engine
    answers; the swarm's may not, while its managers elect a leader)."""
    if options.spark:
        sparkjob.spark_submit()  # without the spark extra: said before anything is checked
    say, budget = on_progress or _silent, waits.Budget(options.budget)
    inventory = session.inventory
    seconds = budget.left(VIEWS_BOUND)
    with in_background(lambda: symptoms.read_views(session.docker, inventory, options.stack_name, seconds)) as viewed:
        try:
            report, options, shared = _checked(session, options, budget, say)
        except SwarmkitError as error:
            if NO_SWARM_LEADER not in error.message:
                raise
            say("the swarm has no leader: asking every broker and the controller quorum from here without its view")
            (report, options), shared = _without_swarm(inventory, options, budget, error), True
    say("naming partitioned hosts, full log directories and slow links")
    report = replace(report, faults=_fault_signs(inventory, report, options, viewed.result(), budget))
    if options.spark:
        say("running the PySpark job through every broker" + (" (streaming)" if options.spark_stream else ""))
        report = _with_spark(report, shared, options)
    if report.ok:
        path = verified_state_path(inventory, options.stack_name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"brokers": _snapshot(list(report.brokers))}, indent=2))
    return report


def _without_swarm(
    inventory: Inventory, options: VerifyOptions, budget: waits.Budget, missing: SwarmkitError
) -> tuple[VerifyReport, VerifyOptions]:
    """The swarm has no leader (its managers elect one, or the leader's host is cut off), so there is no node, service
    or task to read: every broker is asked from here (``asked_from_here``) within one probe timeout.  The report fails,
    saying the swarm's view is missing; the faults are still named from the hosts' own views, which their engines give
    without a leader."""
    if options.security is None:
        options = replace(options, security=pki.for_stack(inventory, options.stack_name, inventory.stack.security or "plaintext"))
    brokers, quorum = asked_from_here(inventory, options, max(1.0, budget.left(options.timeout)))
    return VerifyReport(tuple(brokers), (), (), cluster_error=view_missing(missing, quorum)), options


def asked_from_here(inventory: Inventory, options: VerifyOptions, seconds: float) -> tuple[list[BrokerVerdict], health.Quorum]:
    """Without the swarm's view (it has no leader): every broker asked from here at its host's address, and the
    controller quorum through them, at once within ``seconds``."""
    addresses = [(host.address, options.external_port) for host in inventory.hosts]
    security = pki.by_address(options.security)
    calls: list[Callable[[], object]] = [functools.partial(_probe_here, host, options, seconds) for host in inventory.hosts]
    calls.append(lambda: health.quorum_from_brokers(addresses, seconds, security, health.Controllers((), ())))
    answers = fanout.settle_by(calls, time.monotonic() + seconds)
    brokers = [_asked_from_here(host, answer, options, LEADERLESS) for host, answer in zip(inventory.hosts, answers)]
    return brokers, _quorum_answer(answers[-1], seconds)


def view_missing(missing: SwarmkitError, quorum: health.Quorum | None) -> str:
    """Pure: what a report without the swarm's view says of it, with what the quorum showed (None: no quorum)."""
    why = f"the swarm's view is missing ({missing.message}): each broker was asked from here at its host's address only"
    return "; ".join([why, *(health.quorum_problems(quorum) if quorum else [])])


def _probe_here(host: Host, options: VerifyOptions, seconds: float) -> diagnose.Probe:
    """The host's broker asked from here at the host's address, within ``seconds``."""
    return diagnose.probe_address(host.address, options.external_port, seconds, pki.by_address(options.security))


def _quorum_answer(answer: object, seconds: float) -> health.Quorum:
    """Pure: the quorum as the brokers described it, or why it was not read."""
    if isinstance(answer, health.Quorum):
        return answer
    why = answer.message if isinstance(answer, SwarmkitError) else f"no broker described it within {seconds:g}s"
    return health.Quorum(-1, error=f"not read from the brokers: {why}")


def _asked_from_here(host: Host, answer: object, options: VerifyOptions, unchecked: str) -> BrokerVerdict:
    """Pure: a broker asked at its host's address without the swarm's or its engine's view (``unchecked``: why not):
    reachable and answering, or why not (its advertised address and its task are not checked)."""
    where = diagnose.endpoint(host.address, options.external_port)
    if not isinstance(answer, diagnose.Probe):
        check = BrokerCheck(-1, "", False, False, False, f"{where} gave no answer within {options.timeout:g}s")
    elif not answer.answered:
        check = _unanswered(host, where, answer, options)
    else:
        detail = f"{where} answers (its advertised address and task not checked: {unchecked})"
        check = BrokerCheck(-1, where, True, True, True, detail, metadata_ms=answer.metadata_ms)
    return BrokerVerdict.of(host, "", NOT_READ, check)


def _checked(
    session: Session, options: VerifyOptions, budget: waits.Budget, say: Say
) -> tuple[VerifyReport, VerifyOptions, bool]:
    """The engines, the swarm, every broker, the quorum and the topics: (the report, the options with the stack's
    client security, whether the brokers form one cluster)."""
    inventory, docker = session.inventory, session.docker
    say(f"asking the Docker engines of {', '.join(h.name for h in inventory.hosts)}")
    swarm = _swarm_and_controllers(inventory, docker, options, budget, say)
    shared = _shared(swarm.stack.engine)
    if options.security is None:
        options = replace(options, security=pki.for_stack(inventory, options.stack_name, swarm.stack.security))
    say("checking every broker from here" + (", and the controller quorum through a broker" if shared else ""))
    brokers, quorum = _brokers_and_quorum(inventory, docker, swarm, options, budget)
    say("reading the topics, the consumer lag" + (", the log directories and the cluster's state" if shared else ""))
    reads = _cluster_reads(session, swarm, brokers, quorum, options, _reads_deadline(budget))
    changes = compare(_load_previous(verified_state_path(inventory, options.stack_name)), brokers)
    expiry = pki.expiry(pki.Pki(pki.store_dir(inventory, options.stack_name))) if options.security else None
    (cluster, cluster_error), (lags, lag_error) = reads.cluster, reads.lag
    cluster_error = "; ".join(e for e in (cluster_error, late_engines(swarm.engines)) if e)
    report = VerifyReport(
        tuple(brokers),
        tuple(reads.topics),
        tuple(changes),
        cluster=cluster,
        cluster_error=cluster_error,
        certificates=expiry,
        lag=lags,
        lag_error=lag_error,
        disks=reads.disks,
        kafka=reads.kafka,
    )
    return report, options, shared


@dataclass(frozen=True)
class _ClusterReads:
    """What verify reads once the brokers are checked, each by one deadline."""

    topics: list[TopicVerdict]
    lag: tuple[tuple[PartitionLag, ...], str]
    disks: tuple[BrokerDisk, ...]
    kafka: health.KafkaReleases | None
    cluster: tuple[ClusterHealth | None, str]


def _reads_deadline(budget: waits.Budget) -> float:
    """When the reads after the brokers' checks are given up: within READS_BOUND, and LINKS_SHARE before the budget's
    end so that the links are still timed."""
    return max(time.monotonic(), min(budget.until(READS_BOUND), budget.deadline - LINKS_SHARE))


def _cluster_reads(
    session: Session,
    swarm: _Swarm,
    brokers: list[BrokerVerdict],
    quorum: health.Quorum | None,
    options: VerifyOptions,
    deadline: float,
) -> _ClusterReads:
    """The topics, the consumer lag, the log directories, the Kafka releases and the cluster-wide state, read at once
    by ``deadline``; a read without an answer by then is named as not read (``_unread``), not waited for."""
    inventory, docker, shared = session.inventory, session.docker, _shared(swarm.stack.engine)
    specs = declared_topics(inventory) or swarm.stack.topics  # the inventory's declared state, else what `up` created
    manager = docker[swarm.manager]
    calls: list[Callable[[], object]] = [
        lambda: _check_topics(brokers, specs, shared, options),
        lambda: _lag(brokers, options),
        lambda: disk.broker_disks(docker, inventory.hosts, options.stack_name, DATA_DIR) if shared else (),
        lambda: _releases(manager, inventory, swarm.nodes, swarm.stack, options) if shared else None,
        lambda: _cluster(inventory, swarm.nodes, brokers, quorum, options) if quorum else (None, ""),
    ]
    late = _unread(inventory, brokers, quorum, shared)
    answers = fanout.settle_by(calls, deadline)
    return _ClusterReads(*(_or_late(answer, getattr(late, f.name)) for answer, f in zip(answers, fields(_ClusterReads))))


def _unread(inventory: Inventory, brokers: list[BrokerVerdict], quorum: health.Quorum | None, shared: bool) -> _ClusterReads:
    """Pure: what each read after the brokers' checks says when it gave no answer in time, naming what was asked."""
    asked = ", ".join(b.advertised for b in brokers if b.ok) or "no broker"
    cluster = f"the cluster's state was not read from {asked}: {LATE}"
    return _ClusterReads(
        [TopicVerdict(asked, "*", False, f"the topics were not read: {LATE}")],
        ((), f"the consumer lag was not read from {asked}: {LATE}"),
        tuple(BrokerDisk(h.name, error=f"its log directory was not read: {LATE}") for h in inventory.hosts) if shared else (),
        None,
        (None, "; ".join([cluster, *health.quorum_problems(quorum)])) if quorum else (None, ""),
    )


def _or_late(answer: object, late: T) -> T:
    """Pure: a read's answer, or ``late`` when it gave none by its deadline; any other failure is raised."""
    if isinstance(answer, TimeoutError):
        return late
    if isinstance(answer, Exception):
        raise answer
    return cast(T, answer)


def _fault_signs(
    inventory: Inventory,
    report: VerifyReport,
    options: VerifyOptions,
    views: dict[str, symptoms.HostView],
    budget: waits.Budget,
) -> tuple[symptoms.FaultSign, ...]:
    """The hosts' views judged with what the checks found, and (plaintext) every link timed from here."""
    fenced = [s.node for s in report.cluster.brokers if s.node and not s.registered] if report.cluster else []
    unreachable = [b.node for b in report.brokers if not b.reachable]
    plaintext, seconds = options.security is None, budget.left(symptoms.BOUND)
    disks = _disk_views(report.disks)  # either reading of a host's data disk that says full is judged
    views = disks | {node: symptoms.with_disk(view, disks.get(node)) for node, view in views.items()}
    return symptoms.named(inventory, views, options.external_port, plaintext, unreachable, fenced, seconds)


def _disk_views(disks: tuple[BrokerDisk, ...]) -> dict[str, symptoms.HostView]:
    """Pure: the log directories read after the brokers' checks, as views of the hosts' data disks (a host's own view
    may not have come in time, or may have been cut short by its broker stopping)."""
    return {
        d.node: symptoms.HostView({}, math.ceil(d.used_fraction * 100), d.size_bytes // 2**20)
        for d in disks
        if d.size_bytes and not d.error
    }


def _releases(
    manager: Engine, inventory: Inventory, nodes: list[SwarmNode], stack: DeployedStack, options: VerifyOptions
) -> health.KafkaReleases | None:
    """Each node's Kafka release and the finalized metadata.version; None when the engines cannot say."""
    try:
        security = (options.external_port, options.security)
        return health.kafka_releases(manager, inventory, stack.service, nodes, options.stack_name, security)
    except SwarmkitError:
        return None


@dataclass(frozen=True)
class _Swarm:
    """The swarm as verify read it: every engine, the nodes and the stack as one manager sees them, that manager,
    and (a stack with controllers) their containers."""

    engines: dict[str, EngineInfo | SwarmkitError]
    nodes: list[SwarmNode]
    stack: DeployedStack
    manager: Host  # the manager whose view was read: later reads of the swarm ask it too
    controllers: health.Controllers | None


def _swarm_and_controllers(
    inventory: Inventory, docker: DockerHosts, options: VerifyOptions, budget: waits.Budget, say: Say
) -> _Swarm:
    """Every engine, the swarm as the first manager that answers sees it and, for a stack with controllers, their
    containers.  The first manager (usually the active one) and the controllers are read while the engines are asked."""
    first = inventory.managers[0] if inventory.managers else None
    view_deadline = budget.until(ENGINE_BOUND + SWARM_BOUND)
    with (
        in_background(lambda: _swarm_view(first, docker, options, view_deadline) if first else None) as early_view,
        in_background(
            lambda: _controllers_by(inventory, docker, options, view_deadline) if _shared(inventory.stack.engine) else None
        ) as early_controllers,
    ):
        engines = engine_states(inventory, docker, budget.until(ENGINE_BOUND))
        say(f"reading the swarm and stack '{options.stack_name}' from {active_manager(inventory, engines).name}")
        nodes, stack, manager = _answering_view(inventory, engines, docker, options, budget, early_view)
        controllers = early_controllers.result()
    if not _shared(stack.engine):
        controllers = None
    elif controllers is None:  # the inventory names another engine than the deployed stack's
        controllers = _controllers_by(inventory, docker, options, budget.until(SWARM_BOUND))
    return _Swarm(engines, nodes, stack, manager, controllers)


def _shared(engine: str) -> bool:
    """Whether the engine's brokers form one cluster (with controllers)."""
    return engine_for(engine).SHARED_CLUSTER


def _answering_view(
    inventory: Inventory,
    engines: dict[str, EngineInfo | SwarmkitError],
    docker: DockerHosts,
    options: VerifyOptions,
    budget: waits.Budget,
    early: Future[tuple[list[SwarmNode], DeployedStack] | None],
) -> tuple[list[SwarmNode], DeployedStack, Host]:
    """The swarm as the first active manager that answers sees it, and that manager (the first one's view was asked
    early): a manager cut off from the others' raft quorum answers with an error, or not at all; the next one is
    asked then, or once those before it took ``MANAGER_HEDGE`` seconds, whichever comes first.  While
    the managers only say the swarm has no leader (an election after a partition heals), they are asked again."""
    active = [
        h for h in inventory.managers if isinstance(info := engines[h.name], EngineInfo) and info.swarm_state == SwarmState.ACTIVE
    ]
    deadline, asking = budget.until(SWARM_BOUND), active
    failed: list[SwarmkitError] = []  # each round's first failure: the one raised when the managers never answer

    def look() -> tuple[list[SwarmNode], DeployedStack, Host] | waits.NotYet:
        nonlocal asking
        failures: dict[str, SwarmkitError] = {}

        def view_of(host: Host) -> tuple[list[SwarmNode], DeployedStack, Host]:
            try:
                view = early.result() if host == inventory.managers[0] and asking is active else None
                return (*(view or _swarm_view(host, docker, options, deadline)), host)
            except SwarmkitError as error:
                failures[host.name] = error
                raise

        calls = [functools.partial(view_of, host) for host in asking]
        try:  # each call is bounded by the deadline itself: the grace lets its own error come first
            return fanout.first_success(calls, deadline + fanout.GRACE, hedge=MANAGER_HEDGE)
        except (SwarmkitError, TimeoutError):
            pass
        assert failures, "each manager's read raises its own error by the deadline"
        electing = [h for h in asking if h.name in failures and NO_SWARM_LEADER in failures[h.name].message]
        failed.append(next(failures[h.name] for h in asking if h.name in failures))
        if not electing:
            raise failed[-1]
        asking = electing  # a manager that did not answer is not waited on again
        return waits.NotYet()

    return waits.until(look, deadline - time.monotonic(), fail=lambda why: failed[-1])


def _controllers_by(inventory: Inventory, docker: DockerHosts, options: VerifyOptions, deadline: float) -> health.Controllers:
    """The controllers' containers as their managers' engines report them, by ``deadline``; when the engines do
    not answer by then, the controllers are named as not read."""
    answer = fanout.settle_by([lambda: health.controller_containers(inventory, docker, options.stack_name)], deadline)[0]
    managers = ", ".join(h.name for h in inventory.managers)
    return _or_late(answer, health.Controllers((), (f"the controllers' containers on {managers} were not read: {LATE}",)))


def _swarm_view(
    manager: Host, docker: DockerHosts, options: VerifyOptions, deadline: float
) -> tuple[list[SwarmNode], DeployedStack]:
    """The swarm's nodes and the broker service, as the manager sees them."""
    service_name = broker_service(options.stack_name)
    engine = docker[manager]
    with fanout.bounded() as pool:
        reading_nodes = pool.submit(dockerapi.swarm_nodes, engine)
        reading_service = pool.submit(dockerapi.service_state, engine, service_name)
        nodes, service = fanout.outcome(reading_nodes, deadline), fanout.outcome(reading_service, deadline)
    for answer in (nodes, service):
        if isinstance(answer, TimeoutError):
            raise VerifyError(
                f"reading the swarm: the manager {manager.name} did not answer in time",
                hint=f"check the Docker engine of {manager.name} ({manager.endpoint}); a busy manager answers later: raise --timeout",
            )
        if isinstance(answer, Exception):
            raise answer
    if service is None:
        raise VerifyError(
            f"stack '{options.stack_name}' is not deployed (no service {service_name})",
            hint="deploy it with: swarmkit up -i INVENTORY",
        )
    assert not isinstance(nodes, Exception) and not isinstance(service, Exception)  # raised above
    return nodes, DeployedStack(options.stack_name, service)


def _brokers_and_quorum(
    inventory: Inventory, docker: DockerHosts, swarm: _Swarm, options: VerifyOptions, budget: waits.Budget
) -> tuple[list[BrokerVerdict], health.Quorum | None]:
    """Each broker judged from here while the quorum is read (shared clusters), all bounded."""
    service, engines, controllers = swarm.stack.service, swarm.engines, swarm.controllers
    mode = service.env.get("SWARMKIT_ADVERTISE", "hostname")
    seconds = budget.left(max(BROKER_BOUND, PROBES_PER_BROKER * options.timeout))

    def judge(host: Host) -> BrokerVerdict:
        node = node_for(host, swarm.nodes, engines[host.name])
        tasks = [t for t in service.tasks if node and t.node_id == node.id]
        return _judge_node(host, engines[host.name], node, tasks, mode, options)

    deadline = time.monotonic() + seconds
    with fanout.bounded() as pool:
        judging = [pool.submit(judge, host) for host in inventory.hosts]
        if controllers is not None:  # read first (cheap), so a quorum read that does not answer in time still names them
            tool_seconds = max(1.0, seconds - QUORUM_MARGIN)
            reading = pool.submit(quorum_of, inventory, docker, service, options, controllers, tool_seconds)
        brokers = [_verdict_of(host, f, deadline, seconds) for host, f in zip(inventory.hosts, judging)]
        if controllers is None:
            return brokers, None
        quorum = fanout.outcome(reading, deadline)
    if isinstance(quorum, TimeoutError):
        return brokers, health.unread_quorum(
            controllers, f"the quorum read (a broker, else the tool in a controller) did not answer within {seconds:.0f}s"
        )
    if isinstance(quorum, Exception):
        raise quorum
    return brokers, quorum


def _verdict_of(host: Host, judging: Future[BrokerVerdict], deadline: float, seconds: float) -> BrokerVerdict:
    answer = fanout.outcome(judging, deadline)
    if isinstance(answer, TimeoutError):
        detail = f"checking the broker of {host.name} did not finish within {seconds:.0f}s"
        check = BrokerCheck(-1, "", False, False, False, detail, fix=f"see `swarmkit status` and the broker's log on {host.name}")
        return BrokerVerdict.of(host, "", "", check)
    if isinstance(answer, Exception):
        raise answer
    return answer


def quorum_of(
    inventory: Inventory,
    docker: DockerHosts,
    service: ServiceState,
    options: VerifyOptions,
    controllers: health.Controllers | None = None,
    seconds: float = health.QUORUM_TIMEOUT,
) -> health.Quorum:
    """A broker describes the quorum (one request, within one probe timeout); when none does, Kafka's quorum tool
    in a controller, on the controller port the brokers were given (``id@host:port,...`` or ``host:port,...``), in the
    time left."""
    deadline = time.monotonic() + seconds
    env = service.env
    voters = env.get("KAFKA_CONTROLLER_QUORUM_VOTERS") or env.get("KAFKA_CONTROLLER_QUORUM_BOOTSTRAP_SERVERS", "")
    port = voters.split(",")[0].rsplit(":", 1)[-1]
    if not port.isdigit():
        return health.Quorum(-1, error=f"the broker service has no controller quorum voters ({voters!r})")
    controllers = controllers or health.controller_containers(inventory, docker, options.stack_name)
    addresses = [(host.address, options.external_port) for host in inventory.hosts]
    try:
        return health.quorum_from_brokers(addresses, min(options.timeout, seconds), pki.by_address(options.security), controllers)
    except BrokerError:
        pass  # the tool in a controller answers without any broker
    command_config = internal_client_config().target if options.security else None
    left = max(1.0, deadline - time.monotonic())
    return health.read_quorum(inventory, docker, controllers, int(port), command_config, left)


def _cluster(
    inventory: Inventory,
    nodes: list[SwarmNode],
    brokers: list[BrokerVerdict],
    quorum: health.Quorum,
    options: VerifyOptions,
) -> tuple[ClusterHealth | None, str]:
    """The cluster-wide view, asked of the first broker that passed its own checks; without one, the error
    still says what the controllers' side showed (a paused controller, no leader)."""
    healthy = [b.advertised for b in brokers if b.ok]
    if not healthy:
        return None, "; ".join(
            ["no broker passed its checks, so the cluster's state cannot be read", *health.quorum_problems(quorum)]
        )
    names = {h.name for h in inventory.hosts}
    expected = {}
    for node in nodes:
        host_name, broker_id = host_of(node), broker_id_of(node)
        if host_name in names and broker_id is not None:
            expected[host_name] = broker_id
    try:
        return health.cluster_health_from(quorum, healthy[0], expected, options.timeout, options.security), ""
    except BrokerError as error:
        return None, "; ".join([error.message, *health.quorum_problems(quorum)])


def _lag(brokers: list[BrokerVerdict], options: VerifyOptions) -> tuple[tuple[PartitionLag, ...], str]:
    """Every consumer group's lag, asked of the brokers that passed their checks (none: nothing to ask)."""
    healthy = ",".join(b.advertised for b in brokers if b.ok)
    if not healthy:
        return (), ""
    try:
        return lag.consumer_lag(healthy, options.timeout, options.security), ""
    except BrokerError as error:
        return (), error.message


def _with_spark(report: VerifyReport, shared: bool, options: VerifyOptions) -> VerifyReport:
    """Real traffic through every broker; only once every broker passed the address checks."""
    if not all(b.ok for b in report.brokers):
        return replace(report, spark_error="skipped: some brokers failed")
    endpoints = [b.advertised for b in report.brokers]
    if shared:
        spec = TopicSpec(SPARK_TOPIC, SPARK_PARTITIONS_PER_BROKER * len(endpoints), min(3, len(endpoints)))
        admin.ensure_led_by_every_broker(endpoints[0], spec, options.timeout, options.security)
    else:
        admin.ensure_topics_on_each(endpoints, [TopicSpec(SPARK_TOPIC, SPARK_TANSU_PARTITIONS, 1)], options.timeout)
    report_path = Path(options.spark_report) if options.spark_report else None
    try:
        if options.spark_stream is not None:
            stream = spark_streaming.run_streaming_job(
                endpoints,
                SPARK_TOPIC,
                options.spark_stream,
                master=options.spark_master,
                report_path=report_path,
                security=options.security,
            )
            return replace(report, spark_stream=stream)
        spark = sparkjob.run_verify_job(
            endpoints,
            SPARK_TOPIC,
            options.spark_records,
            master=options.spark_master,
            report_path=report_path,
            security=options.security,
        )
    except spark_streaming.StreamingJobError as error:
        return replace(report, spark_stream=error.stream, spark_error=error.message)
    except sparkjob.SparkJobError as error:
        return replace(report, spark=error.report, spark_error=error.message)
    return replace(report, spark=spark)
