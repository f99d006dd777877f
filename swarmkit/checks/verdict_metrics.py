"""`swarmkit verify --every SECONDS --metrics-port P`: verify's client-side verdicts as Prometheus metrics.

What no broker can export about itself is how a client meets it: whether the address it advertises
resolves, answers and is the one swarmkit expects, how long a metadata request there takes, and what
the Spark job measured through it; and each consumer group's lag per partition, which verify reads through the
Admin API every round (the rule ConsumerLagGrowing watches it). verify runs here, on the client's side of the network, so the loop
runs here too (a service on the swarm would judge from inside it, where every address works) and serves
the last round's verdicts over HTTP in Prometheus's text format, for the server of `swarmkit metrics up
--verify-target HOST:PORT` to scrape. The text is built by a pure function; the server is the standard
library's (one thread per scrape, the page swapped whole after each round).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar

from swarmkit import fanout
from swarmkit.checks.health import BrokerShare
from swarmkit.checks.verify import BrokerVerdict, VerifyReport
from swarmkit.errors import SwarmkitError
from swarmkit.kafka.lag import PartitionLag
from swarmkit.traffic.spark import BrokerTraffic

PREFIX = "swarmkit_verify"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]
T = TypeVar("T")
Row = tuple[str, str, Callable[[T], "float | bool | None"]]  # a gauge's name, its help, an item's value


@dataclass(frozen=True)
class Round:
    """One verify run as the loop saw it: its report, or the error that stopped it."""

    report: VerifyReport | None
    error: str
    finished: float  # unix time
    seconds: float


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # gauge or counter
    help: str
    samples: tuple[tuple[Labels, float], ...]


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace('"', r"\"").replace("\n", r"\n")


def _value(value: float) -> str:
    """Every digit kept (a unix time in %g would lose its seconds), whole numbers without a fraction."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _format(family: Family) -> str:
    name = f"{PREFIX}_{family.name}"
    lines = [f"# HELP {name} {family.help}", f"# TYPE {name} {family.kind}"]
    for labels, value in family.samples:
        pairs = ",".join(f'{key}="{_escape(text)}"' for key, text in labels)
        lines.append(f"{name}{{{pairs}}} {_value(value)}" if pairs else f"{name} {_value(value)}")
    return "\n".join(lines)


def _gauges(items: Sequence[T], labels_of: Callable[[T], Labels], rows: Sequence[Row[T]]) -> Iterator[Family]:
    """One gauge per row, a sample per item: (name, help, the item's value or None to leave it out)."""
    for name, help_text, value_of in rows:
        samples = tuple((labels_of(item), float(value)) for item in items if (value := value_of(item)) is not None)
        yield Family(name, "gauge", help_text, samples)


def _broker_labels(broker: BrokerVerdict) -> Labels:
    return (("node", broker.node), ("advertised", broker.advertised), ("broker_id", str(broker.node_id)))


def _seconds(milliseconds: float | None) -> float | None:
    return None if milliseconds is None else milliseconds / 1000


BROKER_ROWS: tuple[Row[BrokerVerdict], ...] = (
    ("broker_ok", "1 when every check of the node's broker passed, from this client", lambda b: b.ok),
    ("broker_resolves", "1 when the advertised host name resolves here", lambda b: b.resolves),
    ("broker_reachable", "1 when the advertised address accepts a TCP connection from here", lambda b: b.reachable),
    ("broker_answers", "1 when Kafka at the advertised address answers metadata as itself", lambda b: b.metadata_ok),
    (
        "broker_metadata_latency_seconds",
        "a new client's metadata request at the advertised address",
        lambda b: _seconds(b.metadata_ms),
    ),
)
MATCH_ROW: Row[BrokerVerdict] = (
    "broker_advertised_match",
    "1 when the broker advertises the address swarmkit expects",
    lambda b: b.advertised == b.expected if b.expected else None,
)
SPARK_ROWS: tuple[Row[BrokerTraffic], ...] = (
    ("spark_ok", "1 when the Spark job read back every record it wrote through the broker", lambda t: t.ok),
    ("spark_produce_records_per_second", "records/s the Spark job wrote through the broker", lambda t: t.produce_records_per_s),
    ("spark_consume_records_per_second", "records/s the Spark job read back from the broker", lambda t: t.consume_records_per_s),
)
LATENCY_ROW: Row[tuple[BrokerTraffic, str]] = (
    "spark_latency_seconds",
    "produce-to-consume latency of the Spark job's records",
    lambda pair: _seconds(pair[0].latency_p50_ms if pair[1] == "0.5" else pair[0].latency_p99_ms),
)
LAG_ROWS: tuple[Row[PartitionLag], ...] = (
    ("consumer_lag", "records between a group's committed offset and the partition's log end", lambda p: p.lag),
    ("consumer_committed_offset", "the group's committed offset on the partition", lambda p: p.committed),
)
SHARE_ROWS: tuple[Row[BrokerShare], ...] = (
    ("partition_leaders", "partitions of user topics this broker leads", lambda s: s.leaders),
    ("partition_replicas", "replicas of user topics this broker holds", lambda s: s.replicas),
)


