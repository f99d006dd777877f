"""Files from Debian packages, downloaded and unpacked into the cache outside git (never installed).

``apt-get download`` fetches the packages as this machine's apt sources have them and ``dpkg-deb -x``
unpacks them into one tree: nothing is installed, no service starts on this machine.  As with Maven's
jars (``maven``), a staging directory is renamed into place and a stamp beside it names the packages,
so an interrupted run leaves nothing half-done and a later build only checks the stamp.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from swarmkit.errors import SwarmkitError
from swarmkit.images import maven

APT_TIMEOUT = 600.0


def _run(command: list[str], cwd: Path, what: str) -> None:
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=APT_TIMEOUT)
        failure = (result.stderr or result.stdout).strip().splitlines()[-1:] if result.returncode else []
    except subprocess.TimeoutExpired:
        failure = [f"no result after {APT_TIMEOUT:.0f} s"]
    if failure:
        raise SwarmkitError(
            f"{what} failed: {failure[0] if failure[0] else 'no output'}",
            hint="Debian's package archive must be reachable (run `apt-get update` once), or pass --image REF",
        )


def unpacked(packages: Sequence[str], target: Path) -> Path:
    """The packages unpacked into ``target`` (one tree), once per list of names."""
    stamp = target.with_name(f"{target.name}.sha256")
    wanted = maven.digest(*packages)
    if target.is_dir() and stamp.is_file() and stamp.read_text().strip() == wanted:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    staging.chmod(0o755)  # apt's _apt user downloads into it
    try:
        downloads = staging / "debs"
        downloads.mkdir()
        downloads.chmod(0o777)  # apt drops to its _apt user to download
        _run([maven.tool("apt-get", "apt"), "download", *packages], downloads, f"apt-get download {' '.join(packages)}")
        for deb in sorted(downloads.glob("*.deb")):
            _run([maven.tool("dpkg-deb", "dpkg"), "-x", str(deb), str(staging / "root")], staging, f"dpkg-deb -x {deb.name}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(target, ignore_errors=True)
    (staging / "root").rename(target)
    shutil.rmtree(staging)
    stamp.write_text(wanted + "\n")
    return target
