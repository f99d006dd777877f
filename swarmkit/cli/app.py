"""The `swarmkit` command: which command lives where; each group's module parses its options and prints."""

from __future__ import annotations

import typer

from swarmkit import __version__
from swarmkit.cli import checks, nodes, ops, security, stack, swarm
from swarmkit.cli.common import UsageErrors, out
from swarmkit.cli.images import image_app
from swarmkit.cli.metrics import metrics_app
from swarmkit.cli.sandbox import sandbox_app
from swarmkit.cli.spark import spark_app
from swarmkit.cli.ssh import ssh_app
from swarmkit.cli.state import state_app

app = typer.Typer(help="Kafka on Docker Swarm that every client can reach.", no_args_is_help=True, cls=UsageErrors)
app.add_typer(sandbox_app, name="sandbox")


def version_callback(value: bool) -> None:
    if value:
        out.print(f"swarmkit {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=version_callback, is_eager=True, help="Print the version."),
) -> None:
    """swarmkit: Kafka on Docker Swarm, one broker per server, reachable by every client."""


app.command("preflight")(swarm.preflight_command)
app.add_typer(swarm.swarm_app, name="swarm")
app.command("join")(swarm.join)
app.add_typer(checks.listeners_app, name="listeners")
app.command("verify")(checks.verify_command)
app.command("render")(stack.render)
app.command("deploy")(stack.deploy_command)
app.command("up")(stack.up_command)
app.command("plan")(stack.plan_command)
app.add_typer(spark_app, name="spark")
app.add_typer(metrics_app, name="metrics")
app.command("remove-node")(nodes.remove_node_command)
app.command("replace-node")(nodes.replace_node_command)
app.command("status")(ops.status_command)
app.command("roll")(ops.roll_command)
app.command("upgrade")(ops.upgrade_command)
app.command("down")(ops.down_command)
app.command("rebalance")(nodes.rebalance_command)
app.command("client-config")(security.client_config_command)
app.add_typer(security.users_app, name="users")
app.add_typer(security.certs_app, name="certs")
app.add_typer(state_app, name="state")
app.add_typer(image_app, name="image")
app.add_typer(ssh_app, name="ssh")
