"""The command line: typer commands (thin) and the tables a person reads; nothing below imports it."""

from __future__ import annotations

import sys


def main() -> None:
    """The `swarmkit` program.  A Ctrl-C while its commands load (a second or two on a busy machine) or while typer
    builds them from their signatures ends it as one during a command does: "interrupted", exit 130, no traceback."""
    try:
        from swarmkit.cli.app import app

        app()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
