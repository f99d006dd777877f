"""verify's verdicts in Prometheus's text format, the loop that refreshes them and the server that serves them."""

from __future__ import annotations

import re
import threading
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swarmkit.checks import verdict_metrics
from swarmkit.checks.verdict_metrics import Round
from swarmkit.cli.app import app
from swarmkit.errors import SwarmkitError, VerifyError
from tests.unit.checks.test_report import recorded

SAMPLE = re.compile(r"^(swarmkit_verify_[a-z_]+)(?:\{(.*)\})? (\S+)$")


def samples(text: str) -> dict[tuple[str, str], float]:
    """(name, labels) -> value, every line checked against the text format."""
    found = {}
    for line in text.splitlines():
        if line.startswith("# "):
            assert re.match(r"^# (HELP|TYPE) swarmkit_verify_[a-z_]+ ", line), line
            continue
        match = SAMPLE.match(line)
        assert match, line
        found[(match[1], match[2] or "")] = float(match[3])
    return found


def test_every_verdict_of_a_recorded_round_is_a_series() -> None:
    text = verdict_metrics.exposition(Round(recorded(), "", 1795651234.567, 1.5), rounds=3, errors=1)
    got = samples(text)
    broker = 'node="hvc2",advertised="hvc2:9094",broker_id="2"'
    assert got[("swarmkit_verify_broker_reachable", broker)] == 1
    assert got[("swarmkit_verify_broker_advertised_match", broker + ',expected="hvc2:9094"')] == 1
    assert got[("swarmkit_verify_broker_metadata_latency_seconds", broker)] == 0.6143
    spark = 'broker="hvc1:9094",broker_id="1"'
    assert got[("swarmkit_verify_spark_produce_records_per_second", spark)] == 1960
    assert got[("swarmkit_verify_spark_latency_seconds", spark + ',quantile="0.99"')] == 17.16
    assert got[("swarmkit_verify_partition_leaders", 'broker_id="1",node="hvc1"')] == 2
    assert got[("swarmkit_verify_ok", "")] == 1 and got[("swarmkit_verify_rounds_total", "")] == 3
    assert "swarmkit_verify_last_round_timestamp_seconds 1795651234.567\n" in text
    assert got[("swarmkit_verify_consumer_lag", 'group="billing",topic="orders",partition="0"')] == 250
    assert got[("swarmkit_verify_consumer_committed_offset", 'group="audit",topic="orders",partition="0"')] == 1450


def test_a_broker_that_advertises_the_wrong_address_is_zero_there() -> None:
    report = recorded()
    moved = replace(report.brokers[0], advertised="10.0.0.9:9094", fix="advertise hvc1", metadata_ms=None)
    got = samples(verdict_metrics.exposition(Round(replace(report, brokers=(moved,)), "", 1.0, 1.0), 1, 0))
    labels = 'node="hvc1",advertised="10.0.0.9:9094",broker_id="1"'
    assert got[("swarmkit_verify_broker_advertised_match", labels + ',expected="hvc1:9094"')] == 0
    assert got[("swarmkit_verify_broker_ok", labels)] == 0 and got[("swarmkit_verify_ok", "")] == 0
    assert not any(name == "swarmkit_verify_broker_metadata_latency_seconds" for name, _ in got)


def test_a_round_that_stopped_on_an_error_has_no_broker_series() -> None:
    got = samples(verdict_metrics.exposition(Round(None, "the manager does not answer", 1.0, 15.0), 4, 2))
    assert got[("swarmkit_verify_up", "")] == 0 and got[("swarmkit_verify_round_errors_total", "")] == 2
    assert not any(name.startswith(("swarmkit_verify_broker", "swarmkit_verify_spark")) for name, _ in got)


def test_label_values_are_escaped() -> None:
    report = recorded()
    odd = replace(report.brokers[0], node='a"b\\c\nd')
    text = verdict_metrics.exposition(Round(replace(report, brokers=(odd,), spark=None), "", 1.0, 1.0), 1, 0)
    assert 'node="a\\"b\\\\c\\nd"' in text
    samples(text)


def test_the_loop_runs_its_rounds_and_keeps_going_after_an_error() -> None:
    outcomes = iter([recorded(), VerifyError("manager down"), recorded()])

    def run():
        outcome = next(outcomes)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    published: list[tuple[bool, int, int]] = []
    last = verdict_metrics.watch(run, 0.0, 3, lambda r, n, e: published.append((r.report is not None, n, e)))
    assert published == [(True, 1, 0), (False, 2, 1), (True, 3, 1)] and last.report is not None


def test_the_loop_stops_when_told_between_rounds() -> None:
    stop, count = threading.Event(), []

    def publish(last: Round, number: int, errors: int) -> None:
        count.append(number)
        stop.set()

    verdict_metrics.watch(recorded, 3600.0, None, publish, stop)
    assert count == [1]


def test_the_server_answers_with_the_last_page() -> None:
    server = verdict_metrics.start_server("127.0.0.1", 0)
    try:
        server.page = b"swarmkit_verify_ok 1\n"
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        with urllib.request.urlopen(url, timeout=5) as answer:
            assert answer.read() == b"swarmkit_verify_ok 1\n"
            assert answer.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    finally:
        server.shutdown()
        server.server_close()


def test_a_taken_port_is_refused_before_any_round() -> None:
    first = verdict_metrics.start_server("127.0.0.1", 0)
    try:
        with pytest.raises(SwarmkitError, match=r"cannot serve the verdicts on 127\.0\.0\.1:\d+") as refused:
            verdict_metrics.start_server("127.0.0.1", first.server_address[1])
        assert "--metrics-port" in refused.value.hint
    finally:
        first.shutdown()
        first.server_close()


def _inventory(tmp_path: Path) -> str:
    path = tmp_path / "inventory.yaml"
    path.write_text("hosts:\n- {name: n1, endpoint: 'unix:///nonexistent/n1.sock', address: 10.9.0.1, role: manager}\n")
    return str(path)


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--metrics-port", "9465"], "--rounds and --metrics-port go with --every"),
        (["--rounds", "3"], "--rounds and --metrics-port go with --every"),
        (["--every", "0"], "--every"),
        (["--every", "10", "--metrics-port", "70000"], "not a port number"),
    ],
)
def test_verify_refuses_a_loop_it_cannot_run_before_any_engine_is_contacted(
    tmp_path: Path, options: list[str], said: str
) -> None:
    result = CliRunner().invoke(app, ["verify", "-i", _inventory(tmp_path), *options])
    assert result.exit_code == 2, result.output
    assert said in result.output and "does not answer" not in result.output and "Traceback" not in result.output
