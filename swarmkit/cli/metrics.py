"""`swarmkit metrics up|status|down`: Prometheus and Alertmanager on the swarm, scraping every broker, controller and
node and sending alerts to the inventory's receivers (docs/metrics.md)."""

from __future__ import annotations

import typer

from swarmkit import names, numbers
from swarmkit.checks import diagnose
from swarmkit.cli.common import (
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    checked,
    count_option,
    expected_failures,
    out,
    print_json,
    reporting,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.hosts import session as sessions
from swarmkit.ops import metrics, metrics_status

metrics_app = typer.Typer(
    help="Prometheus and Alertmanager on the swarm: every broker's, controller's and node's metrics, alert rules, receivers."
)

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
        9090, "--port", help="Port of Prometheus's UI and API, published on the first manager.", callback=checked(numbers.port)
    ),
    alert_port: int = typer.Option(
        9093, "--alert-port", help="Port of Alertmanager's API, published on the first manager.", callback=checked(numbers.port)
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
    """Deploy Prometheus, Alertmanager and a node exporter per node as the stack STACK-metrics and wait until they
    answer; alerts go to the inventory's receivers (metrics: alerts:). Prints the URLs."""
    hosts, docker = load_hosts(inventory)
    options = metrics.MetricsOptions(stack, port, alert_port, image, timeout, tuple(verify_targets or ()), interval)
    with reporting("deploying Prometheus and Alertmanager...") as lines:
        server = metrics.metrics_up(sessions.Session(hosts, docker, lambda done, total, message: lines(message)), options)
    if as_json:
        print_json(server.to_dict())
        return
    out.print(f"stack {server.stack} on {server.host}: image {server.image}")
    controllers = ", ".join(server.controllers) or "no controller"
    out.print(f"scraping {server.brokers} and {controllers} on the overlay every {server.interval_s} s")
    if server.verify_targets:
        out.print(f"and swarmkit verify's verdicts at {', '.join(server.verify_targets)}")
    out.print(f"Prometheus {server.url}   alerts {server.url}classic/alerts   ({server.total_s:.1f} s)")
    out.print(
        f"Alertmanager {server.alerts_url}   sending to: {', '.join(server.receivers) or 'nobody (no metrics: alerts: in the inventory)'}"
    )


@metrics_app.command("status")
@expected_failures
def metrics_status_command(inventory: str = INVENTORY_OPTION, stack: str = STACK_OPTION, as_json: bool = JSON_OPTION) -> None:
    """What the metrics stack scrapes, which alerts are pending or firing, where each was sent, and how many
    notifications went out (or failed) per receiver. Exit 1 while an alert fires."""
    hosts, docker = load_hosts(inventory)
    found = metrics_status.metrics_status(sessions.Session(hosts, docker), kafka_stack=stack)
    if as_json:
        print_json(found.to_dict())
    else:
        print_metrics_status(found)
    if found.firing:
        raise typer.Exit(1)


def print_metrics_status(found: metrics_status.MetricsStatus) -> None:
    out.print(f"Prometheus {found.prometheus_url}   Alertmanager {found.alerts_url}")
    out.print("targets: " + ", ".join(f"{job} {up}/{known}" for job, (up, known) in found.targets.items()))
    for alert in found.alerts:
        sent = f" -> {', '.join(alert.receivers)}" if alert.receivers else " (not sent)" if alert.state == "firing" else ""
        out.print(f"{alert.state.upper():8} {alert.name} [{alert.severity}] {alert.summary} since {alert.since}{sent}")
    if not found.alerts:
        out.print("no alert pending or firing")
    for delivery in found.deliveries:
        out.print(f"{delivery.integration}: {delivery.sent} notifications sent, {delivery.failed} failed")


@metrics_app.command("down")
@expected_failures
def metrics_down_command(
    inventory: str = INVENTORY_OPTION,
    stack: str = STACK_OPTION,
    purge: bool = typer.Option(False, "--purge", help="Remove the metrics' data volumes too."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove the metrics stack, Prometheus and Alertmanager (Kafka is left alone); their data volumes stay unless --purge."""
    hosts, docker = load_hosts(inventory)
    result = metrics.metrics_down(sessions.Session(hosts, docker), kafka_stack=stack, purge=purge)
    if as_json:
        print_json(result.to_dict())
        return
    out.print(f"removed {', '.join(result.removed)}" if result.removed else f"stack {result.stack} was not deployed")
    if result.volumes:
        out.print(f"purged {', '.join(result.volumes)}")
