"""`swarmkit status`, `roll` and `down`: day-2 operations on a deployed cluster."""

from __future__ import annotations

import typer

from swarmkit import defaults, names
from swarmkit.checks import status
from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    each,
    err,
    expected_failures,
    out,
    print_json,
    this_machine,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.cli.stack import run_reported, with_progress
from swarmkit.hosts import dockerapi
from swarmkit.hosts import session as sessions
from swarmkit.ops import roll, teardown, upgrade

ROLL_IMAGE_OPTION = typer.Option(None, "--image", help="Upgrade the brokers to this image (controllers keep theirs).")
SET_OPTION = typer.Option([], "--set", help="A broker setting key=value (a Kafka property); repeatable.")
NODE_OPTION = typer.Option(
    [], "--node", help="Restart only this inventory host's broker; repeatable.", callback=each(names.host_name)
)
ROLL_TIMEOUT_OPTION = timeout_option(
    defaults.ROLL_BROKER_TIMEOUT, "Seconds each broker gets to be back and in sync.", envvar="SWARMKIT_ROLL_TIMEOUT"
)


@expected_failures
def status_command(
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    external_port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Nodes, brokers, controllers and topics as they are now; changes nothing."""
    with err.status("reading the swarm, the brokers and the controller quorum..."):
        hosts, docker = load_hosts(inventory)
        report = status.status(sessions.Session(hosts, docker), stack_name, external_port)
    if as_json:
        print_json(report.to_dict())
    else:
        tables.print_status(report, out)
    if not report.ok:
        raise typer.Exit(1)


@expected_failures
def roll_command(
    inventory: str = INVENTORY_OPTION,
    image: str | None = ROLL_IMAGE_OPTION,
    settings: list[str] = SET_OPTION,
    nodes: list[str] = NODE_OPTION,
    timeout: float = ROLL_TIMEOUT_OPTION,
    stack_name: str = STACK_OPTION,
    external_port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Restart, upgrade or reconfigure the brokers one at a time, each back and in sync before the next."""
    options = roll.RollOptions(
        stack_name=stack_name,
        image=image,
        settings=roll.parse_settings(settings),
        nodes=tuple(nodes),
        external_port=external_port,
        broker_timeout=timeout,
    )
    hosts, docker = load_hosts(inventory)
    roll.validate(hosts, options)
    run_reported(lambda progress: roll.roll(sessions.Session(hosts, docker, progress), options), as_json, tables.print_roll)


@expected_failures
def upgrade_command(
    inventory: str = INVENTORY_OPTION,
    version: str = typer.Option("", "--version", help="The Kafka release to run, e.g. 4.4.0 (an older one: a downgrade)."),
    no_finalize: bool = typer.Option(
        False, "--no-finalize", help="Stop before raising metadata.version (downgrade stays possible)."
    ),
    finalize: bool = typer.Option(False, "--finalize", help="Raise metadata.version once every node runs the new release."),
    timeout: float = timeout_option(defaults.ROLL_BROKER_TIMEOUT, "Seconds each node gets to be back and caught up."),
    stack_name: str = STACK_OPTION,
    external_port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Move the cluster to another Kafka release: controllers, then brokers, one at a time; then finalize."""
    if no_finalize and finalize:
        raise typer.BadParameter("--finalize and --no-finalize contradict each other", param_hint="--finalize")
    if not version and not finalize:
        raise typer.BadParameter("name the release, e.g. --version 4.4.0 (or --finalize alone)", param_hint="--version")
    options = upgrade.UpgradeOptions(
        version=version, stack_name=stack_name, finalize=not no_finalize, finalize_only=finalize and not version,
        external_port=external_port, timeout=timeout,
    )  # fmt: skip
    hosts, docker = load_hosts(inventory)
    local = dockerapi.Engine.connect(this_machine())
    run_reported(
        lambda progress: upgrade.upgrade(sessions.Session(hosts, docker, progress, local), options), as_json, tables.print_upgrade
    )


@expected_failures
def down_command(
    inventory: str = INVENTORY_OPTION,
    purge: bool = typer.Option(False, "--purge-data", help="Also delete data and identity volumes, broker ids, cluster id."),
    yes: bool = typer.Option(False, "--yes", help="Confirm --purge-data."),
    stack_name: str = STACK_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Remove the stack and wait until its containers are gone; data, ids and cluster id stay unless purged."""
    teardown.check_purge(purge, yes)
    hosts, docker = load_hosts(inventory)
    report = with_progress(
        lambda progress: teardown.down(sessions.Session(hosts, docker, progress), stack_name, purge=purge, yes=yes)
    )
    if as_json:
        print_json(report.to_dict())
    else:
        tables.print_down(report, out)
