"""Ctrl-C while the `swarmkit` program loads its commands: "interrupted", exit 130, no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# SIGINT once the commands' module is being imported (it is in sys.modules from the start of its import on)
PROGRAM = """
import os, signal, sys, threading
def press_ctrl_c():
    while "swarmkit.cli.app" not in sys.modules:
        pass
    os.kill(os.getpid(), signal.SIGINT)
threading.Thread(target=press_ctrl_c, daemon=True).start()
from swarmkit.cli import main
sys.argv = ["swarmkit", "--version"]
main()
"""


def test_an_interrupt_while_the_commands_load_is_an_interrupt_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted\n", "")


# SIGINT while typer builds the commands from their signatures (after the import, before click parses anything)
BUILDING = """
import sys
import typer.main
def press_ctrl_c(*args, **kwargs):
    raise KeyboardInterrupt
typer.main.get_command = press_ctrl_c
from swarmkit.cli import main
sys.argv = ["swarmkit", "status", "-i", "x.yaml"]
main()
"""


def test_an_interrupt_while_typer_builds_the_commands_is_an_interrupt_not_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BUILDING], capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "interrupted\n", "")
