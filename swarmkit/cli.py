"""The `swarmkit` command: parses options, calls the plain modules, prints tables or JSON."""

from __future__ import annotations

import functools
import inspect
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from swarmkit import __version__, deploy, diagnose, preflight, sandbox, swarm, tables, verify
from swarmkit.dockerapi import DockerHosts
from swarmkit.errors import PreflightError, SwarmkitError
from swarmkit.inventory import Inventory, load_inventory
from swarmkit.listeners import ListenerPlan

app = typer.Typer(help="Kafka on Docker Swarm that every client can reach.", no_args_is_help=True)
sandbox_app = typer.Typer(help="A real server group on this machine, for demos and tests.", no_args_is_help=True)
app.add_typer(sandbox_app, name="sandbox")

out = Console()
if not out.is_terminal:
    out = Console(width=160)
err = Console(stderr=True, soft_wrap=True)

JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object for runbooks.")
SANDBOX_NAME = typer.Option("sk", "--name", help="Sandbox name (1-6 lowercase letters/digits).")


def expected_failures(command: Callable) -> Callable:
    """Turn SwarmkitError into a one-line error, a hint and an exit code; no traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SwarmkitError as error:
            if kwargs.get("as_json"):
                print_json({"ok": False, "error": error.message, "hint": error.hint})
            _exit_with(error)
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper


def _exit_with(error: SwarmkitError) -> None:
    """The one-line error and its hint on stderr, then the error's exit code."""
    err.print(f"[bold red]error:[/] {error.message}", highlight=False)
    if error.hint:
        err.print(f"[yellow]hint:[/] {error.hint}", highlight=False)
    raise typer.Exit(error.exit_code) from None


def _inventory(path: str) -> tuple[Inventory, DockerHosts]:
    """The inventory and its Docker engines, each client with that host's own TLS settings."""
    inventory = load_inventory(path)
    return inventory, DockerHosts.from_inventory(inventory)


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))


def version_callback(value: bool) -> None:
    if value:
        out.print(f"swarmkit {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(
        False, "--version", callback=version_callback, is_eager=True, help="Print the version."
    ),
) -> None:
    """swarmkit: Kafka on Docker Swarm, one broker per server, reachable by every client."""


# --- sandbox ---------------------------------------------------------------------------------


def _show_sandbox(status: sandbox.SandboxStatus, as_json: bool) -> None:
    if as_json:
        print_json(status.to_dict())
    else:
        tables.print_sandbox(status, out)


@sandbox_app.command("up")
@expected_failures
def sandbox_up(
    nodes: int = typer.Option(3, "--nodes", "-n", help="Number of hosts."),
    inventory: str = typer.Option("swarmkit-sandbox.yaml", "--inventory", "-i", help="Where to write the inventory."),
    name: str = SANDBOX_NAME,
    prefix: str = typer.Option("node", "--prefix", help="Host names are PREFIX1..PREFIXN."),
    subnet: str = typer.Option("10.231.0.0/24", "--subnet", help="Private subnet of the sandbox bridge."),
    engine: str = typer.Option("apache", "--engine", help="Broker engine the inventory names: apache or tansu."),
    managers: int = typer.Option(
        sandbox.DEFAULT_MANAGERS, "--managers", help="How many of the hosts are swarm managers (the rest are workers)."
    ),
    as_json: bool = JSON_OPTION,
) -> None:
    """Build N hosts (namespace, hostname, dockerd each), a registry with the broker image, an inventory."""
    with err.status(f"building sandbox '{name}' with {nodes} hosts ({engine} image)..."):
        sandbox.up(nodes, name, prefix, subnet, inventory, engine=engine, managers=managers)
    _show_sandbox(sandbox.status(name), as_json)


@sandbox_app.command("add-node")
@expected_failures
def sandbox_add_node(name: str = SANDBOX_NAME, as_json: bool = JSON_OPTION) -> None:
    """Add one more host on the same network (not yet in the swarm: `swarmkit up` joins it)."""
    with err.status("adding a host..."):
        host = sandbox.add_node(name)
    if not as_json:
        out.print(f"added {host.name} at {host.address}")
    _show_sandbox(sandbox.status(name), as_json)


