"""`swarmkit spark up|down`: a Spark standalone cluster on the swarm, for `verify --spark --master spark://...`."""

from __future__ import annotations

import typer
from rich.text import Text

from swarmkit import defaults, names
from swarmkit.cli.common import (
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_ENV,
    checked,
    err,
    expected_failures,
    out,
    print_json,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.hosts import session as sessions
from swarmkit.traffic import spark_cluster

spark_app = typer.Typer(help="A Spark standalone cluster on the swarm: a master on a manager, a worker per node.")

STACK_OPTION = typer.Option(
    "kafka",
    "--stack",
    envvar=STACK_ENV,
    help="The Kafka stack's name; the Spark stack is STACK-spark.",
    callback=checked(names.stack_name),
)
MASTER_HOST_OPTION = typer.Option(None, "--master-host", help="Inventory manager for the master (default: the first).")


@spark_app.command("up")
@expected_failures
def spark_up_command(
    inventory: str = INVENTORY_OPTION,
    image: str = typer.Option(
        None,
        "--image",
        help="A Spark image every node can pull (default: build one and push it).",
        callback=checked(names.image_ref),
    ),
    registry: str = typer.Option(
        None,
        "--registry",
        help="HOST:PORT to push the built image to (default: the registry of the inventory's image).",
        callback=checked(names.registry),
    ),
    master_host: str = MASTER_HOST_OPTION,
    stack: str = STACK_OPTION,
    timeout: float = timeout_option(defaults.SPARK_UP_TIMEOUT, "Seconds to wait for every worker."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Deploy the master and one worker per node (host network), and wait until every worker has registered."""
    hosts, docker = load_hosts(inventory)
    with err.status("deploying Spark...") as status:
        cluster = spark_cluster.spark_up(
            sessions.Session(hosts, docker),
            image=image,
            registry=registry,
            master_host=master_host,
            kafka_stack=stack,
            timeout=timeout,
            progress=lambda message: status.update(Text(message)),
        )
    if as_json:
        print_json(cluster.to_dict())
        return
    out.print(f"stack {cluster.stack}: image {cluster.image}")
    out.print(f"workers ({len(cluster.workers)}): {', '.join(cluster.workers)}")
    out.print(f"master {cluster.master_url}   web UI {cluster.ui_url}   ({cluster.total_s:.1f} s)")
    out.print(f"run the verify job there: swarmkit verify -i {inventory} --spark --master {cluster.master_url}")


@spark_app.command("down")
@expected_failures
def spark_down_command(
    inventory: str = INVENTORY_OPTION,
    master_host: str = MASTER_HOST_OPTION,
    stack: str = STACK_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove the Spark stack (the Kafka stack is left alone)."""
    hosts, docker = load_hosts(inventory)
    removed = spark_cluster.spark_down(sessions.Session(hosts, docker), master_host=master_host, kafka_stack=stack)
    if as_json:
        print_json({"ok": True, "stack": spark_cluster.stack_name(stack), "removed": removed})
    else:
        out.print(f"removed {', '.join(removed)}" if removed else f"stack {spark_cluster.stack_name(stack)} was not deployed")