def _traffic_labels(traffic: BrokerTraffic) -> Labels:
    return (("broker", traffic.broker), ("broker_id", str(traffic.node_id)))


def _report_families(report: VerifyReport) -> Iterator[Family]:
    brokers = report.brokers
    yield from _gauges(brokers, _broker_labels, BROKER_ROWS)
    yield from _gauges(brokers, lambda b: (*_broker_labels(b), ("expected", b.expected)), (MATCH_ROW,))
    if report.spark is not None:
        traffic = report.spark.brokers
        yield from _gauges(traffic, _traffic_labels, SPARK_ROWS)
        quantiles = [(t, q) for t in traffic for q in ("0.5", "0.99")]
        yield from _gauges(quantiles, lambda pair: (*_traffic_labels(pair[0]), ("quantile", pair[1])), (LATENCY_ROW,))
    if report.cluster is not None:
        yield from _gauges(report.cluster.brokers, lambda s: (("broker_id", str(s.broker_id)), ("node", s.node)), SHARE_ROWS)
    yield from _gauges(report.lag, _lag_labels, LAG_ROWS)


def _lag_labels(lag: PartitionLag) -> Labels:
    return (("group", lag.group), ("topic", lag.topic), ("partition", str(lag.partition)))


def _round_families(last: Round, rounds: int, errors: int) -> Iterator[Family]:
    report = last.report
    yield Family(
        "up", "gauge", "1 when the last round ran to a report, 0 when it stopped on an error", (((), float(report is not None)),)
    )
    yield Family("ok", "gauge", "1 when the last round passed every check", (((), float(report is not None and report.ok)),))
    yield Family("problems", "gauge", "failed checks in the last round", (((), float(len(report.problems) if report else 1)),))
    yield Family("last_round_timestamp_seconds", "gauge", "when the last round finished", (((), last.finished),))
    yield Family("round_duration_seconds", "gauge", "how long the last round took", (((), last.seconds),))
    yield Family("rounds_total", "counter", "rounds run since the loop started", (((), float(rounds)),))
    yield Family("round_errors_total", "counter", "rounds that stopped on an error", (((), float(errors)),))


def exposition(last: Round, rounds: int, errors: int) -> str:
    """Pure: the page Prometheus scrapes. Per-broker series come only from a round that produced a report."""
    families: list[Family] = list(_round_families(last, rounds, errors))
    if last.report is not None:
        families += _report_families(last.report)
    return "\n".join(_format(f) for f in families if f.samples) + "\n"


# --- serving ------------------------------------------------------------------------------------


class VerdictServer(ThreadingHTTPServer):
    """Serves ``page`` at every path; the loop replaces it after each round."""

    daemon_threads = True
    page = b"# no round has finished yet\n"


class _Handler(BaseHTTPRequestHandler):
    server: VerdictServer

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        body = self.server.page
        self.send_response(200)
        self.send_header("Content-Type", CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Scrapes are not news: nothing on stderr."""


def start_server(address: str, port: int) -> VerdictServer:
    """Listen now (a taken port fails before the first round), answer from a background thread."""
    try:
        server = VerdictServer((address, port), _Handler)
    except OSError as error:
        raise SwarmkitError(
            f"cannot serve the verdicts on {address}:{port}: {error.strerror or error}",
            hint="choose another --metrics-port (or --metrics-address)",
        ) from None
    fanout.serve(server.serve_forever, "verdict-metrics")
    return server


# --- the loop -----------------------------------------------------------------------------------


def timed_round(run: Callable[[], VerifyReport]) -> Round:
    """One verify run; an expected failure (a manager that does not answer) is a round too, not the end."""
    started = time.monotonic()
    try:
        report, error = run(), ""
    except SwarmkitError as failure:
        report, error = None, failure.message
    return Round(report, error, time.time(), round(time.monotonic() - started, 3))


def summary(last: Round, number: int) -> str:
    if last.report is None:
        return f"round {number}: error after {last.seconds:.1f} s: {last.error}"
    problems: Sequence[str] = last.report.problems
    verdict = "ok" if last.report.ok else f"{len(problems)} problems: {'; '.join(problems)[:300]}"
    return f"round {number}: {verdict} ({last.seconds:.1f} s)"


def watch(
    run: Callable[[], VerifyReport],
    every: float,
    rounds: int | None,
    publish: Callable[[Round, int, int], None],
    stop: fanout.Event | None = None,
) -> Round:
    """Run a round every ``every`` seconds (start to start; a longer round starts the next at once), at most
    ``rounds`` times (None: until ``stop`` is set or the process is interrupted); each is published when done."""
    stop = stop or fanout.Event()
    number = errors = 0
    while True:
        started = time.monotonic()
        last = timed_round(run)
        number, errors = number + 1, errors + (last.report is None)
        publish(last, number, errors)
        if (rounds is not None and number >= rounds) or stop.wait(max(0.0, started + every - time.monotonic())):
            return last
