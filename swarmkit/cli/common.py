"""What every command shares: the consoles, the common options, the error exit, loading an inventory."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.text import Text
from typer import TyperException
from typer.core import TyperGroup

from swarmkit import files, names, numbers
from swarmkit.errors import SpecError, SwarmkitError
from swarmkit.hosts.inventory import DEFAULT_INVENTORIES, INVENTORY_ENV, find_inventory

# Neither console reads markup or emoji codes: names, specs, paths and what brokers report are printed as they
# are (styles come as rich Text); a spinner's text is made Text here too (rich would read a str as markup).
out = Console(markup=False, emoji=False)
if not out.is_terminal:
    out = Console(width=160, markup=False, emoji=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False)


def checked(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """An option callback: the value through one of swarmkit's own checks; a refusal is a usage error (exit 2)."""

    def callback(value: Any) -> Any:
        if value is not None:
            try:
                check(value)
            except SpecError as error:
                raise typer.BadParameter(error.message) from error
        return value

    return callback


def each(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A repeatable option's callback: every value through ``check`` (a refusal is a usage error, exit 2)."""
    return checked(lambda values: [check(value) for value in values])


def given(option: str) -> Callable[[Any], Any]:
    """A free-text option's callback: not empty, no control character."""
    return checked(lambda value: names.given(value, option))


JSON_OPTION = typer.Option(False, "--json", help="Print one JSON object for runbooks.")
SANDBOX_NAME = typer.Option(
    "sk", "--name", help="Sandbox name (1-6 lowercase letters/digits).", callback=checked(names.sandbox_name)
)
STACK_ENV = "SWARMKIT_STACK"
STACK_OPTION = typer.Option("kafka", "--stack", envvar=STACK_ENV, help="Stack name.", callback=checked(names.stack_name))


def _inventory(value: str | None) -> str:
    try:
        return find_inventory(value, Path.cwd())
    except SwarmkitError as error:
        raise typer.BadParameter(error.message) from error


INVENTORY_OPTION = typer.Option(
    None,
    "--inventory",
    "-i",
    envvar=INVENTORY_ENV,
    help=f"Inventory YAML naming the servers (default: {' or '.join(DEFAULT_INVENTORIES)} in this directory).",
    callback=_inventory,
)
MEMORY_OPTION = typer.Option(
    1.5, "--memory-per-broker", help="GiB of memory each host needs for a broker.", callback=checked(numbers.gib)
)
EXTERNAL_PORT_OPTION = typer.Option(
    9094,
    "--external-port",
    envvar="SWARMKIT_EXTERNAL_PORT",
    help="Client port each broker publishes (mode: host).",
    callback=checked(numbers.port),
)
INTERNAL_PORT_OPTION = typer.Option(
    9092, "--internal-port", help="Broker-to-broker port on the overlay network.", callback=checked(numbers.port)
)


def timeout_option(
    default: float | None, help: str, maximum: float = numbers.MAX_SECONDS, name: str = "--timeout", envvar: str | None = None
) -> Any:
    """A time limit in seconds (``--timeout`` unless named otherwise): finite, above 0, at most ``maximum``; runbooks
    may set it once in ``envvar``."""
    check = checked(lambda value: numbers.seconds(value, maximum))
    return typer.Option(default, name, envvar=envvar, help=help, callback=check)


def count_option(default: int | None, name: str, help: str, low: int = 1) -> Any:
    """A whole-number option (records, hosts, a rate): at least ``low``."""
    return typer.Option(default, name, help=help, callback=checked(lambda value: numbers.count(value, low)))


def expected_failures(command: Callable) -> Callable:
    """Turn SwarmkitError into a one-line error, a hint and an exit code; no traceback."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except SwarmkitError as error:
            if kwargs.get("as_json"):
                print_json({"ok": False, "error": error.message, "hint": error.hint})
            exit_with(error)
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper


def show_error(error: SwarmkitError) -> None:
    """The one-line error and its hint on stderr, as text: whatever the user typed is never read as markup, and its
    control characters are shown escaped (a NUL visible, a newline not splitting the line)."""
    err.print(Text.assemble(("error:", "bold red"), " ", names.escaped(error.message)))
    if error.hint:
        err.print(Text.assemble(("hint:", "yellow"), " ", names.escaped(error.hint)))


def exit_with(error: SwarmkitError) -> None:
    """The one-line error and its hint on stderr, then the error's exit code."""
    show_error(error)
    raise typer.Exit(error.exit_code) from None


NO_ARGS_IS_HELP = "NoArgsIsHelpError"  # known by its name, as typer itself does: its class is in a private module


class UsageErrors(TyperGroup):
    """The top command: a usage error (typer's own: an unknown option, a bad value) is shown like every other error,
    one line and a hint, exit 2; under ``--json`` with one JSON object on stdout as well."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        given = list(sys.argv[1:] if args is None else args)
        run = functools.partial(super().main, given, prog_name, complete_var, False, windows_expand_args, **extra)
        if not standalone_mode:
            return run()
        try:
            code = run()
        except TyperException as error:  # typer's usage errors (and its click's) all derive from it
            if type(error).__name__ == NO_ARGS_IS_HELP:  # a group run bare: its help, printed as it was made
                typer.echo(error.format_message(), err=True)
            else:
                report_usage_error(error, as_json="--json" in given)
            sys.exit(error.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


def report_usage_error(error: TyperException, as_json: bool) -> None:
    context = getattr(error, "ctx", None)
    cause = error.__cause__
    hint = cause.hint if isinstance(cause, SwarmkitError) else f"see: {context.command_path if context else 'swarmkit'} --help"
    if as_json:
        print_json({"ok": False, "error": error.format_message(), "hint": hint})
    show_error(SpecError(error.format_message(), hint))


def output_files(option: str, *paths: str | Path | None) -> None:
    """Files a command will write (``--report``, ``-o``), checked before it starts: bad input (exit 2) naming the
    option and the path, instead of a failure after the work is done."""
    for path in paths:
        if path is not None:
            try:
                if not str(path):
                    raise files.FileProblem("names no file")
                files.check_output_file(Path(path))
            except files.FileProblem as problem:
                raise SpecError(
                    f"{option} {names.shown(str(path), 1024)}: {problem}", hint="give a file in a directory you can write to"
                ) from None


def this_machine() -> str:
    """This machine's Docker engine, where swarmkit builds its own images before shipping them."""
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))


class ProgressLines:
    """Progress as one timestamped line per change on stderr, in any mode: a terminal, a CI log, a
    runbook's pipe (a spinner alone shows nothing there).  Text is printed as it is, never as markup."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.last = ""

    def __call__(self, message: str) -> None:
        if message != self.last:
            err.print(f"{time.monotonic() - self.started:6.1f}s  {message}", markup=False, highlight=False, emoji=False)
            self.last = message


@contextlib.contextmanager
def reporting(title: str) -> Iterator[ProgressLines]:
    """Progress lines on stderr for a command's steps, under a spinner when stderr is a terminal."""
    lines = ProgressLines()
    lines(title)
    if not err.is_terminal:
        yield lines
        return
    with err.status(title):
        yield lines
