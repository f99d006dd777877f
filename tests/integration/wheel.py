"""swarmkit's wheel built from this checkout and installed in a fresh venv outside it, once per test run
(test_install and test_ssh run it; test_deploy runs it without the spark extra).

The fresh venv gets only the wheel; its dependencies come from the project's .venv through a
.pth line (a path added that way runs none of the .venv's own .pth files, so the checkout's
editable install stays out of sight). Without the spark extra, that line names a directory of
links to the .venv's packages less the extra's distributions (pyspark and what it requires) and the
checkout's own install: what `pip install swarmkit-kafka` gives, without a download.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT_DISTRIBUTIONS = re.compile(r"(__editable__.*|swarmkit(_kafka)?-.*\.dist-info)")


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The swarmkit wheel built from a copy of this checkout."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"  # a copy: setuptools builds in the tree, and a stale build/ would leak in
    shutil.copytree(ROOT, source, symlinks=True, ignore=shutil.ignore_patterns(".*", "build", "*.egg-info", "__pycache__"))
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", work / "wheel", source, cwd=work)
    assert built.returncode == 0, built.stderr
    return next((work / "wheel").glob("swarmkit_kafka-*.whl"))


def _venv(work: Path, wheel: Path, dependencies: Path) -> Path:
    """The bin directory of a fresh venv holding ``wheel``, its dependencies found in ``dependencies``."""
    venv = work / "venv"
    assert run("python3", "-m", "venv", venv, cwd=work).returncode == 0
    added = run(venv / "bin" / "pip", "install", "--no-deps", "--no-index", wheel, cwd=work)
    assert added.returncode == 0, added.stderr
    site = run(venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work)
    Path(site.stdout.strip(), "project-venv.pth").write_text(f"{dependencies}\n")
    return venv / "bin"


@pytest.fixture(scope="session")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv holding the swarmkit wheel built from this checkout (with every extra's
    packages at hand)."""
    return _venv(tmp_path_factory.mktemp("install"), wheel, Path(sysconfig.get_path("purelib")))


def _spark_entries() -> set[str]:
    """The site-packages entries of the spark extra's distributions and of what they require (no extras)."""
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["spark"]
    wanted, entries, seen = [re.split(r"[<>=!~; \[]", spec)[0] for spec in extra], set(), set()
    while wanted:
        name = wanted.pop()
        if name.lower() in seen:
            continue
        seen.add(name.lower())
        distribution = importlib.metadata.distribution(name)
        entries |= {file.parts[0] for file in distribution.files or () if file.parts[0] != ".."}
        wanted += [re.split(r"[<>=!~; \[]", spec)[0] for spec in distribution.requires or () if ";" not in spec]
    return entries


@pytest.fixture(scope="session")
def installed_without_spark(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh venv holding the wheel without its spark extra: no pyspark importable."""
    work = tmp_path_factory.mktemp("install-without-spark")
    packages, left_out = work / "packages", _spark_entries()
    packages.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if entry.name not in left_out and not PROJECT_DISTRIBUTIONS.fullmatch(entry.name) and entry.suffix != ".pth":
            (packages / entry.name).symlink_to(entry)
    return _venv(work, wheel, packages)
