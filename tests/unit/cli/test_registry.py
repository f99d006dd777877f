"""The command registry: `swarmkit --help` lists every command without importing one; each runs as registered."""

from __future__ import annotations

import subprocess
import sys

import pytest

from swarmkit.cli import app as registry

HELP_ONLY = """
import sys
from typer.testing import CliRunner
from swarmkit.cli.app import app
result = CliRunner().invoke(app, sys.argv[1:])
assert result.exit_code == 0, result.output
loaded = sorted(m for m in sys.modules if m.startswith("swarmkit.cli.") and m not in ("swarmkit.cli.app", "swarmkit.cli.usage"))
heavy = sorted(m for m in ("confluent_kafka", "python_on_whales", "cryptography", "kafka") if m in sys.modules)
print(loaded, heavy)
"""


@pytest.mark.parametrize("args", [["--help"], ["--version"]])
def test_help_and_version_import_no_command(args: list[str]) -> None:
    shown = subprocess.run([sys.executable, "-c", HELP_ONLY, *args], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[] []"


def test_a_command_imports_its_own_module_only() -> None:
    shown = subprocess.run([sys.executable, "-c", HELP_ONLY, "ssh", "--help"], capture_output=True, text=True, check=True)
    assert shown.stdout.startswith("['swarmkit.cli.common', 'swarmkit.cli.ssh']")


@pytest.mark.parametrize("name", list(registry.COMMANDS))
def test_each_summary_is_the_commands_own_help(name: str) -> None:
    command = registry.load(name)
    assert command.name == name
    assert command.get_short_help_str(limit=300) == registry.COMMANDS[name].summary
