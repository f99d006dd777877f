"""What every command shares: the consoles, the common options, the error exit, loading an inventory."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable
from typing import Any

import typer
from rich.console import Console

from swarmkit.errors import SwarmkitError
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory

out = Console()
if not out.is_terminal:
    out = Console(width=160)
err = Console(stderr=True, soft_wrap=True)

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object for runbooks.")
SANDBOX_NAME = typer.Option("sk", "--name", help="Sandbox name (1-6 lowercase letters/digits).")
INVENTORY_OPTION = typer.Option(..., "--inventory", "-i", help="Inventory YAML naming the servers.")
MEMORY_OPTION = typer.Option(1.5, "--memory-per-broker", help="GiB of memory each host needs for a broker.")
EXTERNAL_PORT_OPTION = typer.Option(9094, "--external-port", help="Client port each broker publishes (mode: host).")
INTERNAL_PORT_OPTION = typer.Option(9092, "--internal-port", help="Broker-to-broker port on the overlay network.")


def expected_failures(command: Callable) -> Callable:
    """Turn SwarmkitError into a one-line error, a hint and an exit code; no traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SwarmkitError as error:
            if kwargs.get("as_json"):
                print_json({"ok": False, "error": error.message, "hint": error.hint})
            exit_with(error)
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper


def exit_with(error: SwarmkitError) -> None:
    """The one-line error and its hint on stderr, then the error's exit code."""
    err.print(f"[bold red]error:[/] {error.message}", highlight=False)
    if error.hint:
        err.print(f"[yellow]hint:[/] {error.hint}", highlight=False)
    raise typer.Exit(error.exit_code) from None


def this_machine() -> str:
    """This machine's Docker engine, where swarmkit builds its own images before shipping them."""
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def load_hosts(path: str) -> tuple[Inventory, DockerHosts]:
    """The inventory and its Docker engines, each client with that host's own TLS settings; their shared
    SSH connections (ssh:// hosts) end when the command drops them, at the latest when swarmkit exits."""
    inventory = load_inventory(path)
    return inventory, DockerHosts.from_inventory(inventory)


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))
