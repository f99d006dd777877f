"""`swarmkit state`: bad input refused with exit 2 before any engine is asked, and nothing written."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from swarmkit.cli.app import app
from tests.unit.cli.test_cli import INVENTORY, write_inventory
from tests.unit.security.test_backup import SEALED

runner = CliRunner()


def test_import_refuses_a_file_that_is_not_a_state_and_writes_nothing(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path, INVENTORY)
    (tmp_path / "state.bin").write_bytes(b"not a state file at all")
    result = runner.invoke(app, ["state", "import", str(tmp_path / "state.bin"), "-i", inventory])
    assert result.exit_code == 2, result.output
    assert "not a swarmkit state file" in result.output
    assert not (tmp_path / ".swarmkit").exists()


def test_import_without_a_terminal_or_passphrase_file_says_how(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path, INVENTORY)
    (tmp_path / "state.bin").write_bytes(SEALED)
    result = runner.invoke(app, ["state", "import", str(tmp_path / "state.bin"), "-i", inventory])
    assert result.exit_code == 2, result.output
    assert "--passphrase-file" in result.output
    (tmp_path / "pass").write_text("a wrong passphrase\n")
    args = ["state", "import", str(tmp_path / "state.bin"), "-i", inventory, "--passphrase-file", str(tmp_path / "pass")]
    wrong = runner.invoke(app, args)
    assert wrong.exit_code == 2 and "wrong passphrase" in wrong.output
    assert not (tmp_path / ".swarmkit").exists()


def test_export_with_nothing_kept_is_bad_input(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path, INVENTORY)
    (tmp_path / "pass").write_text("a long enough passphrase\n")
    args = ["state", "export", "-i", inventory, "-o", str(tmp_path / "out"), "--passphrase-file", str(tmp_path / "pass")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "nothing kept for stack 'kafka'" in result.output
    assert not (tmp_path / "out").exists()
