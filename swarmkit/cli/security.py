"""`swarmkit client-config`, `swarmkit users add|remove|list` and `swarmkit certs rotate`: what clients of a
secure cluster need, and its certificates' lifecycle."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import typer

from swarmkit import defaults, names
from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    checked,
    each,
    expected_failures,
    out,
    output_files,
    print_json,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.cli.stack import run_reported
from swarmkit.hosts import session as sessions
from swarmkit.hosts.inventory import check_rack, load_inventory
from swarmkit.ops import certs, users
from swarmkit.security import acls, pki
from swarmkit.security.settings import ADMIN_USER, settings_text, write_private

users_app = typer.Typer(help="SCRAM users of a sasl_ssl cluster (passwords kept beside the inventory).", no_args_is_help=True)
certs_app = typer.Typer(help="The TLS certificates of a secure cluster and its CA.", no_args_is_help=True)


@expected_failures
def client_config_command(
    inventory: str = INVENTORY_OPTION,
    user: str = typer.Option(
        ADMIN_USER, "--user", help="The client user (see `swarmkit users add`).", callback=checked(names.user_name)
    ),
    fmt: str = typer.Option("properties", "--format", help="properties (Java clients) or librdkafka (confluent-kafka, kcat)."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write FILE (0600) and ca.crt beside it instead of printing."),
    security: str | None = typer.Option(None, "--security", help="sasl_ssl or ssl (default: the deployed stack's)."),
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    rack: str | None = typer.Option(
        None,
        "--rack",
        help="The client's zone (client.rack): consumers then fetch from a replica in that zone.",
        callback=checked(names.zone_name),
    ),
) -> None:
    """A ready client configuration: bootstrap list, security protocol, SASL login, CA file."""
    hosts = load_inventory(inventory)
    rack_setting = settings_text({"client.rack": check_rack(hosts, rack)}) if rack else ""
    store = pki.store_dir(hosts, stack_name)
    target = Path(output).resolve() if output is not None else None  # the file names the CA by an absolute path
    ca_file = str((target.parent if target else store) / "ca.crt")
    if target is not None:
        output_files("-o", output, ca_file, Path(ca_file).with_name(f"{user}.pem"))
    config = users.client_config(sessions.Session.of(hosts), stack_name, security, user, fmt, ca_file, port)
    config = replace(config, text=config.text + rack_setting)
    if target is None:
        typer.echo(config.text, nl=False)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    Path(ca_file).write_text(config.ca_pem, encoding="utf-8")
    if config.keystore_pem:
        write_private(Path(ca_file).with_name(f"{user}.pem"), config.keystore_pem)
    write_private(target, config.text)
    out.print(f"wrote {target} (mode 0600) and {ca_file}", highlight=False, soft_wrap=True)


USER_ARGUMENT = typer.Argument(..., help="User name.", callback=checked(names.user_name))
ALLOW_OPTION = typer.Option(
    [],
    "--allow",
    help="A grant TYPE:NAME:OPERATIONS, e.g. topic:orders:read,write, topic:orders-*:read (a prefix), "
    "group:billing:read; repeatable. Given, these become the user's whole set of grants; not given, its grants stay.",
)

TOPIC_OPTION = typer.Option(
    [],
    "--topic",
    help="A topic the user must be able to use; repeatable (default: every topic).",
    callback=each(lambda topic: names.topic_name(topic, "--topic", existing=True)),
)


@users_app.command("add")
@expected_failures
def add_command(
    name: str = USER_ARGUMENT,
    allow: list[str] = ALLOW_OPTION,
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
) -> None:
    """Create a SCRAM-SHA-512 user and set its grants; its password is kept for `swarmkit client-config --user NAME`."""
    added = users.add_user(sessions.Session.of(load_inventory(inventory)), stack_name, name, allow, port)
    out.print(f"user {name} added, may: {acls.describe(added.grants)}", highlight=False, soft_wrap=True)
    out.print(f"its client configuration: swarmkit client-config -i {inventory} --user {name}", highlight=False)


@users_app.command("remove")
@expected_failures
def remove_command(
    name: str = USER_ARGUMENT,
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
) -> None:
    """Remove a user's grants, its credential from the cluster and its kept password."""
    users.remove_user(sessions.Session.of(load_inventory(inventory)), stack_name, name, port)
    out.print(f"user {name} removed", highlight=False)


@users_app.command("list")
@expected_failures
def list_command(
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """The users the cluster holds SCRAM credentials for, with their grants."""
    found = users.list_users(sessions.Session.of(load_inventory(inventory)), stack_name, port)
    if as_json:
        print_json({"ok": True, "users": [user.to_dict() for user in found]})
        return
    for user in found:
        may = "everything (swarmkit's admin)" if user.name == ADMIN_USER else acls.describe(user.grants)
        out.print(f"{user.name}: {may}", highlight=False, soft_wrap=True)


@users_app.command("check")
@expected_failures
def check_command(
    name: str = USER_ARGUMENT,
    topics: list[str] = TOPIC_OPTION,
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Log in as the user and show what it may do on each topic; exit 1 when it is refused."""
    result = users.check_user(sessions.Session.of(load_inventory(inventory)), stack_name, name, topics, port)
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_user_check(result, out)
    if not result.ok:
        raise typer.Exit(1)


@certs_app.command("rotate")
@expected_failures
def rotate_command(
    inventory: str = INVENTORY_OPTION,
    ca: bool = typer.Option(False, "--ca", help="Replace the cluster CA (three steps, clients of either CA keep working)."),
    timeout: float = timeout_option(
        defaults.ROLL_BROKER_TIMEOUT,
        "Seconds each broker or controller gets to be back, and the cluster to be in sync after each step.",
        envvar="SWARMKIT_ROLL_TIMEOUT",
    ),
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
