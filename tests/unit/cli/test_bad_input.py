"""Bad input on every command: refused before anything is contacted or changed, exit 2, one error line and a hint,
no traceback, and under --json exactly one JSON object on stdout.  The commands are found in the app itself, so a
new command is covered the day it is added."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from swarmkit.cli.app import app
from swarmkit.cli.app import command as loaded

runner = CliRunner()
HOST = {"name": "node1", "endpoint": "unix:///nonexistent/node1.sock", "address": "10.9.0.1", "role": "manager"}
DUMMY_ARGUMENTS = {"action": "block", "port": "9094/tcp"}  # any other argument: a host name


def _commands() -> Iterator[tuple[list[str], list[str]]]:
    """Every leaf command's words and the options it takes."""
    pending = [([], typer.main.get_command(app))]
    while pending:
        path, command = pending.pop()
        if hasattr(command, "list_commands"):
            pending += [([*path, name], loaded(command, None, name)) for name in command.list_commands(None)]
        else:
            arguments = [DUMMY_ARGUMENTS.get(p.name or "", "node1") for p in command.params if p.param_type_name == "argument"]
            yield [*path, *arguments], [option for p in command.params for option in p.opts]


COMMANDS = sorted(_commands())


def _bad_inputs(options: list[str], files: dict[str, str]) -> Iterator[list[str]]:
    """The bad values a command can be given: a fifo (never read: no hang) or a file with a reserved label as its
    inventory, a stack or sandbox name with a newline, a fifo as its client configuration."""
    if "--name" in options:
        yield ["--name", "sk\n"]
        return  # the sandbox commands: nothing below may reach them with a valid name
    if "--inventory" in options:
        yield ["-i", files["fifo"]]
        yield ["-i", files["reserved"]]
    if "--stack" in options:
        yield ["--stack", "kafka\n"]
    if "--config" in options:
        yield ["--config", files["fifo"]]


@pytest.fixture
def bad_files(tmp_path: Path) -> dict[str, str]:
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "reserved.yaml").write_text(yaml.safe_dump({"hosts": [{**HOST, "labels": {"swarmkit.broker-id": "99"}}]}))
    return {name: str(tmp_path / f"{name}.yaml") for name in ("fifo", "reserved")}


@pytest.mark.parametrize(("words", "options"), COMMANDS, ids=[" ".join(w) for w, _ in COMMANDS])
def test_every_command_refuses_bad_input_with_one_json_object(words: list[str], options: list[str], bad_files) -> None:
    tried = 0
    for bad in _bad_inputs(options, bad_files):
        inventory = [] if "-i" in bad or "--inventory" not in options else ["-i", bad_files["reserved"]]
        result = runner.invoke(app, [*words, *inventory, *bad, "--json"])
        shown = f"{words} {bad}: exit {result.exit_code}\n{result.stdout}{result.stderr}"
        assert result.exit_code == 2 and isinstance(result.exception, SystemExit), shown
        assert isinstance(json.loads(result.stdout), dict), shown  # the whole of stdout: exactly one object
        errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
        assert len(errors) == 1 and "Traceback" not in result.stderr, shown
        assert result.stderr.splitlines()[-1].startswith("hint: "), shown
        tried += 1
    assert tried, f"{words}: no bad input tried"


@pytest.mark.parametrize(
    "arguments",
    [
        ["replace-node", "gone\n", "node1"],
        ["replace-node", "gone", "node2"],  # not a manager of the inventory
        ["spark", "up", "--image", ""],
        ["spark", "up", "--registry", "registry:99999"],
        ["image", "push", "--image", ""],
        ["image", "push", "--image", "Apache/Kafka"],
        ["metrics", "up", "--image", ""],
        ["roll", "--set", "log.retention.hours=48\nlisteners=PLAINTEXT://:1"],
        ["roll", "--set", "node.id=7"],  # swarmkit's own: refused before the service is read
        ["up", "--hostname-command", ""],
        ["plan", "--image", "kafka:4.4.0\n"],
        ["users", "add", "bad name"],
        ["rebalance", "--topics", "orders,pay\nments"],
    ],
    ids=lambda arguments: " ".join(arguments).replace("\n", "\\n"),
)
def test_a_value_is_checked_before_any_engine_is_asked(arguments: list[str], bad_files, tmp_path: Path) -> None:
    """The engines of this inventory do not exist: asking one would be another error (exit 1, "does not answer")."""
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"hosts": [HOST]}))
    result = runner.invoke(app, [*arguments, "-i", str(inventory), "--json"])
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "does not answer" not in result.stdout and isinstance(json.loads(result.stdout), dict)
    assert [line.split(":")[0] for line in result.stderr.splitlines()] == ["error", "hint"], result.stderr


@pytest.mark.parametrize(
    "arguments",
    [
        ["client-config", "--user", "bad name"],
        ["client-config", "--rack", "eu west"],
        ["users", "check", "app", "--topic", "or\nders"],
        ["roll", "--node", "node1\n"],
        ["verify", "--master", ""],
        ["verify", "--metrics-address", "0.0.0.0\n", "--every", "5"],
        ["image", "push", "--from", ""],
    ],
    ids=lambda arguments: " ".join(arguments).replace("\n", "\\n"),
)
def test_every_free_text_option_refuses_an_empty_or_control_value(arguments: list[str], tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"hosts": [HOST]}))
    result = runner.invoke(app, [*arguments, "-i", str(inventory)])
    assert result.exit_code == 2 and result.stderr.startswith("error: Invalid value for"), result.stderr


@pytest.mark.parametrize("command", ["plan", "up"])
@pytest.mark.parametrize(
    "quotas",
    [
        [{"client_id": "bulk", "producer_byte_rate": -1}],
        [{"client_id": "bulk", "request_percentage": 150}],
        [{"producer_byte_rate": 1024}],
        [{"client_id": "bulk", "producer_rate": 1024}],
    ],
)
def test_a_bad_quota_is_refused_before_any_engine_is_asked(command: str, quotas: list, tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump({"stack": {"quotas": quotas}, "hosts": [HOST]}))
    result = runner.invoke(app, [command, "-i", str(inventory)])
    assert result.exit_code == 2 and "does not answer" not in result.stderr, result.stderr
    error, hint = result.stderr.splitlines()
    assert error.startswith(f"error: {inventory}: field 'stack.quotas.#1'") and hint.startswith("hint: each entry names"), hint


def test_a_group_run_bare_shows_its_help_once_and_a_usage_error_none() -> None:
    bare = runner.invoke(app, ["sandbox"])
    assert bare.exit_code == 2 and bare.stdout.count("Usage: ") == 1 and "error:" not in bare.stderr, bare.stderr
    wrong = runner.invoke(app, ["sandbox", "--bogus"])
    assert wrong.exit_code == 2 and "Usage: " not in wrong.stdout
    assert wrong.stderr.splitlines() == ["error: No such option: --bogus", "hint: see: root sandbox --help"]