@sandbox_app.command("down")
@expected_failures
def sandbox_down(name: str = SANDBOX_NAME, as_json: bool = JSON_OPTION) -> None:
    """Remove everything the sandbox created: processes, namespaces, bridge, iptables rules, data."""
    removed = sandbox.down(name)
    if as_json:
        print_json({"name": name, "removed": removed})
    else:
        out.print(f"sandbox '{name}': " + ("removed " + ", ".join(removed) if removed else "nothing to remove"))


@sandbox_app.command("status")
@expected_failures
def sandbox_status(name: str = SANDBOX_NAME, as_json: bool = JSON_OPTION) -> None:
    """Hosts, engines, registry and firewall blocks of the sandbox."""
    _show_sandbox(sandbox.status(name), as_json)


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
        raise SwarmkitError(f"unknown firewall action '{action}'", hint="use block or unblock")
    state = sandbox.firewall(name, host, port, block=action == "block")
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


# --- preflight -------------------------------------------------------------------------------

INVENTORY_OPTION = typer.Option(..., "--inventory", "-i", help="Inventory YAML naming the servers.")
MEMORY_OPTION = typer.Option(1.5, "--memory-per-broker", help="GiB of memory each host needs for a broker.")


EXTERNAL_PORT_OPTION = typer.Option(9094, "--external-port", help="Client port each broker publishes (mode: host).")
INTERNAL_PORT_OPTION = typer.Option(9092, "--internal-port", help="Broker-to-broker port on the overlay network.")


def _preflight(hosts: Inventory, docker: DockerHosts, memory_gib: float, plan: ListenerPlan) -> preflight.PreflightReport:
    with err.status("probing engines and ports between every pair of hosts..."):
        return preflight.run_preflight(
            hosts,
            docker=docker,
            memory_per_broker=int(memory_gib * preflight.GIB),
            client_port=plan.external_listener.port,
            internal_port=plan.internal_listener.port,
        )


def _gate_preflight(
    hosts: Inventory, docker: DockerHosts, memory_gib: float, as_json: bool, plan: ListenerPlan = ListenerPlan()
) -> dict:
    """Run preflight before a change: show it, and stop (changing nothing) when it fails."""
    report = _preflight(hosts, docker, memory_gib, plan)
    if as_json and not report.ok:
        print_json(report.to_dict())
        raise typer.Exit(1)
    if not as_json:
        tables.print_preflight(report, out)
    if not report.ok:
        raise PreflightError("preflight failed: nothing was changed", hint="fix what the table above names, then retry")
    return report.to_dict()


@app.command("preflight")
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
    report = _preflight(*_inventory(inventory), memory, plan)
    if as_json:
        print_json(report.to_dict())
    else:
        tables.print_preflight(report, out)
    if not report.ok:
        raise typer.Exit(1)


# --- swarm -----------------------------------------------------------------------------------

swarm_app = typer.Typer(help="The swarm half of `swarmkit up`: init, join, labels, leave.", no_args_is_help=True)
app.add_typer(swarm_app, name="swarm")


@swarm_app.command("up")
@expected_failures
def swarm_up(
    inventory: str = INVENTORY_OPTION,
    skip_preflight: bool = typer.Option(False, "--skip-preflight", help="Do not probe ports first."),
    memory: float = MEMORY_OPTION,
    as_json: bool = JSON_OPTION,
) -> None:
    """Initialize the swarm on the first manager and join every other host (idempotent)."""
    hosts, docker = _inventory(inventory)
    checked = None if skip_preflight else _gate_preflight(hosts, docker, memory, as_json)
    result = swarm.swarm_up(hosts, docker=docker)
    if as_json:
        print_json({"preflight": checked, **result.to_dict()})
    else:
        tables.print_swarm(result, out)


@swarm_app.command("down")
@expected_failures
def swarm_down(inventory: str = INVENTORY_OPTION, as_json: bool = JSON_OPTION) -> None:
    """Leave the swarm on every host (workers first)."""
    hosts, docker = _inventory(inventory)
    actions = swarm.swarm_down(hosts, docker=docker)
    if as_json:
        print_json([asdict(a) for a in actions])
    else:
        for action in actions:
            out.print(f"{action.host}: {action.action}")


