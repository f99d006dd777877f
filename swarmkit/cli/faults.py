"""`swarmkit sandbox fault ...`: a sandbox host cut off, slowed down or out of disk, and healed again."""

from __future__ import annotations

import re

import typer

from swarmkit import waits
from swarmkit.cli.common import JSON_OPTION, SANDBOX_NAME, checked, err, expected_failures, out, print_json
from swarmkit.errors import SpecError
from swarmkit.sandbox import faults

DURATION = re.compile(r"^([1-9][0-9]{0,4})(s|m)?$")
fault_app = typer.Typer(
    help="Faults on a sandbox host (the sandbox only): a partition, a slow link, a full disk; and heal.",
    no_args_is_help=True,
)
INVENTORY = typer.Option(
    None, "--inventory", "-i", help="The sandbox's inventory instead of --name (any other inventory is refused)."
)


def duration(text: str) -> float:
    """60, 60s or 2m: seconds."""
    match = DURATION.match(text)
    if not match:
        raise SpecError(f"duration '{text}' is not a duration", hint="e.g. --for 60s or --for 2m")
    return int(match.group(1)) * (60 if match.group(2) == "m" else 1)


FOR_OPTION = typer.Option(
    None, "--for", help="Heal after this long (60s, 2m); default: until `fault heal`.", callback=checked(duration)
)


def _seconds(given: str | None) -> float | None:
    return duration(given) if given else None


def _sandbox(name: str, inventory: str | None) -> str:
    return faults.sandbox_of_inventory(inventory) if inventory else name


def _done(fault: faults.Fault, as_json: bool) -> None:
    if as_json:
        print_json(fault.to_dict())
    else:
        out.print(f"{fault.kind} on {fault.node}: {fault.detail}")
        out.print(f"heal ({'swarmkit sandbox fault heal ' + fault.node}) {fault.undo}")


def _for_a_while(name: str, fault: faults.Fault, seconds: float | None, as_json: bool) -> None:
    """Print the fault; with ``seconds``, hold it that long (Ctrl-C ends it early) and heal."""
    _done(fault, as_json)
    if seconds is None:
        return
    try:
        err.print(f"holding the {fault.kind} on {fault.node} for {seconds:g} s, then healing (Ctrl-C heals now)")
        waits.hold(seconds)
    finally:
        for line in faults.heal(name, fault.node) or [f"{fault.node}: nothing to heal"]:
            err.print(f"healed: {line}")


@fault_app.command("partition")
@expected_failures
def fault_partition(
    node: str = typer.Argument(..., help="The host to cut off, e.g. node3."),
    peers: str = typer.Option("", "--from", help="Cut it off from these hosts only (comma-separated); default: all."),
    seconds: str = FOR_OPTION,
    client: bool = typer.Option(True, "--client/--no-client", help="Cut off this machine's traffic too (clients, the registry)."),
    name: str = SANDBOX_NAME,
    inventory: str = INVENTORY,
    as_json: bool = JSON_OPTION,
) -> None:
    """Drop every packet between NODE and its peers, both ways (iptables in NODE's namespace)."""
    sandbox = _sandbox(name, inventory)
    chosen = [p.strip() for p in peers.split(",") if p.strip()] or None
    fault = faults.partition(sandbox, node, chosen, client)
    _for_a_while(sandbox, fault, _seconds(seconds), as_json)


@fault_app.command("slow")
@expected_failures
def fault_slow(
    node: str = typer.Argument(..., help="The host whose link to slow down."),
    rate: str = typer.Option(
        ..., "--rate", help="The link's rate each way, e.g. 1mbit or 500kbit.", callback=checked(lambda v: faults.rate(v))
    ),
    seconds: str = FOR_OPTION,
    name: str = SANDBOX_NAME,
    inventory: str = INVENTORY,
    as_json: bool = JSON_OPTION,
) -> None:
    """Limit NODE's link to RATE each way (a tc token bucket; this kernel has no netem: no delay or loss)."""
    sandbox = _sandbox(name, inventory)
    fault = faults.slow(sandbox, node, rate)
    _for_a_while(sandbox, fault, _seconds(seconds), as_json)


@fault_app.command("disk-full")
@expected_failures
def fault_disk_full(
    node: str = typer.Argument(..., help="The host whose broker data disk to fill."),
    seconds: str = FOR_OPTION,
    name: str = SANDBOX_NAME,
    inventory: str = INVENTORY,
    as_json: bool = JSON_OPTION,
) -> None:
    """Fill NODE's broker data disk to its limit (a sandbox made with `sandbox up --data-limit`)."""
    sandbox = _sandbox(name, inventory)
    fault = faults.disk_full(sandbox, node)
    _for_a_while(sandbox, fault, _seconds(seconds), as_json)


@fault_app.command("heal")
@expected_failures
def fault_heal(
    node: str = typer.Argument(None, help="The host to heal; default: every host."),
    name: str = SANDBOX_NAME,
    inventory: str = INVENTORY,
    as_json: bool = JSON_OPTION,
) -> None:
    """Undo every fault on NODE (or on every host); healing a healthy host changes nothing."""
    sandbox = _sandbox(name, inventory)
    undone = faults.heal(sandbox, node)
    if as_json:
        print_json({"name": sandbox, "healed": undone})
    else:
        out.print("\n".join(f"healed: {line}" for line in undone) or f"nothing to heal on {node or 'any host'}")
