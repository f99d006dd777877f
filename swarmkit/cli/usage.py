"""What every command prints through, and how a usage error is shown: the part of the command line the
registry (swarmkit.cli.app) needs before any command's module is imported."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from typing import Any

import typer
from rich.console import Console
from rich.text import Text
from typer._click.exceptions import ClickException, NoArgsIsHelpError
from typer.core import TyperGroup

from swarmkit import names
from swarmkit.errors import SpecError, SwarmkitError

out = Console(markup=False, emoji=False)
if not out.is_terminal:
    out = Console(width=160, markup=False, emoji=False)
err = Console(stderr=True, soft_wrap=True, markup=False, emoji=False)


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
        except NoArgsIsHelpError as error:
            error.show()
            sys.exit(error.exit_code)
        except ClickException as error:
            report_usage_error(error, as_json="--json" in given)
            sys.exit(error.exit_code)
        sys.exit(code if isinstance(code, int) else 0)


def report_usage_error(error: ClickException, as_json: bool) -> None:
    context = getattr(error, "ctx", None)
    cause = error.__cause__
    hint = cause.hint if isinstance(cause, SwarmkitError) else f"see: {context.command_path if context else 'swarmkit'} --help"
    if as_json:
        print_json({"ok": False, "error": error.format_message(), "hint": hint})
    show_error(SpecError(error.format_message(), hint))


def print_json(data: Any) -> None:
    out.print_json(json.dumps(data, default=str))
