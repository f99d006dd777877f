"""`swarmkit client-config`, `swarmkit users add|remove|list` and `swarmkit certs rotate`: what clients of a
secure cluster need, and its certificates' lifecycle."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from swarmkit import defaults
from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    expected_failures,
    load_hosts,
    out,
    timeout_option,
)
from swarmkit.cli.stack import run_reported
from swarmkit.hosts.inventory import load_inventory
from swarmkit.lazy import lazy
from swarmkit.security.settings import ADMIN_USER, write_private

if TYPE_CHECKING:
    from swarmkit.hosts import session as sessions
    from swarmkit.ops import certs, users
    from swarmkit.security import pki
else:
    sessions = lazy("swarmkit.hosts.session")
    pki = lazy("swarmkit.security.pki")
    users = lazy("swarmkit.ops.users")
    certs = lazy("swarmkit.ops.certs")

users_app = typer.Typer(help="SCRAM users of a sasl_ssl cluster (passwords kept beside the inventory).", no_args_is_help=True)
certs_app = typer.Typer(help="The TLS certificates of a secure cluster and its CA.", no_args_is_help=True)


@expected_failures
def client_config_command(
    inventory: str = INVENTORY_OPTION,
    user: str = typer.Option(ADMIN_USER, "--user", help="The client user (see `swarmkit users add`)."),
    fmt: str = typer.Option("properties", "--format", help="properties (Java clients) or librdkafka (confluent-kafka, kcat)."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write FILE (0600) and ca.crt beside it instead of printing."),
    security: str | None = typer.Option(None, "--security", help="sasl_ssl or ssl (default: the deployed stack's)."),
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
) -> None:
    """A ready client configuration: bootstrap list, security protocol, SASL login, CA file."""
    hosts = load_inventory(inventory)
    store = pki.store_dir(hosts, stack_name)
    target = Path(output).resolve() if output else None  # the file names the CA by an absolute path
    ca_file = str((target.parent if target else store) / "ca.crt")
    config = users.client_config(sessions.Session.of(hosts), stack_name, security, user, fmt, ca_file, port)
    if target is None:
        typer.echo(config.text, nl=False)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    Path(ca_file).write_text(config.ca_pem, encoding="utf-8")
    if config.keystore_pem:
        write_private(Path(ca_file).with_name(f"{user}.pem"), config.keystore_pem)
    write_private(target, config.text)
    out.print(f"wrote {target} (mode 0600) and {ca_file}", highlight=False, soft_wrap=True)


@users_app.command("add")
@expected_failures
def add_command(
    name: str = typer.Argument(..., help="User name."),
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
) -> None:
    """Create a SCRAM-SHA-512 user; its password is kept for `swarmkit client-config --user NAME`."""
    users.add_user(sessions.Session.of(load_inventory(inventory)), stack_name, name, port)
    out.print(f"user {name} added; its client configuration: swarmkit client-config -i {inventory} --user {name}")


@users_app.command("remove")
@expected_failures
def remove_command(
    name: str = typer.Argument(..., help="User name."),
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
) -> None:
    """Remove a user's credential from the cluster and its kept password."""
    users.remove_user(sessions.Session.of(load_inventory(inventory)), stack_name, name, port)
    out.print(f"user {name} removed")


@users_app.command("list")
@expected_failures
def list_command(inventory: str = INVENTORY_OPTION, stack_name: str = STACK_OPTION, port: int = EXTERNAL_PORT_OPTION) -> None:
    """The users the cluster holds SCRAM credentials for."""
    for name in users.list_users(sessions.Session.of(load_inventory(inventory)), stack_name, port):
        out.print(name, highlight=False)


@certs_app.command("rotate")
@expected_failures
def rotate_command(
    inventory: str = INVENTORY_OPTION,
    ca: bool = typer.Option(False, "--ca", help="Replace the cluster CA (three steps, clients of either CA keep working)."),
    timeout: float = timeout_option(defaults.ROLL_BROKER_TIMEOUT, "Seconds each broker or controller gets to be back."),
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Issue every broker's and controller's certificate again (or, with --ca, a new CA) and roll them one at a time."""
    hosts, docker = load_hosts(inventory)
    options = certs.RotateOptions(stack_name=stack_name, ca=ca, external_port=port, timeout=timeout)
    run_reported(
        lambda progress: certs.rotate(sessions.Session(hosts, docker, progress), options), as_json, tables.print_rotation
    )
