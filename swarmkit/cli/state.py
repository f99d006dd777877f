"""`swarmkit state export|import|status`: the keys and passwords kept beside the inventory, sealed with a
passphrase for a backup or a second operator, and checked against the running cluster."""

from __future__ import annotations

from pathlib import Path

import typer

from swarmkit import files
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    expected_failures,
    out,
    output_files,
    print_json,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.errors import SpecError
from swarmkit.hosts import session as sessions
from swarmkit.ops import state
from swarmkit.security import backup

state_app = typer.Typer(
    help="The CA, certificates and passwords kept beside the inventory: export, import, check.", no_args_is_help=True
)
PASSPHRASE_FILE = typer.Option(
    None, "--passphrase-file", help="Read the passphrase from FILE (its first line) instead of asking for it."
)


def passphrase_from(path: str | None, confirm: bool) -> str:
    """The passphrase: the file's first line, or asked on the terminal (twice when ``confirm``); never an argument."""
    if path is not None:
        lines = files.read_input(Path(path), "--passphrase-file").splitlines()
        return lines[0] if lines else ""
    if not typer.get_text_stream("stdin").isatty():
        raise SpecError("no passphrase: stdin is not a terminal to ask on", hint="give --passphrase-file FILE")
    return str(typer.prompt("Passphrase", hide_input=True, confirmation_prompt=confirm))


@state_app.command("export")
@expected_failures
def export_command(
    output: str = typer.Option(..., "--output", "-o", help="The file to write (mode 0600); replaced if it exists."),
    passphrase_file: str | None = PASSPHRASE_FILE,
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
) -> None:
    """Seal the stack's CA, certificates, passwords and rotation step into one file, encrypted with a passphrase."""
    output_files("-o", output)
    hosts, docker = load_hosts(inventory)
    exported = state.export_state(sessions.Session.of(hosts, docker), stack_name)
    sealed = backup.seal(exported, backup.check_passphrase(passphrase_from(passphrase_file, confirm=True)))
    backup.write_sealed(Path(output), sealed)
    users = ", ".join(exported.users()) or "none"
    out.print(f"wrote {output} (mode 0600): {len(exported.files)} files, users: {users}", highlight=False, soft_wrap=True)
    out.print("keep it apart from its passphrase; export again after `users`, `certs rotate` and `up`", highlight=False)


@state_app.command("import")
@expected_failures
def import_command(
    source: str = typer.Argument(..., help="A file `swarmkit state export` wrote."),
    passphrase_file: str | None = PASSPHRASE_FILE,
    replace: bool = typer.Option(False, "--replace", help="Overwrite a store here whose files differ from the import's."),
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Check the file, its passphrase and that it is the running cluster's, then write the store beside the inventory.

    A wrong passphrase, a damaged or truncated file, another cluster's state: exit 2, nothing written."""
    hosts, docker = load_hosts(inventory)
    request = state.ImportRequest(Path(source), stack_name, port, replace)
    report = state.import_state(sessions.Session.of(hosts, docker), request, lambda: passphrase_from(passphrase_file, False))
    if as_json:
        print_json(report.to_dict())
        return
    done = "imported into" if report.written else "already in place in"
    users = ", ".join(report.users) or "none"
    out.print(f"{done} {report.directory}: {report.files} files, users: {users}", highlight=False, soft_wrap=True)


@state_app.command("status")
@expected_failures
def status_command(
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """What is kept where for the stack, and whether it belongs to the running cluster (exit 1 when not)."""
    hosts, docker = load_hosts(inventory)
    found = state.status(sessions.Session.of(hosts, docker), stack_name, port)
    if as_json:
        print_json(found.to_dict())
    else:
        out.print(f"store: {found.directory} ({found.files} files)", highlight=False, soft_wrap=True)
        out.print(f"users: {', '.join(found.users) or 'none'}; broker certificates: {found.brokers}", highlight=False)
        out.print(found.expiry.text() + (f"; CA rotation: {found.rotation}" if found.rotation else ""), highlight=False)
        out.print("matches the running cluster" if found.matches else f"does not match: {found.why}", highlight=False)
    if not found.matches:
        raise typer.Exit(1)
