"""User text is data: markup and emoji codes in names, specs, paths and reported strings are printed as they are."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from swarmkit.cli import common, tables
from swarmkit.cli.app import app
from swarmkit.errors import SwarmkitError
from swarmkit.ops.teardown import DownReport
from swarmkit.sandbox.status import HostStatus, SandboxStatus

runner = CliRunner()
HOSTILE = ("[/x]", "[red]x", "[bold]y[/bold]", ":thumbs_down:", ":-1:", "[link=file:///etc]z[/link]")
INVENTORY = {
    "stack": {"engine": "tansu", "image": "registry.example:5000/swarmkit/tansu:0.6.0"},
    "hosts": [{"name": "node1", "endpoint": "unix:///nonexistent/node1.sock", "address": "10.9.0.1", "role": "manager"}],
}


@pytest.mark.parametrize("text", HOSTILE)
def test_an_error_and_its_hint_are_printed_as_they_are(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    common.show_error(SwarmkitError(f"stack {text} failed", hint=f"try {text}"))
    printed = capsys.readouterr().err
    assert f"error: stack {text} failed" in printed and f"hint: try {text}" in printed


@pytest.mark.parametrize("text", HOSTILE)
def test_tables_print_reported_strings_as_they_are(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    host = HostStatus(f"n{text}", "10.0.0.1", "unix:///x", 1, True, text, "active")
    tables.print_sandbox(SandboxStatus(text, True, "10.0.0.0/24", "skb", "", text, (host,), (text,)), common.out)
    tables.print_down(DownReport("kafka", (text,), True, {"h": [text]}, {"n": [text]}, (text,)), common.out)
    printed = capsys.readouterr().out
    assert printed.count(text) >= 6, printed


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_options_give_one_line_errors_naming_them(text: str, tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    for args in (["--stack", text], ["--topics", f"t{text}:1:1"], ["--topics", f"t:{text}:1"], ["--image", text]):
        result = runner.invoke(app, ["render", "-i", str(inventory), *args, "--json"])
        assert result.exit_code == 2, (args, result.output)
        assert text in result.stdout and result.exception is None or isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output
    path = str(tmp_path / f"inv{text}.yaml")  # as a path, normalised
    missing = runner.invoke(app, ["render", "-i", path])
    assert missing.exit_code == 2 and path in missing.output
