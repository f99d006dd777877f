"""`swarmkit metrics up|down`: a Prometheus server on the swarm scraping every broker and controller (docs/metrics.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from swarmkit import names, numbers
from swarmkit.cli.common import (
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
from swarmkit.lazy import lazy

if TYPE_CHECKING:
    from swarmkit.checks import diagnose
    from swarmkit.hosts import session as sessions
    from swarmkit.ops import metrics
else:
    diagnose = lazy("swarmkit.checks.diagnose")
    sessions = lazy("swarmkit.hosts.session")
    metrics = lazy("swarmkit.ops.metrics")

metrics_app = typer.Typer(help="Prometheus on the swarm: every broker's and controller's metrics, and alert rules.")

READY_TIMEOUT = 180.0
SCRAPE_INTERVAL_S = 15  # swarmkit.stack.prometheus.SCRAPE_INTERVAL_S (not imported: the CLI starts fast)
VERIFY_TARGET_OPTION = typer.Option(
    None,
    "--verify-target",
    help="HOST:PORT of a `swarmkit verify --every S --metrics-port P` loop to scrape too (repeatable).",
    callback=checked(lambda values: [diagnose.split_endpoint(v) for v in values]),
)


@metrics_app.command("up")
@expected_failures
def metrics_up_command(
    inventory: str = INVENTORY_OPTION,
    port: int = typer.Option(
        9090, "--port", help="Port of the UI and API, published on the first manager.", callback=checked(numbers.port)
    ),
    image: str = typer.Option(
        None,
        "--image",
        help="A Prometheus image (default: swarmkit/prometheus, built on the manager from Debian's package).",
        callback=checked(names.image_ref),
    ),
    verify_targets: list[str] | None = VERIFY_TARGET_OPTION,
    interval: int = count_option(
        SCRAPE_INTERVAL_S,
        "--scrape-interval",
        "Seconds between scrapes, alert rule evaluations and target lookups (shorter: alerts and new brokers seen sooner).",
    ),
    stack: str = STACK_OPTION,
    timeout: float = timeout_option(READY_TIMEOUT, "Seconds to wait for Prometheus to answer."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Deploy Prometheus as the stack STACK-metrics and wait until it answers; prints its URL."""
    hosts, docker = load_hosts(inventory)
    with reporting("deploying Prometheus...") as lines:
        server = metrics.metrics_up(
            sessions.Session(hosts, docker, lambda done, total, message: lines(message)),
            kafka_stack=stack,
            port=port,
            image=image,
            timeout=timeout,
            verify_targets=tuple(verify_targets or ()),
            interval_s=interval,
        )
    if as_json:
        print_json(server.to_dict())
        return
    out.print(f"stack {server.stack} on {server.host}: image {server.image}")
    controllers = ", ".join(server.controllers) or "no controller"
    out.print(f"scraping {server.brokers} and {controllers} on the overlay every {server.interval_s} s")
    if server.verify_targets:
        out.print(f"and swarmkit verify's verdicts at {', '.join(server.verify_targets)}")
    out.print(f"Prometheus {server.url}   alerts {server.url}classic/alerts   ({server.total_s:.1f} s)")


@metrics_app.command("down")
@expected_failures
def metrics_down_command(
    inventory: str = INVENTORY_OPTION,
    stack: str = STACK_OPTION,
    purge: bool = typer.Option(False, "--purge", help="Remove the metrics' data volume too."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove the Prometheus stack (Kafka is left alone); its data volume stays unless --purge."""
    hosts, docker = load_hosts(inventory)
    result = metrics.metrics_down(sessions.Session(hosts, docker), kafka_stack=stack, purge=purge)
    if as_json:
        print_json(result.to_dict())
        return
    out.print(f"removed {', '.join(result.removed)}" if result.removed else f"stack {result.stack} was not deployed")
    if result.volumes:
        out.print(f"purged {', '.join(result.volumes)}")
