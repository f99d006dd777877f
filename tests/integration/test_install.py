"""swarmkit as an installed tool: the wheel, installed outside the checkout (not editable), runs
(the wheel and its venv: tests/integration/wheel.py, built once per run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.wheel import ROOT, run

pytestmark = pytest.mark.integration

INVENTORY = """\
stack:
  engine: apache
hosts:
  - {name: kafka1, endpoint: "ssh://ops@kafka1.example.net", address: 10.0.1.11, role: manager}
  - {name: kafka2, endpoint: "ssh://ops@kafka2.example.net", address: 10.0.1.12, role: worker}
"""


def test_the_installed_package_is_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    where = run(installed / "python", "-c", "import swarmkit; print(swarmkit.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert not Path(where.stdout.strip()).is_relative_to(ROOT)


def test_help_runs_from_another_directory(installed: Path, tmp_path: Path) -> None:
    result = run(installed / "swarmkit", "--help", cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "render" in result.stdout


def test_render_reads_the_shipped_stack_files(installed: Path, tmp_path: Path) -> None:
    """render with a cluster id contacts no engine: it only needs the package's own files."""
    (tmp_path / "servers.yaml").write_text(INVENTORY)
    command = (installed / "swarmkit", "render", "-i", "servers.yaml", "--cluster-id", "c3dhcm1raXQtZXhhbXBsZQ")
    printed = run(*command, cwd=tmp_path)
    assert printed.returncode == 0 and "Traceback" not in printed.stderr, printed.stderr
    assert "\n  broker:\n" in printed.stdout
    written = run(*command, "-o", "out", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "out" / "entrypoint.sh").read_text() == (ROOT / "stacks" / "apache" / "entrypoint.sh").read_text()
