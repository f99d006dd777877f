"""`swarmkit preflight`, `swarmkit swarm up|down` and `swarmkit join`: checking the hosts and forming the swarm."""

from __future__ import annotations

from dataclasses import asdict

import typer

from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    MEMORY_OPTION,
    err,
    expected_failures,
    out,
    print_json,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.errors import PreflightError, SpecError
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.roles import NodeRole
from swarmkit.network import preflight
from swarmkit.ops import deploy
from swarmkit.ops import plan as planning
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.topics import declared_topics
from swarmkit.swarm import bootstrap as swarm


def _preflight(hosts: Inventory, docker: DockerHosts, memory_gib: float, plan: ListenerPlan) -> preflight.PreflightReport:
    with err.status("probing engines and ports between every pair of hosts..."):
        return deploy.probe(hosts, docker, plan, memory_gib)


def show_preflight(report: preflight.PreflightReport, as_json: bool) -> None:
    """Show a preflight that gates a change: the table, or with --json the report alone when it failed."""
    if as_json and not report.ok:
        print_json(report.to_dict())
        raise typer.Exit(1)
    if not as_json:
        tables.print_preflight(report, out)


def gate_preflight(
    hosts: Inventory, docker: DockerHosts, memory_gib: float, as_json: bool, plan: ListenerPlan | None = None
) -> dict:
    """Run preflight before a change: show it, and stop (changing nothing) when it fails."""
    report = _preflight(hosts, docker, memory_gib, plan or ListenerPlan())
    show_preflight(report, as_json)
    if not report.ok:
        raise PreflightError("preflight failed: nothing was changed", hint="fix what the table above names, then retry")
    return report.to_dict()


@expected_failures
def preflight_command(
    inventory: str = INVENTORY_OPTION,
    memory: float = MEMORY_OPTION,
    external_port: int = EXTERNAL_PORT_OPTION,
    internal_port: int = INTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Check engines, the port matrix between every pair of hosts, free ports and memory; change nothing."""
    plan = ListenerPlan.build(internal_port=internal_port, external_port=external_port)
    hosts, docker = load_hosts(inventory)
    warnings = planning.zone_warnings(hosts, declared_topics(hosts))
    report = _preflight(hosts, docker, memory, plan)
    if as_json:
        print_json(report.to_dict() | {"warnings": warnings})
    else:
        tables.print_preflight(report, out)
        for warning in warnings:
            err.print(f"warning: {warning}", highlight=False)
    if not report.ok:
        raise typer.Exit(1)


swarm_app = typer.Typer(help="The swarm half of `swarmkit up`: init, join, labels, leave.", no_args_is_help=True)


@swarm_app.command("up")
@expected_failures
def swarm_up(
    inventory: str = INVENTORY_OPTION,
    skip_preflight: bool = typer.Option(False, "--skip-preflight", help="Do not probe ports first."),
    memory: float = MEMORY_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Initialize the swarm on the first manager and join every other host (idempotent)."""
    hosts, docker = load_hosts(inventory)
    checked = None if skip_preflight else gate_preflight(hosts, docker, memory, as_json)
    result = swarm.swarm_up(hosts, docker=docker)
    if as_json:
        print_json({"preflight": checked, **result.to_dict()})
    else:
        tables.print_swarm(result, out)


@swarm_app.command("down")
@expected_failures
def swarm_down(inventory: str = INVENTORY_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Leave the swarm on every host (workers first)."""
    hosts, docker = load_hosts(inventory)
    actions = swarm.swarm_down(hosts, docker=docker)
    if as_json:
        print_json([asdict(a) for a in actions])
    else:
        for action in actions:
            out.print(f"{action.host}: {action.action}")


@expected_failures
def join(
    inventory: str = INVENTORY_OPTION,
    role: str = typer.Option("worker", "--role", help="worker or manager"),
    show_token: bool = typer.Option(False, "--show-token", help="Print the real token (keep it secret)."),
) -> None:
    """Print the exact command to run on a server swarmkit cannot reach (token hidden unless asked)."""
    if role not in tuple(NodeRole):
        raise SpecError(f"unknown role '{role}'", hint="use worker or manager")
    hosts, docker = load_hosts(inventory)
    out.print(swarm.join_command(hosts, NodeRole(role), show_token, docker=docker), highlight=False, soft_wrap=True)
