"""The `swarmkit` command: the registry of its commands, and the one place a command's module is imported.

A command's module (and what it imports: python-on-whales, confluent-kafka, cryptography...) is imported when
that command runs or shows its own help, never before: `swarmkit --help` and `--version` read only this registry.
Each command's module parses its options and prints.
"""

from __future__ import annotations

import importlib
from typing import Any, NamedTuple

import typer
from typer.core import TyperCommand

from swarmkit import __version__
from swarmkit.cli.common import UsageErrors, out


class Entry(NamedTuple):
    module: str  # the swarmkit.cli module that defines the command
    attribute: str  # its command function or typer group there
    summary: str  # what `swarmkit --help` lists: the first paragraph of the command's own help (a unit test compares)


# In the order `swarmkit --help` lists them: the commands, then the groups.
COMMANDS = {
    "preflight": Entry(
        "swarm",
        "preflight_command",
        "Check engines, the port matrix between every pair of hosts, free ports and memory; change nothing.",
    ),
    "join": Entry(
        "swarm", "join", "Print the exact command to run on a server swarmkit cannot reach (token hidden unless asked)."
    ),
    "verify": Entry(
        "checks",
        "verify_command",
        "Check every broker from this machine (and with --spark, real traffic); report what changed.",
    ),
    "render": Entry(
        "stack",
        "render",
        "Print the stack YAML (stable, readable); with -o DIR, a directory deployable with `docker stack deploy -c`.",
    ),
    "deploy": Entry("stack", "deploy_command", "Deploy the stack, wait until a broker answers on every node, pre-create topics."),
    "up": Entry(
        "stack", "up_command", "Preflight, swarm up, deploy and topics: a fresh server group to a verified-reachable Kafka."
    ),
    "plan": Entry(
        "stack",
        "plan_command",
        "What `up` would change (topics to create or alter, partitions to add, users, client quotas, brokers to restart); "
        'changes nothing. Exit 0 with "no changes" when none, 3 when changes are pending (1 and 2: it could not tell).',
    ),
    "remove-node": Entry(
        "nodes",
        "remove_node_command",
        "Retire a server: move its replicas away, stop and unregister its broker, take it out of the swarm.",
    ),
    "replace-node": Entry(
        "nodes",
        "replace_node_command",
        "Replace a dead manager: swarm demote/remove, its controller out of the quorum, a new one on NEW in.",
    ),
    "status": Entry("ops", "status_command", "Nodes, brokers, controllers and topics as they are now; changes nothing."),
    "roll": Entry(
        "ops", "roll_command", "Restart, upgrade or reconfigure the brokers one at a time, each back and in sync before the next."
    ),
    "upgrade": Entry(
        "ops",
        "upgrade_command",
        "Move the cluster to another Kafka release: controllers, then brokers, one at a time; then finalize.",
    ),
    "down": Entry(
        "ops",
        "down_command",
        "Remove the stack and wait until its containers are gone; data, ids and cluster id stay unless purged.",
    ),
    "rebalance": Entry(
        "nodes",
        "rebalance_command",
        "Give every broker its share of replicas and leaders (within one of even, per topic), then elect preferred leaders.",
    ),
    "client-config": Entry(
        "security",
        "client_config_command",
        "A ready client configuration: bootstrap list, security protocol, SASL login, CA file.",
    ),
    "sandbox": Entry("sandbox", "sandbox_app", "A real server group on this machine, for demos and tests."),
    "swarm": Entry("swarm", "swarm_app", "The swarm half of `swarmkit up`: init, join, labels, leave."),
    "listeners": Entry("checks", "listeners_app", "Listener diagnosis for any Kafka cluster."),
    "spark": Entry("spark", "spark_app", "A Spark standalone cluster on the swarm: a master on a manager, a worker per node."),
    "metrics": Entry(
        "metrics",
        "metrics_app",
        "Prometheus and Alertmanager on the swarm: every broker's, controller's and node's metrics, alert rules, receivers.",
    ),
    "users": Entry("security", "users_app", "SCRAM users of a sasl_ssl cluster (passwords kept beside the inventory)."),
    "certs": Entry("security", "certs_app", "The TLS certificates of a secure cluster and its CA."),
    "state": Entry("state", "state_app", "The CA, certificates and passwords kept beside the inventory: export, import, check."),
    "image": Entry("images", "image_app", "Images on the servers, without a registry."),
    "ssh": Entry("ssh", "ssh_app", "The SSH connections swarmkit keeps to ssh:// servers between commands."),
}


def load(name: str) -> Any:
    """The command called ``name``, its module imported now, built as typer builds a command or group it holds."""
    entry = COMMANDS[name]
    found = getattr(importlib.import_module(f"swarmkit.cli.{entry.module}"), entry.attribute)
    holder = typer.Typer(add_completion=False)
    holder.callback()(_holds)
    if isinstance(found, typer.Typer):
        holder.add_typer(found, name=name)
    else:
        holder.command(name)(found)
    built: Any = typer.main.get_command(holder)
    return built.commands[name]


def _holds() -> None:
    """A holder's callback, so that typer builds it as a group even around one command."""


class Registry(UsageErrors):
    """The top command: holds each registered command as its name and summary (what its help lists, nothing imported);
    imports a command's module only to run the command or show its own help (click's lazily loaded subcommands)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = {name: TyperCommand(name, help=entry.summary) for name, entry in COMMANDS.items()}

    def resolve_command(self, ctx: Any, args: list[str]) -> tuple[str | None, Any | None, list[str]]:
        name, _, rest = super().resolve_command(ctx, args)
        return name, load(name) if name else None, rest


app = typer.Typer(help="Kafka on Docker Swarm that every client can reach.", no_args_is_help=True, cls=Registry)


def version_callback(value: bool) -> None:
    if value:
        out.print(f"swarmkit {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True, help="Print the version."),
) -> None:
    """swarmkit: Kafka on Docker Swarm, one broker per server, reachable by every client."""


def command(group: Any, context: Any, name: str) -> Any | None:
    """The command ``name`` of ``group`` as it runs (its module imported): what the command reference reads."""
    return load(name) if isinstance(group, Registry) else group.get_command(context, name)