@app.command("join")
@expected_failures
def join(
    inventory: str = INVENTORY_OPTION,
    role: str = typer.Option("worker", "--role", help="worker or manager"),
    show_token: bool = typer.Option(False, "--show-token", help="Print the real token (keep it secret)."),
) -> None:
    """Print the exact command to run on a server swarmkit cannot reach (token hidden unless asked)."""
    if role not in ("worker", "manager"):
        raise SwarmkitError(f"unknown role '{role}'", hint="use worker or manager")
    hosts, docker = _inventory(inventory)
    out.print(swarm.join_command(hosts, role, show_token, docker=docker), highlight=False, soft_wrap=True)


# --- verify and diagnose ---------------------------------------------------------------------

listeners_app = typer.Typer(help="Listener diagnosis for any Kafka cluster.", no_args_is_help=True)
app.add_typer(listeners_app, name="listeners")


@app.command("verify")
@expected_failures
def verify_command(
    inventory: str = INVENTORY_OPTION,
    spark: bool = typer.Option(False, "--spark", help="Also run the PySpark job through every broker."),
    records: Optional[int] = typer.Option(None, "--records", help="Records per broker for the Spark job."),
    master: Optional[str] = typer.Option(None, "--master", help="Spark master URL (default local[*])."),
    report: Optional[str] = typer.Option(None, "--report", help="Where the Spark job writes its JSON report."),
    stack_name: str = typer.Option("kafka", "--stack", help="Stack name."),
    port: int = typer.Option(9094, "--external-port", help="The brokers' published client port."),
    as_json: bool = JSON_OPTION,
) -> None:
    """Check every broker from this machine (and with --spark, real traffic); report what changed."""
    options = verify.VerifyOptions(
        stack_name=stack_name,
        external_port=port,
        spark=spark,
        spark_records=records,
        spark_master=master,
        spark_report=report,
    )
    with err.status("verifying every broker from this machine..." + (" then the Spark job" if spark else "")):
        hosts, docker = _inventory(inventory)
        result = verify.verify(hosts, options, docker=docker)
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_verify(result, out)
    if not result.ok:
        raise typer.Exit(1)


@listeners_app.command("diagnose")
@expected_failures
def listeners_diagnose(
    bootstrap: str = typer.Option(..., "--bootstrap", "-b", help="HOST:PORT of any broker."),
    timeout: float = typer.Option(5.0, "--timeout", help="Seconds per probe."),
    as_json: bool = JSON_OPTION,
) -> None:
    """What `kafkacat -L` shows, with verdicts: does every advertised address resolve, connect and answer?"""
    result = diagnose.diagnose(bootstrap, timeout)
    if as_json:
        print_json(result.to_dict())
    else:
        tables.print_diagnosis(result, out)
    if not result.ok:
        raise typer.Exit(1)


# --- render, deploy, up ----------------------------------------------------------------------

ENGINE_OPTION = typer.Option(None, "--engine", help="apache or tansu (default: the inventory's, else apache).")
IMAGE_OPTION = typer.Option(None, "--image", help="Broker image (default: the engine's, or the inventory's).")
ADVERTISE_OPTION = typer.Option(
    "hostname", "--advertise", help="What each broker advertises: hostname, inventory-address or command."
)
HOSTNAME_COMMAND_OPTION = typer.Option(
    None, "--hostname-command", help="With --advertise command: shell command printing the host to advertise."
)
TOPICS_OPTION = typer.Option("", "--topics", help="name:partitions:replicas[:key=value...], comma-separated.")
STACK_OPTION = typer.Option("kafka", "--stack", help="Stack name.")
TIMEOUT_OPTION = typer.Option(
    None, "--timeout", help="Seconds to wait for a broker on every node (default 60 + 30 per node)."
)
REPLICATION_OPTION = typer.Option(
    None,
    "--replication-factor",
    help="apache: default replication (default min(3, brokers); pin it to grow without rolling).",
)
CLUSTER_ID_OPTION = typer.Option(None, "--cluster-id", help="apache: KRaft cluster id (default: generated once, kept).")


STACK_PARAMETERS = {
    "engine": (Optional[str], ENGINE_OPTION),
    "image": (Optional[str], IMAGE_OPTION),
    "advertise": (str, ADVERTISE_OPTION),
    "hostname_command": (Optional[str], HOSTNAME_COMMAND_OPTION),
    "topics": (str, TOPICS_OPTION),
    "stack_name": (str, STACK_OPTION),
    "timeout": (Optional[float], TIMEOUT_OPTION),
    "cluster_id": (Optional[str], CLUSTER_ID_OPTION),
    "replication_factor": (Optional[int], REPLICATION_OPTION),
    "external_port": (int, EXTERNAL_PORT_OPTION),
    "internal_port": (int, INTERNAL_PORT_OPTION),
}


