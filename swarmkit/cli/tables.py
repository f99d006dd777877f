"""What the commands show a person: rich tables for each report (JSON comes from each report's to_dict)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.table import Table
from rich.text import Text

from swarmkit.kafka.releases import METADATA_VERSION, metadata_name
from swarmkit.network import preflight
from swarmkit.security import acls
from swarmkit.swarm import bootstrap as swarm

if TYPE_CHECKING:
    from rich.console import Console

    from swarmkit.checks.diagnose import DiagnoseReport
    from swarmkit.checks.health import ClusterHealth
    from swarmkit.checks.status import ClusterStatus
    from swarmkit.checks.verify import VerifyReport
    from swarmkit.images.shipping import PushResult
    from swarmkit.network.preflight import Check, Failure, PortSpec, PreflightReport
    from swarmkit.ops.certs import RotateReport
    from swarmkit.ops.deploy import DeployResult
    from swarmkit.ops.rebalance import RebalanceResult
    from swarmkit.ops.roll import RollReport
    from swarmkit.ops.teardown import DownReport
    from swarmkit.ops.upgrade import UpgradeReport
    from swarmkit.ops.users import UserCheck
    from swarmkit.sandbox.status import SandboxStatus
    from swarmkit.swarm.bootstrap import SwarmResult
    from swarmkit.traffic.spark import SparkReport


def _table(title: str, columns: tuple[str, ...], **column_options: Any) -> Table:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, **column_options)
    return table


def _red(text: object) -> Text:
    """Shown as it is, in red (the consoles read no markup: every string they print is data)."""
    return Text(str(text), style="red")


def _mark(ok: bool) -> Text:
    return Text("yes", style="green") if ok else _red("no")


def print_sandbox(status: SandboxStatus, console: Console) -> None:
    if not status.exists:
        console.print(f"no sandbox '{status.name}'")
        return
    table = _table(
        f"sandbox '{status.name}' on {status.bridge} ({status.subnet})",
        ("host", "address", "engine", "engine pid", "swarm"),
    )
    for host in status.hosts:
        engine = host.engine_version or _red("not answering")
        table.add_row(host.name, host.address, engine, str(host.engine_pid), host.swarm_state)
    console.print(table)
    console.print(Text.assemble("registry: ", status.registry or _red("not running"), f"   inventory: {status.inventory_path}"))
    if status.firewall:
        console.print("firewall blocks: " + ", ".join(status.firewall))


def print_swarm(result: SwarmResult, console: Console) -> None:
    table = _table("swarm", ("host", "role", "action"))
    for action in result.actions:
        table.add_row(
            action.host, action.role, "already a member (unchanged)" if action.action == swarm.MEMBER else action.action
        )
    console.print(table)
    console.print("changed the swarm" if result.changed else "nothing to change: every host is already in this swarm")


def print_verify(report: VerifyReport, console: Console) -> None:
    console.print(_brokers_table(report))
    if report.cluster:
        _print_cluster(report.cluster, console)
    if report.cluster_error:
        console.print(_red(f"cluster: {report.cluster_error}"))
    if report.topics:
        topics = _table("topics", ("broker", "topic", "ok", "detail"))
        for topic in report.topics:
            topics.add_row(topic.broker, topic.topic, _mark(topic.ok), topic.detail)
        console.print(topics)
    if report.spark:
        _print_spark(report.spark, console)
    if report.spark_error:
        console.print(_red(f"Spark job: {report.spark_error}"))
    for change in report.changes:
        console.print(f"change: {change}")
    for fault in report.faults:
        console.print(_red(f"fault on {fault.node}: {fault.kind}: {fault.detail}"))
    if report.certificates:
        console.print(f"certificates: {report.certificates.text()}", highlight=False)
    if report.kafka:
        console.print(report.kafka.line(), highlight=False, soft_wrap=True)
    console.print(Text("verified: every broker is usable from here", style="green") if report.ok else _red("verification failed"))


def _brokers_table(report: VerifyReport) -> Table:
    table = _table(
        "brokers, as a client on this machine meets them",
        ("node", "advertised", "expected", "resolves", "reachable", "metadata", "task", "detail"),
        overflow="fold",
    )
    for broker in report.brokers:
        detail = "ok" if broker.ok else Text.assemble(_red(broker.detail), "\n", ("fix:", "yellow"), f" {broker.fix}")
        table.add_row(
            broker.node,
            broker.advertised or "-",
            broker.expected or "(HOSTNAME_COMMAND)",
            _mark(broker.resolves),
            _mark(broker.reachable),
            _mark(broker.metadata_ok),
            broker.task or "-",
            detail,
        )
    return table


SPARK_COLUMNS = (
    "broker",
    "produced",
    "consumed",
    "missing",
    "dupes",
    "checksum",
    "p50 ms",
    "p99 ms",
    "produce rec/s",
    "consume rec/s",
)


def _print_spark(report: SparkReport, console: Console) -> None:
    table = _table(
        f"Spark job through every broker (topic {report.topic}, master {report.master})", SPARK_COLUMNS, justify="right"
    )
    for row in report.brokers:
        table.add_row(
            row.broker,
            str(row.produced),
            str(row.consumed),
            str(row.missing),
            str(row.duplicates),
            _mark(row.checksum_ok),
            f"{row.latency_p50_ms:.1f}",
            f"{row.latency_p99_ms:.1f}",
            f"{row.produce_records_per_s:,.0f}",
            f"{row.consume_records_per_s:,.0f}",
        )
    console.print(table)
    console.print(
        f"Spark: start-up {report.spark_startup_s:.1f} s, traffic {report.traffic_s:.1f} s, "
        f"{report.records_per_s:,.0f} records/s end to end; report {report.report_path}"
    )


def _print_cluster(cluster: ClusterHealth, console: Console) -> None:
    quorum = cluster.quorum
    voters = {v.node_id: v for v in quorum.voters}
    table = _table("the cluster, as its controllers see it", ("broker", "node", "registered", "replicas", "leads"))
    for share in cluster.brokers:
        table.add_row(str(share.broker_id), share.node or "-", _mark(share.registered), str(share.replicas), str(share.leaders))
    console.print(table)
    lagging = {v.node_id for v in quorum.lagging}
    members = ", ".join(f"{node_id}{' (lagging)' if node_id in lagging else ''}" for node_id in sorted(voters))
    leader = str(quorum.leader) if quorum.leader >= 0 else _red("none")
    if quorum.error:
        console.print(_red(f"controller quorum: {quorum.error}"))
    else:
        console.print(Text.assemble("controller quorum: leader ", leader, f", voters {members}"))
    console.print(
        f"partitions: {len(cluster.offline)} offline, {len(cluster.under_replicated)} under-replicated, "
        f"{len(cluster.under_min_isr)} under min ISR"
    )
    for problem in cluster.problems:
        console.print(_red(f"cluster: {problem}"))
    for note in cluster.notes:
        console.print(Text.assemble(("note:", "yellow"), f" {note}"))


def print_deploy(result: DeployResult, console: Console) -> None:
    table = _table(
        f"stack '{result.stack}' ({result.engine}, {result.image}), advertising {result.advertise}",
        ("host", "node hostname", "broker id", "identity", "advertised"),
    )
    for node in result.nodes:
        broker_id = f"{node.broker_id} (new)" if node.new_id else str(node.broker_id)
        table.add_row(node.host, node.hostname, broker_id, node.identity, node.advertised or "-")
    console.print(table)
    if result.topics:
        topics = _table("topics", ("broker", "topic", "status", "detail"))
        for topic in result.topics:
            topics.add_row(topic.bootstrap, topic.name, topic.status, topic.detail)
        console.print(topics)
    for line in result.altered:
        console.print(f"changed live: {line}", highlight=False, markup=False)
    console.print(f"deployed in {result.deploy_s:.1f} s, every broker answering after {result.converge_s:.1f} s more")


def print_diagnosis(result: DiagnoseReport, console: Console) -> None:
    table = _table(
        f"brokers advertised by {result.bootstrap} (cluster {result.cluster_id})",
        ("broker", "advertised", "resolves", "reachable", "answers", "verdict"),
        overflow="fold",
    )
    checks = ([result.bootstrap_check] if result.bootstrap_check else []) + list(result.brokers)
    for check in checks:
        verdict = (
            check.detail
            if check.ok
            else Text.assemble(_red(check.detail), f"\ncause: {check.cause}\n", ("fix:", "yellow"), f" {check.fix}")
        )
        table.add_row(
            str(check.node_id),
            check.advertised,
            _mark(check.resolves),
            _mark(check.reachable),
            _mark(check.metadata_ok),
            verdict,
        )
    console.print(table)


STATUS_STYLE = {"ok": "green", "failed": "red", "note": "yellow"}


def print_preflight(report: PreflightReport, console: Console) -> None:
    """Print what passed and what failed; every failure row says what to do about it."""
    console.print(_engines_table(report))
    hosts = [e.host for e in report.engines if e.answered]
    if hosts:
        console.print(_ports_table(report, hosts))
    if report.failures:
        console.print(_failures_table(report.failures))
        console.print(
            Text.assemble(_red("preflight failed"), f": {len(report.failures)} failed checks ({report.duration_s:.1f} s)")
        )
    else:
        console.print(Text.assemble(("preflight passed", "green"), f": {len(report.checks)} checks ({report.duration_s:.1f} s)"))


def _engines_table(report: PreflightReport) -> Table:
    table = _table("Engines", ("host", "engine", "swarm", "memory", "result"))
    by_host: dict[str, list[Check]] = {}
    for check in report.checks:
        if check.check in ("engine", "memory", "probe"):
            by_host.setdefault(check.to, []).append(check)
    for engine in report.engines:
        checks = by_host.get(engine.host, [])
        failed = [c.detail for c in checks if c.status == "failed"]
        result = _red("; ".join(failed)) if failed else Text("ok", style="green")
        if not engine.answered:
            table.add_row(engine.host, _red("no answer"), "", "", result)
            continue
        swarm = engine.swarm_state + (f" ({engine.swarm_cluster_id[:12]})" if engine.swarm_cluster_id else "")
        table.add_row(engine.host, engine.version, swarm, f"{engine.memory_bytes / preflight.GIB:.1f} GiB", result)
    return table


def _cell(port: PortSpec, host: str, checks: list[Check]) -> Text:
    """One destination host and port: free and reachable from everyone, or who is in the way."""
    mine = [c for c in checks if c.to == host and (c.port, c.protocol) == (port.port, port.protocol)]
    if not mine:
        return Text("-", style="dim")
    held = next((c for c in mine if c.check == "port_free" and c.status != "ok"), None)
    if held and held.status == "failed":
        return _red("in use")
    blocked = [c.from_ for c in mine if c.check == "reachable" and c.status == "failed"]
    if blocked:
        return _red(f"blocked from {', '.join(blocked)}")
    if held:
        return Text(held.detail, style="yellow")
    return Text("ok", style="green")


def _ports_table(report: PreflightReport, hosts: list[str]) -> Table:
    table = Table(title="Ports (to each host, from every other host)")
    table.add_column("port")
    table.add_column("for")
    for host in hosts:
        table.add_column(host)
    checks = [c for c in report.checks if c.port is not None]
    for port in report.ports:
        table.add_row(port.key, port.purpose, *(_cell(port, host, checks) for host in hosts))
    return table


def _failures_table(failures: tuple[Failure, ...]) -> Table:
    """Failures that share a fix are one row, so a blocked port reads as one problem."""
    table = _table("What to do", ("check", "from", "to", "port", "detail", "fix"), overflow="fold")
    table.show_lines = True
    groups: dict[tuple, list[Failure]] = {}
    for failure in failures:
        groups.setdefault((failure.check, failure.to, failure.port, failure.protocol, failure.fix), []).append(failure)
    for (check, to, port, protocol, fix), members in groups.items():
        sources = ", ".join(dict.fromkeys(f.from_ for f in members if f.from_))
        details = "; ".join(dict.fromkeys(f.detail for f in members))
        table.add_row(_red(check), sources, to, f"{port}/{protocol}" if port else "", details, fix)
    return table


# --- day-2 operations: status, roll, down ---


def print_status(status: ClusterStatus, console: Console) -> None:
    nodes = _table(
        f"stack '{status.stack}' ({status.engine}): nodes",
        ("host", "hostname", "role", "state", "availability", "address", "broker id"),
    )
    for node in status.nodes:
        state = node.state if node.state == "ready" else _red(node.state)
        nodes.add_row(node.host or "-", node.hostname, node.role, state, node.availability, node.address, _id(node.broker_id))
    console.print(nodes)
    brokers = _table(
        "brokers", ("id", "node", "advertised", "registered", "task", "running since (UTC)", "Kafka", "image", "container")
    )
    for broker in status.brokers:
        task = broker.task if broker.task == "running" else _red(broker.task)
        advertised = broker.advertised or "-"
        brokers.add_row(
            _id(broker.broker_id),
            broker.node,
            advertised,
            _mark(broker.registered),
            task,
            broker.since,
            broker.kafka_version or "-",
            broker.image,
            broker.container_id,
        )
    console.print(brokers)
    if status.quorum is not None:
        _print_controllers(status, console)
    topics = _table("topics", ("topic", "partitions", "replicas", "under-replicated", "offline", "under min ISR"))
    for topic in status.topics:
        counts = [_count(topic.under_replicated), _count(topic.offline), _count(topic.under_min_isr)]
        topics.add_row(topic.topic, str(topic.partitions), str(topic.replication_factor), *counts)
    console.print(topics)
    _print_lag_and_disks(status, console)
    if status.swarm_error:
        console.print(_red(f"swarm: {status.swarm_error}"))
    if status.kafka_error:
        console.print(_red(f"brokers: {status.kafka_error}"))
    for fault in status.faults:
        console.print(_red(f"fault on {fault.node}: {fault.kind}: {fault.detail}"))
    if status.certificates:
        console.print(f"certificates: {status.certificates.text()}", highlight=False)
    console.print(f"read in {status.read_s:.2f} s")


def _print_lag_and_disks(status: ClusterStatus, console: Console) -> None:
    if status.lag:
        lag = _table("consumer lag", ("group", "topic", "partitions", "lag (records)"))
        for group in status.lag:
            lag.add_row(group.group, group.topic, str(group.partitions), str(group.lag))
        console.print(lag)
    if status.lag_error:
        console.print(_red(f"consumer lag: {status.lag_error}"))
    if status.disks:
        disks = _table("log directories", ("node", "log directory", "free", "file system", "full"))
        mib = 1024 * 1024
        for d in status.disks:
            if d.error:
                disks.add_row(d.node, _red(d.error))
                continue
            cells = [f"{d.log_dir_bytes / mib:,.1f} MiB", f"{d.free_bytes / mib:,.1f} MiB", f"{d.size_bytes / mib:,.1f} MiB"]
            disks.add_row(d.node, *cells, f"{d.used_fraction:.0%}")
        console.print(disks)


def _id(broker_id: int | None) -> str:
    return "-" if broker_id is None else str(broker_id)


def _count(value: int) -> str | Text:
    return "0" if not value else _red(value)


def _print_controllers(status: ClusterStatus, console: Console) -> None:
    quorum = status.quorum
    assert quorum is not None
    members = {member.node_id: member for member in (*quorum.voters, *quorum.observers)}
    versions = dict(status.controller_versions)
    table = _table("controllers (KRaft quorum)", ("id", "manager", "status", "lag", "Kafka"))
    for node_id, host in status.controllers:
        member = members.get(node_id)
        table.add_row(
            str(node_id),
            host,
            member.status if member else _red("not in the quorum now"),
            str(member.lag) if member else "-",
            versions.get(node_id) or "-",
        )
    console.print(table)
    console.print(f"finalized metadata.version: {status.metadata_version or '(not read)'}", highlight=False)
    if quorum.error:
        console.print(_red(f"controllers: {quorum.error}"))
        return
    voters = ", ".join(str(v.node_id) for v in sorted(quorum.voters, key=lambda v: v.node_id))
    observers = ", ".join(str(o.node_id) for o in sorted(quorum.observers, key=lambda o: o.node_id)) or "none"
    leader = str(quorum.leader) if quorum.leader >= 0 else _red("none")
    console.print(Text.assemble("quorum leader: ", leader, f"; voters: {voters}; observers: {observers}"))


def print_roll(report: RollReport, console: Console) -> None:
    table = _table(
        f"roll of stack '{report.stack}', one broker at a time",
        ("node", "broker id", "old container", "new container", "seconds", "status"),
    )
    for broker in report.brokers:
        status = Text("back, registered, in sync", style="green") if broker.ok else _red(broker.detail)
        table.add_row(
            broker.node, str(broker.broker_id), broker.old_container, broker.new_container, f"{broker.seconds:.1f}", status
        )
    for node in report.not_rolled:
        table.add_row(node, "", "", "", "", Text("not rolled (still serving)", style="yellow"))
    console.print(table)
    change = ([f"image {report.image}"] if report.image else []) + [f"{key}={value}" for key, value in report.env.items()]
    console.print(f"spec change: {', '.join(change)}" if change else "restart only (same spec)")
    print_leaders(report, console)
    console.print(f"rolled in {report.total_s:.1f} s" if report.ok else _red("roll stopped"))


def _spread_text(spread: dict[int, int]) -> str:
    return " ".join(f"{broker}:{count}" for broker, count in sorted(spread.items())) or "-"


def print_leaders(report: RollReport, console: Console) -> None:
    """Partitions led per broker before the roll and after its preferred-leader election."""
    if report.leaders_before or report.leaders_after:
        console.print(
            f"leaders per broker (id:partitions): before {_spread_text(report.leaders_before)}, "
            f"after {_spread_text(report.leaders_after)}",
            highlight=False,
            soft_wrap=True,
        )
    for refused in report.election:
        console.print(Text(f"preferred-leader election: {refused}", style="yellow"), soft_wrap=True)


def print_upgrade(report: UpgradeReport, console: Console) -> None:
    """Controllers moved, the brokers' roll, the feature levels raised."""
    console.print(
        f"Kafka {', '.join(report.before) or '?'} -> {report.target} (image {report.image})", highlight=False, soft_wrap=True
    )
    console.print(f"controllers moved: {', '.join(report.controllers) or 'none'}", highlight=False)
    if report.brokers is not None:
        print_roll(report.brokers, console)
    for name, (old, new) in report.finalized.items():
        shown = (metadata_name(old), metadata_name(new)) if name == METADATA_VERSION else (str(old), str(new))
        console.print(f"finalized {name}: {shown[0]} -> {shown[1]}", highlight=False)
    if report.ok:
        console.print(f"done in {report.total_s:.1f} s" + ("" if report.finalized else "; nothing finalized"))


