"""`swarmkit sandbox ...`: a real server group on this machine, for demos and tests."""

from __future__ import annotations

import typer

from swarmkit import defaults, numbers
from swarmkit.cli import tables
from swarmkit.cli.common import (
    JSON_OPTION,
    SANDBOX_NAME,
    checked,
    err,
    expected_failures,
    out,
    output_files,
    print_json,
    reporting,
)
from swarmkit.cli.faults import fault_app
from swarmkit.errors import SpecError
from swarmkit.sandbox import disks, faults, plumbing, validation
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.status import SandboxStatus
from swarmkit.sandbox.status import read as read_status

HOST_COUNT = checked(lambda value: numbers.count(value, 1, validation.MAX_NODES))
sandbox_app = typer.Typer(help="A real server group on this machine, for demos and tests.", no_args_is_help=True)
sandbox_app.add_typer(fault_app, name="fault")


def _show_sandbox(status: SandboxStatus, as_json: bool) -> None:
    active = faults.active(status.name) if status.exists else ()
    if as_json:
        print_json(status.to_dict() | {"faults": [f.to_dict() for f in active]})
        return
    tables.print_sandbox(status, out)
    for fault in active:
        out.print(f"fault: {fault.kind} on {fault.node}: {fault.detail}")


@sandbox_app.command("up")
@expected_failures
def sandbox_up(
    nodes: int = typer.Option(3, "--nodes", "-n", help="Number of hosts (1-20).", callback=HOST_COUNT),
    inventory: str = typer.Option("swarmkit-sandbox.yaml", "--inventory", "-i", help="Where to write the inventory."),
    name: str = SANDBOX_NAME,
    prefix: str = typer.Option("node", "--prefix", help="Host names are PREFIX1..PREFIXN."),
    subnet: str = typer.Option("10.231.0.0/24", "--subnet", help="Private subnet of the sandbox bridge."),
    engine: str = typer.Option(defaults.DEFAULT_ENGINE, "--engine", help="Broker engine the inventory names: apache or tansu."),
    managers: int = typer.Option(
        defaults.SANDBOX_MANAGERS,
        "--managers",
        help="How many of the hosts are swarm managers (1-20; the rest are workers; at most all of them).",
        callback=HOST_COUNT,
    ),
    endpoint: str = typer.Option(
        "unix", "--endpoint", help="How the inventory reaches the engines: unix (their sockets) or ssh (sshd on every host)."
    ),
    data_limit: str = typer.Option(
        "",
        "--data-limit",
        help="Give each host a broker data disk of this size (e.g. 256m), for `fault disk-full`.",
        callback=checked(lambda v: v and disks.limit(v)),
    ),
    kafka_version: str = typer.Option(
        "4.4.0", "--kafka-version", help="The Kafka version of the apache engine's image (4.3.1 or 4.4.0)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Build N hosts (namespace, hostname, dockerd each), a registry with the broker image, an inventory."""
    output_files("--inventory", inventory)
    with reporting(f"building sandbox '{name}' with {nodes} hosts ({engine} image)") as report:
        sandbox.up(
            nodes,
            name,
            prefix,
            subnet,
            inventory,
            engine=engine,
            managers=managers,
            report=report,
            endpoint=endpoint,
            data_limit=data_limit,
            kafka_version=kafka_version,
        )
    _show_sandbox(read_status(name), as_json)


@sandbox_app.command("add-node")
@expected_failures
def sandbox_add_node(name: str = SANDBOX_NAME, as_json: bool = JSON_OPTION) -> None:
    """Add one more host on the same network (not yet in the swarm: `swarmkit up` joins it)."""
    with err.status("adding a host..."):
        host = sandbox.add_node(name)
    if not as_json:
        out.print(f"added {host.name} at {host.address}")
    _show_sandbox(read_status(name), as_json)


@sandbox_app.command("down")
@expected_failures
def sandbox_down(name: str = SANDBOX_NAME, as_json: bool = JSON_OPTION) -> None:
    """Remove everything the sandbox created: processes, namespaces, bridge, iptables rules, data (faults with them)."""
    removed = sandbox.down(name)
    if as_json:
        print_json({"name": name, "removed": removed})
    else:
        out.print(f"sandbox '{name}': " + ("removed " + ", ".join(removed) if removed else "nothing to remove"))


@sandbox_app.command("status")
@expected_failures
def sandbox_status(name: str = SANDBOX_NAME, as_json: bool = JSON_OPTION) -> None:
    """Hosts, engines, registry and firewall blocks of the sandbox."""
    _show_sandbox(read_status(name), as_json)


@sandbox_app.command("firewall")
@expected_failures
def sandbox_firewall(
    action: str = typer.Argument(..., help="block or unblock"),
    host: str = typer.Argument(..., help="Host name, e.g. node3"),
    port: str = typer.Argument(..., help="PORT/PROTO, e.g. 4789/udp"),
    name: str = SANDBOX_NAME,
) -> None:
    """Simulate a host firewall dropping PORT/PROTO inbound on HOST."""
    if action not in ("block", "unblock"):
        raise SpecError(f"unknown firewall action '{action}'", hint="use block or unblock")
    state = plumbing.firewall(name, host, port, block=action == "block")
    out.print(f"{action}ed {port} on {host}; blocks now: {', '.join(map(str, state.firewall)) or 'none'}")


@sandbox_app.command("stop-engine")
@expected_failures
def sandbox_stop_engine(host: str = typer.Argument(...), name: str = SANDBOX_NAME) -> None:
    """Kill one host's Docker engine, as if that server crashed."""
    sandbox.stop_engine(name, host)
    out.print(f"stopped the engine of {host}")


@sandbox_app.command("start-engine")
@expected_failures
def sandbox_start_engine(host: str = typer.Argument(...), name: str = SANDBOX_NAME) -> None:
    """Start a stopped host's Docker engine again."""
    sandbox.start_engine(name, host)
    out.print(f"started the engine of {host}")
