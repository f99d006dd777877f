"""`swarmkit image push`: the broker image onto servers that reach no registry."""

from __future__ import annotations

import typer
from rich.text import Text

from swarmkit import names
from swarmkit.cli import tables
from swarmkit.cli.common import (
    INVENTORY_OPTION,
    JSON_OPTION,
    checked,
    err,
    expected_failures,
    given,
    out,
    print_json,
    this_machine,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.hosts import dockerapi
from swarmkit.images import shipping
from swarmkit.stack import engines

image_app = typer.Typer(help="Images on the servers, without a registry.", no_args_is_help=True)


@image_app.command("push")
@expected_failures
def push_command(
    inventory: str = INVENTORY_OPTION,
    engine: str | None = typer.Option(None, "--engine", help="apache or tansu (default: the inventory's)."),
    image: str | None = typer.Option(
        None,
        "--image",
        help="The image (default: the inventory's stack.image, else the engine's).",
        callback=checked(names.image_ref),
    ),
    source: str = typer.Option(this_machine(), "--from", help="This machine's Docker engine.", callback=given("--from")),
    as_json: bool = JSON_OPTION,
) -> None:
    """Save the image here once and load it on every server that lacks it (swarmkit's own images are built here first)."""
    hosts, docker = load_hosts(inventory)
    tag = names.image_ref(image or hosts.stack.image or engines.engine_for(engine or hosts.stack.engine).DEFAULT_IMAGE)
    with err.status(Text(f"shipping {tag} to the servers that lack it...")):
        result = shipping.push_image(hosts, docker, dockerapi.Engine.connect(source), tag)
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_push(result, out)