def print_rotation(report: RotateReport, console: Console) -> None:
    for step in report.steps:
        title = f"step {step.step}: {step.what}" if step.step else step.what
        brokers = f"{len(step.brokers.brokers)} broker(s) rolled" if step.brokers.ok else "broker roll stopped"
        controllers = f"controllers restarted: {', '.join(step.controllers) or 'none'}"
        console.print(f"{title}: {brokers}, {controllers}, {step.seconds:.1f} s", highlight=False, soft_wrap=True)
    console.print(report.expiry.text(), highlight=False, soft_wrap=True)
    console.print(f"rotated in {report.total_s:.1f} s" if report.ok else _red("rotation stopped: run it again to resume"))


def print_down(report: DownReport, console: Console) -> None:
    removed = ", ".join(report.removed_services) or "nothing was deployed"
    console.print(f"removed: {removed}", highlight=False)
    if report.leftovers:
        console.print(f"removed what an interrupted down left: {', '.join(report.leftovers)}", highlight=False)
    if report.removed_services:
        console.print(
            f"brokers stopped in {report.brokers_gone_s:.1f} s; every container of the stack gone after {report.total_s:.1f} s"
        )
    if not report.purged:
        console.print("kept: data and identity volumes, broker ids, cluster id: `swarmkit up` brings the same cluster back")
        return
    for host, volumes in report.volumes.items():
        console.print(f"{host}: removed volumes {', '.join(volumes) or '(none)'}", highlight=False)
    for node, labels in report.labels.items():
        console.print(f"{node}: removed labels {', '.join(labels)}", highlight=False)
    if report.shared_with:
        console.print(f"kept: the nodes' broker ids, which stacks {', '.join(report.shared_with)} still use", highlight=False)


