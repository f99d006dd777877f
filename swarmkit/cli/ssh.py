"""`swarmkit ssh close`: end now the SSH connections swarmkit keeps to ssh:// servers between commands."""

from __future__ import annotations

import typer

from swarmkit.cli.common import JSON_OPTION, expected_failures, out, print_json
from swarmkit.errors import SpecError
from swarmkit.hosts import ssh
from swarmkit.hosts.inventory import load_inventory

ssh_app = typer.Typer(help="The SSH connections swarmkit keeps to ssh:// servers between commands.", no_args_is_help=True)


@ssh_app.command("close")
@expected_failures
def close_command(
    inventory: str = typer.Option("", "--inventory", "-i", help="Inventory YAML naming the servers."),
    every: bool = typer.Option(False, "--all", help="Every connection swarmkit keeps, for any inventory."),
    as_json: bool = JSON_OPTION,
) -> None:
    """End the kept connections to the inventory's servers now and remove their sockets."""
    if bool(inventory) == every:
        raise SpecError("name the inventory (-i INVENTORY) or --all, not both", hint="e.g. swarmkit ssh close -i servers.yaml")
    closed = ssh.close_kept(None if every else load_inventory(inventory))
    if as_json:
        print_json({"closed": [c.to_dict() for c in closed]})
        return
    for master in closed:
        ended = f"ended (ssh pid {master.pid})" if master.pid else "had ended already; its sockets are removed"
        out.print(f"{master.endpoint or 'an unrecorded connection'}: {ended}", highlight=False)
    if not closed:
        out.print("no SSH connection kept for " + ("any inventory" if every else inventory), highlight=False)
