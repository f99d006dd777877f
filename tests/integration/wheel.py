"""swarmkit's wheel built from this checkout and installed in a fresh venv outside it, once per test run
(test_install and test_ssh both run it).

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

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv holding the swarmkit wheel built from this checkout."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"  # a copy: setuptools builds in the tree, and a stale build/ would leak in
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__"))
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", work / "wheel", source, cwd=work)
    assert built.returncode == 0, built.stderr
    venv = work / "venv"
    assert run("python3", "-m", "venv", venv, cwd=work).returncode == 0
    wheel = next((work / "wheel").glob("swarmkit_kafka-*.whl"))
    added = run(venv / "bin" / "pip", "install", "--no-deps", "--no-index", wheel, cwd=work)
    assert added.returncode == 0, added.stderr
    site = run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work)
    Path(site.stdout.strip(), "project-venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv / "bin"
