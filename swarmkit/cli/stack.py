"""`swarmkit render`, `deploy` and `up`: the stack options declared once, and the deploy progress bar."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from swarmkit import files, names, numbers, waits
from swarmkit.cli import tables
from swarmkit.cli.common import (
    INVENTORY_OPTION,
    JSON_OPTION,
    MEMORY_OPTION,
    STACK_OPTION,
    ProgressLines,
    checked,
    count_option,
    err,
    exit_with,
    expected_failures,
    out,
    print_json,
    this_machine,
    timeout_option,
)
from swarmkit.cli.engines import load_hosts
from swarmkit.cli.swarm import show_preflight
from swarmkit.errors import CHANGES_PENDING, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts import session as sessions
from swarmkit.hosts.inventory import Inventory
from swarmkit.ops import deploy, drift
from swarmkit.ops import plan as planning
from swarmkit.ops.plan import DeployOptions, DeployPlan

ENGINE_OPTION = typer.Option(None, "--engine", help="apache or tansu (default: the inventory's, else apache).")
IMAGE_OPTION = typer.Option(None, "--image", help="Broker image (default: the engine's, or the inventory's).")
ADVERTISE_OPTION = typer.Option(
    "",
    "--advertise",
    help="What each broker advertises: hostname, inventory-address or command (default: the inventory's, else hostname).",
)
HOSTNAME_COMMAND_OPTION = typer.Option(
    None, "--hostname-command", help="With --advertise command: shell command printing the host to advertise."
)
TOPICS_OPTION = typer.Option(
    "", "--topics", help="name:partitions:replicas[:key=value...], comma-separated (default: the inventory's stack.topics)."
)
STACK_EXTERNAL_PORT_OPTION = typer.Option(
    None,
    "--external-port",
    help="The clients' port on every host (default: the inventory's stack.ports, else 9094).",
    callback=checked(numbers.port),
)
STACK_INTERNAL_PORT_OPTION = typer.Option(
    None,
    "--internal-port",
    help="The brokers' port on the overlay (default: the inventory's stack.ports, else 9092).",
    callback=checked(numbers.port),
)
TIMEOUT_OPTION = timeout_option(
    None, "The most seconds to wait for a broker on every node (default 600 + 60 per node).", envvar="SWARMKIT_DEPLOY_TIMEOUT"
)
STALL_TIMEOUT_OPTION = timeout_option(
    waits.STALL_TIMEOUT,
    "Fail when no broker changed phase for this many seconds.",
    name="--stall-timeout",
    envvar="SWARMKIT_STALL_TIMEOUT",
)
REPLICATION_OPTION = count_option(
    None, "--replication-factor", "apache: default replication (default min(3, brokers); pin it to grow without rolling)."
)
SECURITY_OPTION = typer.Option(
    None,
    "--security",
    help="sasl_ssl, ssl (mutual TLS) or plaintext (default: the inventory's stack.security, else plaintext).",
)
CLUSTER_ID_OPTION = typer.Option(None, "--cluster-id", help="apache: KRaft cluster id (default: generated once, kept).")


STACK_PARAMETERS = {
    "engine": (str | None, ENGINE_OPTION),
    "image": (str | None, IMAGE_OPTION),
    "advertise": (str, ADVERTISE_OPTION),
    "hostname_command": (str | None, HOSTNAME_COMMAND_OPTION),
    "topics": (str, TOPICS_OPTION),
    "stack_name": (str, STACK_OPTION),
    "timeout": (float | None, TIMEOUT_OPTION),
    "stall_timeout": (float, STALL_TIMEOUT_OPTION),
    "cluster_id": (str | None, CLUSTER_ID_OPTION),
    "replication_factor": (int | None, REPLICATION_OPTION),
    "external_port": (int | None, STACK_EXTERNAL_PORT_OPTION),
    "internal_port": (int | None, STACK_INTERNAL_PORT_OPTION),
    "security": (str | None, SECURITY_OPTION),
}


OPTIONAL_TEXT = {"engine": None, "image": names.image_ref, "hostname_command": None, "cluster_id": None, "security": None}


def _deploy_options(**given: Any) -> DeployOptions:
    """The options as given; an empty value is refused (never taken as not given), free text has no control character."""
    for name, check in OPTIONAL_TEXT.items():
        value = given[name]
        if value == "":
            option = "--" + name.replace("_", "-")
            raise SpecError(f"{option} '' is empty", hint=f"leave {option} out for the default, or give a value")
        if value is not None:
            names.text(value, "--" + name.replace("_", "-"))
            if check is not None:
                check(value)
    if given["hostname_command"] and not given["advertise"]:
        given["advertise"] = "command"
    return planning.DeployOptions(**given)


def stack_options(command: Callable) -> Callable:
    """Give render, deploy and up the same stack options, declared once; the command gets `options`."""
    own = [p for p in inspect.signature(command).parameters.values() if p.name != "options"]  # annotations as text
    shared = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=kind)
        for name, (kind, option) in STACK_PARAMETERS.items()
    ]

    @functools.wraps(command)
    def wrapper(**given: Any) -> Any:
        stack = {name: given.pop(name) for name in STACK_PARAMETERS}
        return command(options=_deploy_options(**stack), **given)

    signature = inspect.Signature([p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared)
    wrapper.__signature__ = signature  # type: ignore[attr-defined]  # what typer reads
    wrapper.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    return wrapper


def with_progress(action: Callable[[waits.Progress], Any]) -> Any:
    """Run a deploy-like action with a progress bar on a terminal and a line per change on stderr."""
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("starting", total=None)
        lines = ProgressLines()

        def on_progress(done: int, total: int, message: str) -> None:
            progress.update(task, completed=done, total=total or None, description=message)
            lines(message)

        return action(on_progress)


def planned(hosts: Inventory, options: DeployOptions) -> DeployPlan:
    """The checked plan; say on stderr which options replace the inventory's declared state for this run, and
    what the zones cannot hold."""
    result = planning.plan(hosts, options)
    for line in options.overrides(hosts) + [f"warning: {w}" for w in result.warnings]:
        err.print(line, highlight=False)
    return result


def run_reported(action: Callable[[waits.Progress], Any], as_json: bool, printer: Callable[[Any, Any], None]) -> None:
    """A day-2 operation with progress, then its report (one JSON object, or ``printer``'s tables); a report
    that is not ok exits with its error."""
    report = with_progress(action)
    if as_json:
        print_json(report.to_dict())
    else:
        printer(report, out)
    if not report.ok:
        exit_with(report.error())


def warn_plaintext(planned: DeployPlan) -> None:
    """Real servers (any engine not on a local socket) in plaintext: say so, once, on stderr."""
    if planned.options.listeners.secure or all(host.endpoint.startswith("unix://") for host in planned.inventory.hosts):
        return
    err.print(
        "warning: security plaintext: clients reach the brokers unencrypted and without credentials, "
        "and anything on the overlay can talk to brokers and controllers; use --security sasl_ssl",
        highlight=False,
    )


def _finish_deploy(result: deploy.DeployResult, as_json: bool, extra: dict | None = None) -> None:
    if as_json:
        print_json({**(extra or {}), **result.to_dict()} if extra else result.to_dict())
    else:
        tables.print_deploy(result, out)
    if not result.ok:
        exit_with(result.error())  # the JSON above already says ok: false


@contextlib.contextmanager
def output_dir_problems(output: str) -> Iterator[None]:
    """``render -o DIR``: a problem with the directory is a one-line error naming it."""
    try:
        yield
    except files.FileProblem as problem:
        raise SpecError(f"-o {output}: {problem}", hint="give a new or existing directory you can write to") from None


@expected_failures
@stack_options
def render(
    inventory: str = INVENTORY_OPTION,
    output: str | None = typer.Option(
        None, "--output", "-o", help="Write DIR/stack.yml and the files its configs name, instead of printing."
    ),
    *,
    options: DeployOptions,
) -> None:
    """Print the stack YAML (stable, readable); with -o DIR, a directory deployable with `docker stack deploy -c`."""
    with output_dir_problems(output or ""):  # checked before anything is read or written
        directory = files.check_output_dir(Path(output)) if output is not None else None
    hosts, docker = load_hosts(inventory)
    stack = deploy.render_for(planned(hosts, options), sessions.Session(hosts, docker))
    if directory is None:
        typer.echo(stack.text, nl=False)
        return
    with output_dir_problems(output or ""):
        path = stack.write(directory)
    beside = ", ".join(config.filename for config in stack.files)
    out.print(f"wrote {path}" + (f" and beside it {beside}" if beside else ""), highlight=False, soft_wrap=True)
    out.print(f"deploy by hand: docker stack deploy -c {path} {options.stack_name}", highlight=False, soft_wrap=True)


@expected_failures
@stack_options
def deploy_command(inventory: str = INVENTORY_OPTION, as_json: bool = JSON_OPTION, *, options: DeployOptions) -> None:
    """Deploy the stack, wait until a broker answers on every node, pre-create topics."""
    hosts, docker = load_hosts(inventory)
    checked_plan = planned(hosts, options)
    warn_plaintext(checked_plan)
    _finish_deploy(
        with_progress(lambda progress: deploy.deploy(checked_plan, sessions.Session(hosts, docker, progress))), as_json
    )


@expected_failures
@stack_options
def up_command(
    inventory: str = INVENTORY_OPTION,
    skip_preflight: bool = typer.Option(False, "--skip-preflight", help="Do not probe ports first."),
    memory: float = MEMORY_OPTION,
    as_json: bool = JSON_OPTION,
    *,
    options: DeployOptions,
) -> None:
    """Preflight, swarm up, deploy and topics: a fresh server group to a verified-reachable Kafka."""
    hosts, docker = load_hosts(inventory)
    checked_plan = planned(hosts, options)
    warn_plaintext(checked_plan)
    gate = None if skip_preflight else deploy.PreflightGate(memory, functools.partial(show_preflight, as_json=as_json))
    local = dockerapi.Engine.connect(this_machine())
    result = with_progress(lambda progress: deploy.up(checked_plan, sessions.Session(hosts, docker, progress, local), gate))
    checked = result.preflight.to_dict() if result.preflight is not None else None
    if not as_json:
        tables.print_swarm(result.swarm, out)
        if result.shipped is not None and any(d.action != "present" for d in result.shipped.deliveries):
            tables.print_push(result.shipped, out)
    shipped = result.shipped.to_dict() if result.shipped is not None else None
    _finish_deploy(result.deploy, as_json, {"preflight": checked, "swarm": result.swarm.to_dict(), "shipped": shipped})


@expected_failures
@stack_options
def plan_command(inventory: str = INVENTORY_OPTION, as_json: bool = JSON_OPTION, *, options: DeployOptions) -> None:
    """What `up` would change (topics to create or alter, partitions to add, users, client quotas, brokers to
    restart); changes nothing.
    Exit 0 with "no changes" when none, 3 when changes are pending (1 and 2: it could not tell)."""
    hosts, docker = load_hosts(inventory)
    changes = drift.read_changes(planned(hosts, options), sessions.Session(hosts, docker))
    if as_json:
        print_json(changes.to_dict())
    else:
        for line in changes.lines():
            out.print(line, highlight=False, soft_wrap=True)
    if changes.pending:
        raise typer.Exit(CHANGES_PENDING)
