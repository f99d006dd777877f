"""swarmkit as an installed tool: the wheel, installed outside the checkout (not editable), runs.

The fresh venv gets only the wheel; its dependencies come from the project's .venv through a
.pth line (a path added that way runs none of the .venv's own .pth files, so the checkout's
editable install stays out of sight).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = """\
stack:
  engine: apache
hosts:
  - {name: kafka1, endpoint: "ssh://ops@kafka1.example.net", address: 10.0.1.11, role: manager}
  - {name: kafka2, endpoint: "ssh://ops@kafka2.example.net", address: 10.0.1.12, role: worker}
"""


def _run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv holding the swarmkit wheel built from this checkout."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"  # a copy: setuptools builds in the tree, and a stale build/ would leak in
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__"))
    built = _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", work / "wheel", source, cwd=work)
    assert built.returncode == 0, built.stderr
    venv = work / "venv"
    assert _run("python3", "-m", "venv", venv, cwd=work).returncode == 0
    wheel = next((work / "wheel").glob("swarmkit-*.whl"))
    added = _run(venv / "bin" / "pip", "install", "--no-deps", "--no-index", wheel, cwd=work)
    assert added.returncode == 0, added.stderr
    site = _run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work)
    Path(site.stdout.strip(), "project-venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin"


def test_the_installed_package_is_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    where = _run(installed / "python", "-c", "import swarmkit; print(swarmkit.__file__)", cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert not Path(where.stdout.strip()).is_relative_to(ROOT)


def test_help_runs_from_another_directory(installed: Path, tmp_path: Path) -> None:
    result = _run(installed / "swarmkit", "--help", cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert "render" in result.stdout


def test_render_reads_the_shipped_stack_files(installed: Path, tmp_path: Path) -> None:
    """render with a cluster id contacts no engine: it only needs the package's own files."""
    (tmp_path / "servers.yaml").write_text(INVENTORY)
    command = (installed / "swarmkit", "render", "-i", "servers.yaml", "--cluster-id", "c3dhcm1raXQtZXhhbXBsZQ")
    printed = _run(*command, cwd=tmp_path)
    assert printed.returncode == 0 and "Traceback" not in printed.stderr, printed.stderr
    assert "\n  broker:\n" in printed.stdout
    written = _run(*command, "-o", "out", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert (tmp_path / "out" / "entrypoint.sh").read_text() == (ROOT / "stacks" / "apache" / "entrypoint.sh").read_text()
