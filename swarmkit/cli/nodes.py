"""`swarmkit rebalance` and `remove-node`: where replicas live, and which servers run brokers."""

from __future__ import annotations

import typer
from rich.text import Text

from swarmkit import names, numbers
from swarmkit.cli import tables
from swarmkit.cli.common import (
    EXTERNAL_PORT_OPTION,
    INTERNAL_PORT_OPTION,
    INVENTORY_OPTION,
    JSON_OPTION,
    STACK_OPTION,
    checked,
    err,
    expected_failures,
    out,
    print_json,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.hosts import session as sessions
from swarmkit.ops import rebalance, replace, retire


@expected_failures
def remove_node_command(
    name: str = typer.Argument(..., help="The inventory host to retire (a worker)."),
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    timeout: float = timeout_option(600.0, "Seconds for its replicas to move (and for its broker to stop)."),
    external_port: int = EXTERNAL_PORT_OPTION,
    internal_port: int = INTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Retire a server: move its replicas away, stop and unregister its broker, take it out of the swarm."""
    options = retire.RetireOptions(stack_name, external_port, internal_port, timeout)
    hosts, docker = load_hosts(inventory)
    with err.status(Text(f"retiring {name}...")) as status:
        result = retire.retire(
            sessions.Session(hosts, docker, lambda done, total, message: status.update(Text(message))), name, options
        )
    if as_json:
        print_json(result.to_dict())
        return
    moved = len(result.moves)
    out.print(f"retired {result.host}: broker {result.broker_id} unregistered, {moved} partition(s) moved to the other brokers")
    if not result.left_swarm:
        out.print(f"{result.host}'s engine did not answer: run `docker swarm leave` there when it is back", style="yellow")
    out.print(f"remove {result.host} from {inventory} now; its data volume stays on the server until you delete it")


@expected_failures
def replace_node_command(
    dead: str = typer.Argument(..., help="The manager that is gone for good (its swarm node is down)."),
    new: str = typer.Argument(..., help="The inventory host (role: manager, in the swarm) that takes its place."),
    inventory: str = INVENTORY_OPTION,
    stack_name: str = STACK_OPTION,
    timeout: float = timeout_option(300.0, "Seconds for the new controller to catch up, and again to become a voter."),
    external_port: int = EXTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Replace a dead manager: swarm demote/remove, its controller out of the quorum, a new one on NEW in."""
    options = replace.ReplaceOptions(stack_name, external_port, timeout)
    hosts, docker = load_hosts(inventory)

    def progress(done: int, total: int, message: str) -> None:
        err.print(Text(f"  {message}"))

    result = replace.replace_node(sessions.Session(hosts, docker, progress), dead, new, options)
    if as_json:
        print_json(result.to_dict())
        return
    for step, seconds in result.steps:
        out.print(Text(f"{seconds:6.1f} s  {step}"))
    voters = ", ".join(map(str, result.voters))
    out.print(
        Text(
            f"replaced {result.dead} by {result.new}: controller {result.removed_voter} out, {result.added_voter} in; "
            f"voters {voters} ({result.total_s:.1f} s)"
        )
    )


@expected_failures
def rebalance_command(
    inventory: str = INVENTORY_OPTION,
    topics: str = typer.Option("", "--topics", help="Comma-separated topics (default: every topic but the internal ones)."),
    throttle: float = typer.Option(
        0.0, "--throttle", help="Cap on the moving replicas' replication traffic, MB/s (0: none).", callback=checked(numbers.rate)
    ),
    stack_name: str = STACK_OPTION,
    timeout: float = timeout_option(900.0, "Seconds for the replicas to move."),
    external_port: int = EXTERNAL_PORT_OPTION,
    internal_port: int = INTERNAL_PORT_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Give every broker its share of replicas and leaders (within one of even, per topic), then elect preferred leaders."""
    chosen = tuple(names.topic_name(t.strip(), "--topics: topic", existing=True) for t in topics.split(",") if t.strip())
    options = rebalance.RebalanceOptions(stack_name, external_port, internal_port, chosen, throttle, timeout)
    hosts, docker = load_hosts(inventory)
    with err.status("planning the moves...") as status:
        result = rebalance.rebalance(
            sessions.Session(hosts, docker, lambda done, total, message: status.update(Text(message))), options
        )
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_rebalance(result, out)
    if result.election_refused:
        raise typer.Exit(1)
