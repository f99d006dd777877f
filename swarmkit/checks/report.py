"""`swarmkit verify --report FILE.html`: one self-contained page to look at instead of tables to read.

The cluster map (every node, its broker and advertised address, its controller, the verdicts), the
Spark job's per-broker throughput and latency, the metadata latency verify measured itself and the
partition-leader spread, each consumer group's lag and each broker's log directory and free space, drawn as inline SVG (``swarmkit.checks.charts``): no script, no CDN, nothing
fetched when it opens. ``render`` is pure; every text that comes from the cluster or the user is escaped.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any

from swarmkit.checks import health
from swarmkit.checks.charts import Series, bar_chart
from swarmkit.checks.verify import BrokerVerdict, VerifyReport
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory
from swarmkit.kafka import lag
from swarmkit.stack.engines import engine_for

PASS, FAIL, NONE = "#2e7d32", "#c62828", "#757575"
NODE_WIDTH, NODE_HEIGHT, NODE_GAP, PER_ROW = 220, 118, 14, 3


@dataclass(frozen=True)
class MapNode:
    """A server of the inventory as the map draws it."""

    name: str
    address: str
    role: str
    controller: int | None = None  # the node id of the controller it runs


@dataclass(frozen=True)
class ClusterLayout:
    stack: str
    nodes: tuple[MapNode, ...]


def layout_of(inventory: Inventory, docker: DockerHosts, stack: str) -> ClusterLayout:
    """The servers, and where the controllers run: the set the managers keep (after `replace-node` a controller
    runs on a manager that was not one of the first), for engines with controllers."""
    shared = engine_for(inventory.stack.engine).SHARED_CLUSTER
    kept = health.kept_controllers(inventory, docker, stack) if shared else None
    controller = {c.host: c.node_id for c in kept.controllers} if kept else {}
    nodes = tuple(MapNode(h.name, h.address, h.role, controller.get(h.name)) for h in inventory.hosts)
    return ClusterLayout(stack, nodes)


# --- the cluster map ----------------------------------------------------------------------------


def _controller_line(node: MapNode, report: VerifyReport) -> str:
    if node.controller is None:
        return ""
    voters = {v.node_id: v.status for v in report.cluster.quorum.voters} if report.cluster else {}
    return f"controller {node.controller}" + (f" ({voters[node.controller]})" if node.controller in voters else "")


def _node_lines(node: MapNode, broker: BrokerVerdict | None, report: VerifyReport) -> list[str]:
    lines = [f"{node.role}, {node.address}"]
    if broker is None:
        lines.append("no broker verdict")
    else:
        who = f"broker {broker.node_id}" if broker.node_id >= 0 else "broker"
        lines.append(f"{who}: {'ok' if broker.ok else 'FAILING'}")
        lines.append(f"advertises {broker.advertised or '-'}")
        if broker.expected and broker.expected != broker.advertised:
            lines.append(f"expected {broker.expected}")
    return [*lines, _controller_line(node, report)]


def _node_box(index: int, node: MapNode, broker: BrokerVerdict | None, report: VerifyReport) -> str:
    x = (index % PER_ROW) * (NODE_WIDTH + NODE_GAP)
    y = (index // PER_ROW) * (NODE_HEIGHT + NODE_GAP)
    colour = NONE if broker is None else PASS if broker.ok else FAIL
    verdict = "none" if broker is None else "ok" if broker.ok else "failing"
    texts = "".join(
        f'<text x="{x + 10}" y="{y + 42 + row * 16}" class="node-line">{escape(line)}</text>'
        for row, line in enumerate(_node_lines(node, broker, report))
        if line
    )
    return (
        f'<g class="node" data-node="{escape(node.name)}" data-verdict="{verdict}">'
        f'<rect x="{x}" y="{y}" width="{NODE_WIDTH}" height="{NODE_HEIGHT}" rx="8" fill="#fafafa" stroke="{colour}" '
        f'stroke-width="3"/><rect x="{x}" y="{y}" width="{NODE_WIDTH}" height="24" rx="8" fill="{colour}"/>'
        f'<text x="{x + 10}" y="{y + 17}" class="node-name">{escape(node.name)}</text>{texts}</g>'
    )


def cluster_map(layout: ClusterLayout, report: VerifyReport) -> str:
    """One box per server: its broker's verdict as the colour, what it advertises, its controller."""
    brokers = {b.node: b for b in report.brokers}
    rows = max(1, -(-len(layout.nodes) // PER_ROW))
    width = PER_ROW * (NODE_WIDTH + NODE_GAP)
    height = rows * (NODE_HEIGHT + NODE_GAP)
    boxes = "".join(_node_box(i, node, brokers.get(node.name), report) for i, node in enumerate(layout.nodes))
    return (
        f'<svg class="map" role="img" aria-label="cluster map" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">{boxes}</svg>'
    )


# --- sections -----------------------------------------------------------------------------------


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{escape(str(cell))}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _note(text: str) -> str:
    return f'<p class="note">{escape(text)}</p>'


def _section(title: str, *parts: str) -> str:
    return f"<section><h2>{escape(title)}</h2>{''.join(parts)}</section>"


def _verdicts(report: VerifyReport) -> str:
    rows = [
        (b.node, b.node_id if b.node_id >= 0 else "-", b.advertised or "-", b.expected or "-", b.task or "-")
        + ("ok" if b.ok else "FAILING", b.detail + (f" | fix: {b.fix}" if b.fix else ""))
        for b in report.brokers
    ]
    return _table(("node", "broker", "advertised", "expected", "task", "verdict", "detail"), rows)


def _spark_charts(report: VerifyReport) -> list[str]:
    """The job's per-broker figures, or a plain statement of why there are none."""
    if report.spark is None:
        if report.spark_stream is not None:  # the streaming mode measures the stream as a whole, not per broker
            return [_note(f"No per-broker figures in the streaming mode. {report.spark_stream.summary()}")]
        why = f": {report.spark_error}" if report.spark_error else " (run swarmkit verify --spark for these charts)."
        return [_note("The Spark job did not run" + why)]
    brokers = report.spark.brokers
    labels = [b.broker for b in brokers]
    throughput = (
        Series("produce", tuple(b.produce_records_per_s for b in brokers), "#1565c0"),
        Series("consume", tuple(b.consume_records_per_s for b in brokers), "#6a1b9a"),
    )
    latency = (
        Series("p50", tuple(b.latency_p50_ms for b in brokers), "#00838f"),
        Series("p99", tuple(b.latency_p99_ms for b in brokers), "#ef6c00"),
    )
    spark = report.spark
    head = f"topic {spark.topic}, master {spark.master}, {spark.records_per_broker:,} records per broker"
    parts = [_note(head), "<h3>throughput</h3>", bar_chart("throughput per broker", labels, throughput, "records/s")]
    parts += ["<h3>produce-to-consume latency</h3>", bar_chart("latency per broker", labels, latency, "ms")]
    return parts + ([_note(f"Spark job: {report.spark_error}")] if report.spark_error else [])


def _metadata_chart(report: VerifyReport) -> str:
    labels = [b.advertised or b.node for b in report.brokers]
    values = tuple(b.metadata_ms for b in report.brokers)
    return bar_chart("metadata latency", labels, [Series("metadata request", values, "#455a64")], "ms")


def _leader_spread(report: VerifyReport) -> list[str]:
    if report.cluster is None:
        why = report.cluster_error or "this engine's brokers are separate clusters: there is no shared partition leadership"
        return [_note(f"No partition spread: {why}")]
    shares = report.cluster.brokers
    labels = [f"broker {s.broker_id}" + (f" ({s.node})" if s.node else "") for s in shares]
    series = (
        Series("leaders", tuple(float(s.leaders) for s in shares), "#2e7d32"),
        Series("replicas", tuple(float(s.replicas) for s in shares), "#9e9d24"),
    )
    note = _note("Partitions of the user's topics (internal topics left out).")
    return [note, bar_chart("partition leaders per broker", labels, series, "partitions")]


def _lag_section(report: VerifyReport) -> list[str]:
    """Each consumer group's lag per topic: a bar each, and the partitions in a table."""
    if not report.lag:
        return [
            _note(f"No consumer lag read: {report.lag_error}" if report.lag_error else "No consumer group has committed offsets.")
        ]
    groups = lag.by_topic(report.lag)
    labels = [f"{g.group} / {g.topic}" for g in groups]
    chart = bar_chart(
        "consumer lag per group and topic", labels, [Series("lag", tuple(float(g.lag) for g in groups), "#ad1457")], "records"
    )
    rows = [(p.group, p.topic, p.partition, p.committed, p.end, p.lag) for p in report.lag]
    note = _note("Committed offset against the log end, per partition (the Admin API); the alert ConsumerLagGrowing watches it.")
    return [note, chart, _table(("group", "topic", "partition", "committed", "log end", "lag"), rows)]


def _disk_section(report: VerifyReport) -> list[str]:
    """Each broker's log directory and the file system under it."""
    if not report.disks:
        return [_note("No log directory read (an engine without one).")]
    labels = [d.node for d in report.disks]
    mib = 1024 * 1024
    series = (
        Series("log directory", tuple(d.log_dir_bytes / mib if not d.error else None for d in report.disks), "#5d4037"),
        Series("free", tuple(d.free_bytes / mib if not d.error else None for d in report.disks), "#558b2f"),
    )
    rows = [
        (
            d.node,
            f"{d.log_dir_bytes / mib:,.1f}",
            f"{d.free_bytes / mib:,.1f}",
            f"{d.size_bytes / mib:,.1f}",
            f"{d.used_fraction:.0%}",
            d.error,
        )
        for d in report.disks
    ]
    table = _table(("node", "log directory MiB", "free MiB", "file system MiB", "full", "error"), rows)
    return [bar_chart("log directory and free space per broker", labels, series, "MiB"), table]


def _problems(report: VerifyReport) -> str:
    if report.ok:
        return '<p class="verdict ok">Every broker is usable from the machine that ran verify.</p>'
    items = "".join(f"<li>{escape(problem)}</li>" for problem in report.problems)
    return f'<p class="verdict failing">Verification failed:</p><ul class="problems">{items}</ul>'


STYLE = """
body{font-family:system-ui,sans-serif;margin:24px;color:#212121;max-width:1100px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:28px}h3{font-size:15px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;
vertical-align:top}th{background:#f5f5f5}.note{color:#555;font-size:13px}.verdict{font-weight:bold;font-size:16px}
.ok{color:#2e7d32}.failing{color:#c62828}svg text{font-family:system-ui,sans-serif}.label,.legend,.node-line{font-size:12px}
.value,.missing{font-size:11px;fill:#424242}.node-name{font-size:14px;font-weight:bold;fill:#fff}
"""


def render(report: VerifyReport, layout: ClusterLayout, generated: str) -> str:
    """The whole page, one string (no external resource: it opens offline and can be mailed)."""
    title = f"swarmkit verify: stack {layout.stack}"
    body = [
        f"<h1>{escape(title)}</h1>",
        _note(f"generated {generated}"),
        _problems(report),
        _section(
            "cluster map", cluster_map(layout, report), _verdicts(report), _note(report.kafka.line()) if report.kafka else ""
        ),
        _section("per-broker throughput and latency (Spark job)", *_spark_charts(report)),
        _section("metadata latency (verify's own request to each advertised address)", _metadata_chart(report)),
        _section("partition-leader spread", *_leader_spread(report)),
        _section("consumer lag", *_lag_section(report)),
        _section("disk: each broker's log directory", *_disk_section(report)),
        _section(
            "topics",
            _table(
                ("broker", "topic", "ok", "detail"),
                [(t.broker, t.topic, "ok" if t.ok else "FAILING", t.detail) for t in report.topics],
            ),
        ),
        _section("changes since the last passing run", "".join(_note(c) for c in report.changes) or _note("none")),
    ]
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>{''.join(body)}</body></html>\n"
    )


def outputs(report: str | None) -> tuple[Path | None, str | None]:
    """``--report``: FILE.html is the page, with the Spark job's JSON beside it (FILE.json); any other name is
    the job's JSON alone, as before there was a page."""
    if report is None:
        return None, None
    path = Path(report)
    if path.suffix.lower() in (".html", ".htm"):
        return path, str(path.with_suffix(".json"))
    return None, report


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def write(path: Path, report: VerifyReport, layout: ClusterLayout, generated: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(report, layout, generated), encoding="utf-8")
    return path


# --- a recorded report (`verify --json`) back into a VerifyReport ---------------------------------


def _optional(kind: Any) -> bool:
    return typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in typing.get_args(kind)


def _decode(kind: Any, value: Any) -> Any:
    """A value of ``to_dict``'s output as ``kind``: dataclasses, tuples, optionals; the rest as it is.
    A None where the field takes none (``to_dict`` writes an empty message as None) leaves its default."""
    if _optional(kind):
        options = [k for k in typing.get_args(kind) if k is not type(None)]
        return None if value is None else _decode(options[0], value)
    origin = typing.get_origin(kind)
    if origin is tuple:
        item = typing.get_args(kind)[0]
        return tuple(_decode(item, v) for v in value)
    if isinstance(kind, type) and is_dataclass(kind):
        hints = typing.get_type_hints(kind)
        known = {f.name for f in fields(kind) if f.init}
        given = {k: v for k, v in value.items() if k in known and (v is not None or _optional(hints[k]))}
        return kind(**{k: _decode(hints[k], v) for k, v in given.items()})
    return value


def report_from_dict(data: dict[str, Any]) -> VerifyReport:
    """What `swarmkit verify --json` printed, as the report it came from (to draw a recorded run again)."""
    return typing.cast(VerifyReport, _decode(VerifyReport, data))