def _deploy_options(internal_port: int, external_port: int, **given: Any) -> deploy.DeployOptions:
    if given["hostname_command"] and given["advertise"] == "hostname":
        given["advertise"] = "command"
    return deploy.DeployOptions(
        **given, listeners=ListenerPlan.build(internal_port=internal_port, external_port=external_port)
    )


def stack_options(command: Callable) -> Callable:
    """Give render, deploy and up the same stack options, declared once; the command gets `options`."""
    own = [p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "options"]
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
        for name, (kind, option) in STACK_PARAMETERS.items()
    ]

    @functools.wraps(command)
    def wrapper(**given: Any) -> Any:
        stack = {name: given.pop(name) for name in STACK_PARAMETERS}
        return command(options=_deploy_options(**stack), **given)

    wrapper.__signature__ = inspect.Signature([p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared)
    wrapper.__annotations__ = {p.name: p.annotation for p in wrapper.__signature__.parameters.values()}
    return wrapper


def _with_progress(action: Callable[[deploy.Progress], Any]) -> Any:
    """Run a deploy-like action with a progress bar on stderr (brokers answering / nodes)."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("starting", total=None)

        def on_progress(done: int, total: int, message: str) -> None:
            progress.update(task, completed=done, total=total or None, description=message)

        return action(on_progress)


def _finish_deploy(result: deploy.DeployResult, as_json: bool, extra: dict | None = None) -> None:
    if as_json:
        print_json({**(extra or {}), **result.to_dict()} if extra else result.to_dict())
    else:
        tables.print_deploy(result, out)
    if not result.ok:
        _exit_with(result.error())  # the JSON above already says ok: false


@app.command("render")
@expected_failures
@stack_options
def render(
    inventory: str = INVENTORY_OPTION,
    output: Optional[str] = typer.Option(
        None, "--output", "-o", help="Write DIR/stack.yml and the files its configs name, instead of printing."
    ),
    options: deploy.DeployOptions = None,
) -> None:
    """Print the stack YAML (stable, readable); with -o DIR, a directory deployable with `docker stack deploy -c`."""
    hosts, docker = _inventory(inventory)
    stack = deploy.render_for(hosts, options, docker=docker)
    if output is None:
        typer.echo(stack.text, nl=False)
        return
    path = stack.write(Path(output))
    beside = ", ".join(config.filename for config in stack.files)
    out.print(f"wrote {path}" + (f" and beside it {beside}" if beside else ""), highlight=False, soft_wrap=True)
    out.print(f"deploy by hand: docker stack deploy -c {path} {options.stack_name}", highlight=False, soft_wrap=True)


@app.command("deploy")
@expected_failures
@stack_options
def deploy_command(
    inventory: str = INVENTORY_OPTION, as_json: bool = JSON_OPTION, options: deploy.DeployOptions = None
) -> None:
    """Deploy the stack, wait until a broker answers on every node, pre-create topics."""
    hosts, docker = _inventory(inventory)
    _finish_deploy(_with_progress(lambda p: deploy.deploy(hosts, options.resolved(hosts), p, docker=docker)), as_json)


@app.command("up")
@expected_failures
@stack_options
def up_command(
    inventory: str = INVENTORY_OPTION,
    skip_preflight: bool = typer.Option(False, "--skip-preflight", help="Do not probe ports first."),
    memory: float = MEMORY_OPTION,
    as_json: bool = JSON_OPTION,
    options: deploy.DeployOptions = None,
) -> None:
    """Preflight, swarm up, deploy and topics: a fresh server group to a verified-reachable Kafka."""
    hosts, docker = _inventory(inventory)
    options = options.resolved(hosts)
    deploy.validate(hosts, options)
    checked = None if skip_preflight else _gate_preflight(hosts, docker, memory, as_json, options.listeners)
    result = _with_progress(lambda p: deploy.up(hosts, options, skip_preflight=True, on_progress=p, docker=docker))
    if not as_json:
        tables.print_swarm(result.swarm, out)
    _finish_deploy(result.deploy, as_json, {"preflight": checked, "swarm": result.swarm.to_dict()})
