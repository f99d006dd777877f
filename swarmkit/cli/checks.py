"""`swarmkit verify` and `swarmkit listeners diagnose`: checking a running cluster from this machine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from swarmkit import defaults, numbers
from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    checked,
    count_option,
    expected_failures,
    load_hosts,
    out,
    print_json,
    reporting,
    timeout_option,
)
from swarmkit.errors import SpecError
from swarmkit.lazy import lazy

if TYPE_CHECKING:
    from swarmkit.checks import diagnose, verify
    from swarmkit.hosts import session as sessions
    from swarmkit.security import settings
    from swarmkit.traffic import spark_streaming
else:
    sessions = lazy("swarmkit.hosts.session")
    diagnose = lazy("swarmkit.checks.diagnose")
    settings = lazy("swarmkit.security.settings")
    spark_streaming = lazy("swarmkit.traffic.spark_streaming")
    verify = lazy("swarmkit.checks.verify")

listeners_app = typer.Typer(help="Listener diagnosis for any Kafka cluster.", no_args_is_help=True)


@expected_failures
def verify_command(
    inventory: str = INVENTORY_OPTION,
    spark: bool = typer.Option(False, "--spark", help="Also run the PySpark job through every broker."),
    records: int | None = count_option(None, "--records", "Records per broker for the Spark job."),
    master: str | None = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    report: str | None = typer.Option(None, "--report", help="Where the Spark job writes its JSON report."),
    streaming: bool = typer.Option(False, "--streaming", help="With --spark: a Structured Streaming query, exactly once."),
    seconds: float = typer.Option(
        defaults.STREAM_SECONDS,
        "--seconds",
        help="How long the stream's producer writes.",
        callback=checked(numbers.seconds),
    ),
    rate: int = count_option(defaults.STREAM_RATE, "--rate", "Records/s the stream's producer writes."),
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    timeout: float = timeout_option(
        60.0, "Seconds for every check together; a step that does not answer is named (Spark has its own bound)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Check every broker from this machine (and with --spark, real traffic); report what changed."""
    options = verify.VerifyOptions(
        stack_name=stack_name,
        external_port=port,
        spark=spark,
        spark_records=records,
        spark_master=master,
        spark_report=report,
        spark_stream=spark_streaming.StreamOptions(seconds, rate) if streaming else None,
        budget=timeout,
    )
    with reporting("verifying every broker from this machine" + (", then the Spark job" if spark else "")) as say:
        hosts, docker = load_hosts(inventory)
        result = verify.verify(sessions.Session(hosts, docker), options, on_progress=say)
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_verify(result, out)
        if result.spark_stream:
            out.print(result.spark_stream.summary())
    if not result.ok:
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
