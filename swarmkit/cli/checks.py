"""`swarmkit verify` and `swarmkit listeners diagnose`: checking a running cluster from this machine."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import typer

from swarmkit import defaults, numbers
from swarmkit.checks import diagnose, verdict_metrics, verify
from swarmkit.checks import report as pages
from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    ProgressLines,
    checked,
    count_option,
    err,
    expected_failures,
    given,
    out,
    output_files,
    print_json,
    reporting,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.errors import SpecError
from swarmkit.hosts import session as sessions
from swarmkit.security import settings
from swarmkit.traffic import spark_streaming

EVERY_OPTION = timeout_option(None, "Verify again every SECONDS (start to start) until interrupted.", name="--every")
METRICS_PORT_OPTION = typer.Option(
    None, "--metrics-port", help="With --every: serve the verdicts for Prometheus on this port.", callback=checked(numbers.port)
)
listeners_app = typer.Typer(help="Listener diagnosis for any Kafka cluster.", no_args_is_help=True)


@expected_failures
def verify_command(
    inventory: str = INVENTORY_OPTION,
    spark: bool = typer.Option(False, "--spark", help="Also run the PySpark job through every broker."),
    records: int | None = count_option(None, "--records", "Records per broker for the Spark job."),
    master: str | None = typer.Option(None, "--master", help="Spark master URL (default local[*]).", callback=given("--master")),
    report: str | None = typer.Option(
        None, "--report", help="FILE.html: the report page (the Spark job's JSON beside it, FILE.json); else the job's JSON."
    ),
    streaming: bool = typer.Option(False, "--streaming", help="With --spark: a Structured Streaming query, exactly once."),
    seconds: float = typer.Option(
        defaults.STREAM_SECONDS,
        "--seconds",
        help="How long the stream's producer writes.",
        callback=checked(numbers.seconds),
    ),
    rate: int = count_option(defaults.STREAM_RATE, "--rate", "Records/s the stream's producer writes."),
    every: float | None = EVERY_OPTION,
    rounds: int | None = count_option(None, "--rounds", "With --every: stop after N rounds."),
    metrics_port: int | None = METRICS_PORT_OPTION,
    metrics_address: str = typer.Option(
        "0.0.0.0", "--metrics-address", help="Address the verdicts are served on.", callback=given("--metrics-address")
    ),
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    timeout: float = timeout_option(
        60.0,
        "Seconds for every check together; a step that does not answer is named (Spark has its own bound).",
        envvar="SWARMKIT_VERIFY_TIMEOUT",
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Check every broker from this machine (and with --spark, real traffic); report what changed."""
    if every is None and (rounds or metrics_port):
        raise SpecError("--rounds and --metrics-port go with --every", hint="e.g. --every 60 --metrics-port 9465")
    html, spark_json = pages.outputs(report)
    output_files("--report", html, spark_json)
    options = verify.VerifyOptions(
        stack_name=stack_name,
        external_port=port,
        spark=spark,
        spark_records=records,
        spark_master=master,
        spark_report=spark_json,
        spark_stream=spark_streaming.StreamOptions(seconds, rate) if streaming else None,
        budget=timeout,
    )
    once = _runner(inventory, options, html)
    if every is not None:
        _watch(once, every, rounds, (metrics_address, metrics_port), as_json)
        return
    with reporting("verifying every broker from this machine" + (", then the Spark job" if spark else "")) as say:
        result = once(say)
    _show(result, as_json, html)


Round = Callable[[Callable[[str], None]], "verify.VerifyReport"]


def _runner(inventory: str, options: verify.VerifyOptions, html: Path | None) -> Round:
    """One verify run on one session (kept across the rounds of --every), the page written after it."""
    hosts, docker = load_hosts(inventory)
    session = sessions.Session(hosts, docker)
    layout = pages.layout_of(hosts, docker, options.stack_name) if html else None

    def once(say: Callable[[str], None]) -> verify.VerifyReport:
        result = verify.verify(session, options, on_progress=say)
        if html and layout:
            pages.write(html, result, layout, pages.now())
        return result

    return once


def _show(result: verify.VerifyReport, as_json: bool, html: Path | None) -> None:
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_verify(result, out)
        if result.spark_stream:
            out.print(result.spark_stream.summary())
    if html:
        err.print(f"report: {html}", markup=False, highlight=False)
    if not result.ok:
        raise typer.Exit(1)


def _watch(
    once: Round,
    every: float,
    rounds: int | None,
    serve: tuple[str, int | None],
    as_json: bool,
) -> None:
    """The loop: progress and one line per round on stderr; with --json, each round's report on stdout."""
    say = ProgressLines()
    server = verdict_metrics.start_server(serve[0], serve[1]) if serve[1] else None
    if server:
        say(f"serving the verdicts at http://{serve[0]}:{serve[1]}/metrics")

    def publish(last: verdict_metrics.Round, number: int, errors: int) -> None:
        if server:
            server.page = verdict_metrics.exposition(last, number, errors).encode()
        say(verdict_metrics.summary(last, number))
        if as_json:
            print(json.dumps(last.report.to_dict() if last.report else {"ok": False, "error": last.error}), flush=True)

    try:
        last = verdict_metrics.watch(lambda: once(say), every, rounds, publish)
    finally:
        if server:
            server.shutdown()
    if not (last.report and last.report.ok):
        raise typer.Exit(1)


@listeners_app.command("diagnose")
@expected_failures
def listeners_diagnose(
    bootstrap: str | None = typer.Option(
        None, "--bootstrap", "-b", help="HOST:PORT of any broker (default: the config's first)."
    ),
    config: str | None = typer.Option(
        None, "--config", "-c", help="A client configuration (TLS, SASL), as `swarmkit client-config` writes it."
    ),
    timeout: float = timeout_option(5.0, "Seconds per probe (at most 300: what the Kafka client accepts).", 300.0),
    as_json: bool = JSON_OPTION,
) -> None:
    """What `kafkacat -L` shows, with verdicts: does every advertised address resolve, connect and answer?"""
    listed, security = settings.read_client_config(Path(config)) if config else ("", None)
    bootstrap = bootstrap or listed.split(",")[0]
    if not bootstrap:
        raise SpecError("no broker to ask", hint="give --bootstrap HOST:PORT, or a --config with bootstrap.servers")
    result = diagnose.diagnose(bootstrap, timeout, security)
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_diagnosis(result, out)
    if not result.ok:
        raise typer.Exit(1)