def print_rebalance(result: RebalanceResult, console: Console) -> None:
    table = _table(
        "replicas and leaders per broker, over the rebalanced topics", ("broker", "replicas", "leaders"), justify="right"
    )
    for broker in sorted(result.replicas):
        table.add_row(str(broker), str(result.replicas[broker]), str(result.leaders.get(broker, 0)))
    console.print(table)
    moved = ", ".join(f"{m.topic}-{m.partition}" for m in result.moves) or "none (already balanced)"
    console.print(f"moved: {moved}; {result.total_s:.1f} s", highlight=False)
    for refused in result.election_refused:
        console.print(_red(f"preferred leader not elected: {refused}"))


def print_push(result: PushResult, console: Console) -> None:
    table = _table(f"{result.image} on every server", ("host", "action", "seconds"))
    for delivery in result.deliveries:
        table.add_row(delivery.host, delivery.action, f"{delivery.seconds:.1f}")
    console.print(table)
    if result.built_here:
        console.print(f"built {result.image} on this machine first", highlight=False)


def print_user_check(check: UserCheck, console: Console) -> None:
    """``users check``: the login's verdict, then what the user may do on each topic."""
    console.print(Text.assemble(f"user {check.user}, grants: ", acls.describe(check.grants)), soft_wrap=True)
    if check.login_error:
        console.print(Text.assemble(("login refused: ", "red"), check.login_error), soft_wrap=True)
    else:
        table = _table(f"What {check.user} may do", ("topic", "produce", "consume", "verdict"))
        for access in check.topics:
            verdict = Text(access.verdict) if access.produce or access.consume else _red(access.verdict)
            table.add_row(Text(access.topic), _mark(access.produce), _mark(access.consume), verdict)
        console.print(table)
    if check.fix:
        console.print(Text.assemble(("fix: ", "yellow"), check.fix), soft_wrap=True)
