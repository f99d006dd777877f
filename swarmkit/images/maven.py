"""Jars from Maven Central and what is built from them, kept in a cache outside git.

Maven runs only when a pom changed: a stamp beside each resolved directory holds the pom's hash.
One process fills the cache at a time, and Maven fills a staging directory that is renamed into
place, so an interrupted run leaves nothing half-done. Used for the Kafka image's jars and for
Spark's Kafka connector.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from swarmkit.assets import STACKS_DIR
from swarmkit.errors import SwarmkitError

DEFAULT_CACHE = Path("/var/cache/swarmkit")
MAVEN_TIMEOUT = 1800.0  # a cold ~/.m2 downloads ~80 MB of jars


def cache_dir() -> Path:
    """Where resolved jars and Java runtimes are kept between builds (never inside the git tree)."""
    return Path(os.environ.get("SWARMKIT_CACHE") or DEFAULT_CACHE)


@contextlib.contextmanager
def cache_lock(cache: Path) -> Iterator[None]:
    """One process fills the cache at a time: a second build waits, then finds it complete."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        handle = open(cache / ".lock", "w")  # noqa: SIM115 - held for the with block
    except OSError as error:
        raise SwarmkitError(
            f"cannot use the build cache {cache}: {error.strerror}",
            hint="run as root, or point SWARMKIT_CACHE at a writable directory",
        ) from error
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def digest(*parts: str | bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode() if isinstance(part, str) else part)
        hasher.update(b"\0")
    return hasher.hexdigest()


def tool(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SwarmkitError(f"{name} is not installed", hint=f"apt-get install {package} (scripts/setup.sh does)")
    return path


def _maven_error(output: str) -> str:
    """The line of Maven's output that says what failed (colour codes removed)."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line).strip() for line in output.splitlines()]
    errors = [line.removeprefix("[ERROR]").strip() for line in lines if line.startswith("[ERROR]")]
    errors = [line for line in errors if line and not line.startswith(("To see", "Re-run", "For more", "[Help"))]
    return errors[0] if errors else (next((line for line in reversed(lines) if line), "no output"))


def _shown(path: Path) -> str:
    """A shipped pom as ``stacks/...`` or ``spark/...``, whether run from a checkout or a wheel."""
    root = STACKS_DIR.parent
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def resolved(pom: Path, target: Path, properties: tuple[tuple[str, str], ...] = ()) -> Path:
    """The jars a pom depends on, copied by Maven into ``target`` once per content of the pom and ``properties``
    (``-Dkey=value`` given to Maven, e.g. the Kafka version).

    A stamp beside the directory holds the pom's hash: when it matches, Maven is not run at all.
    Maven fills a staging directory that is renamed into place, so an interrupted run leaves no
    half-filled cache behind."""
    stamp = target.with_name(f"{target.name}.sha256")
    defines = [f"-D{key}={value}" for key, value in properties]
    wanted = digest(pom.read_bytes(), *defines)
    if target.is_dir() and stamp.is_file() and stamp.read_text().strip() == wanted:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    command = [tool("mvn", "maven"), "-q", "-B", "-Dstyle.color=never", "-f", str(pom), *defines]
    command += ["dependency:copy-dependencies", f"-DoutputDirectory={staging}"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT)
        failure = _maven_error(result.stdout + result.stderr) if result.returncode else ""
    except subprocess.TimeoutExpired:
        failure = f"no result after {MAVEN_TIMEOUT:.0f} s"
    if not failure and not any(staging.glob("*.jar")):
        failure = "it copied no jar"
    if failure:
        shutil.rmtree(staging, ignore_errors=True)
        rerun = shlex.join([*command[:1], "-B", *command[4:-1], f"-DoutputDirectory={target}"])
        raise SwarmkitError(
            f"Maven could not resolve the jars of {_shown(pom)}: {failure}",
            hint=f"Maven Central must be reachable (or ~/.m2 hold the jars); to see the whole log run: {rerun}",
        )
    staging.chmod(0o755)  # mkdtemp makes it private; the image's appuser reads these jars
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    stamp.write_text(wanted + "\n")
    return target
