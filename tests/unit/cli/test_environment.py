"""The inventory found without -i, and the options runbooks repeat taken from the environment (shown in --help)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from swarmkit.cli.app import app
from swarmkit.errors import InventoryError
from swarmkit.hosts.inventory import find_inventory
from tests.unit.cli.test_cli import INVENTORY, write_inventory

runner = CliRunner()
RENDER = ["render", "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw"]
APACHE = {**INVENTORY, "stack": {"engine": "apache"}}


def test_find_inventory_takes_the_given_one_then_a_default_file(tmp_path: Path) -> None:
    assert find_inventory("elsewhere.yaml", tmp_path) == "elsewhere.yaml"
    with pytest.raises(InventoryError, match="no inventory") as caught:
        find_inventory(None, tmp_path)
    assert "SWARMKIT_INVENTORY" in caught.value.hint and caught.value.exit_code == 2
    (tmp_path / "swarmkit-sandbox.yaml").write_text("")
    assert find_inventory(None, tmp_path) == "swarmkit-sandbox.yaml"
    (tmp_path / "swarmkit.yaml").write_text("")
    assert find_inventory(None, tmp_path) == "swarmkit.yaml"


def test_the_inventory_comes_from_the_environment_or_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_inventory(tmp_path, APACHE)
    given = runner.invoke(app, [*RENDER, "-i", path])
    assert given.exit_code == 0, given.output
    from_env = runner.invoke(app, RENDER, env={"SWARMKIT_INVENTORY": path})
    assert from_env.exit_code == 0 and from_env.stdout == given.stdout, from_env.output
    monkeypatch.chdir(tmp_path)
    Path(path).rename(tmp_path / "swarmkit.yaml")
    found = runner.invoke(app, RENDER, env={"SWARMKIT_INVENTORY": None})
    assert found.exit_code == 0 and found.stdout == given.stdout, found.output
    (tmp_path / "swarmkit.yaml").unlink()
    missing = runner.invoke(app, RENDER, env={"SWARMKIT_INVENTORY": None})
    assert missing.exit_code == 2 and "no inventory" in missing.output and "SWARMKIT_INVENTORY" in missing.output


def test_the_stack_name_comes_from_the_environment_and_is_checked(tmp_path: Path) -> None:
    path = write_inventory(tmp_path, APACHE)
    named = runner.invoke(app, [*RENDER, "-i", path, "-o", str(tmp_path / "out")], env={"SWARMKIT_STACK": "orders"})
    assert named.exit_code == 0 and f"{tmp_path / 'out' / 'stack.yml'} orders" in named.output, named.output
    bad = runner.invoke(app, [*RENDER, "-i", path], env={"SWARMKIT_STACK": "../up"})
    assert bad.exit_code == 2 and "--stack" in bad.output, bad.output


@pytest.mark.parametrize(
    ("command", "variable"),
    [
        (["verify"], "SWARMKIT_VERIFY_TIMEOUT"),
        (["roll"], "SWARMKIT_ROLL_TIMEOUT"),
        (["certs", "rotate"], "SWARMKIT_ROLL_TIMEOUT"),
        (["up"], "SWARMKIT_DEPLOY_TIMEOUT"),
    ],
)
def test_a_timeout_from_the_environment_is_checked_and_shown_in_help(tmp_path: Path, command: list[str], variable: str) -> None:
    shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"})
    assert variable in shown.output and "SWARMKIT_INVENTORY" in shown.output and "SWARMKIT_STACK" in shown.output
    refused = runner.invoke(app, [*command, "-i", write_inventory(tmp_path, INVENTORY)], env={variable: "-5"})
    assert refused.exit_code == 2 and "--timeout" in refused.output, refused.output
