"""The processes a sandbox started, found by walking /proc (their command lines name its directory) and
ended: the state file may be missing after a crash, and a stopped engine leaves no pid to trust.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from swarmkit import waits
from swarmkit.sandbox.state import SandboxHost


def all_processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) for every process on this machine."""
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry.name)] = (parent, cmdline)
    return table


def processes_under(directory: str | Path) -> set[int]:
    """Processes this sandbox started (their command line names its directory) and their children.

    dockerd, its containerd, the shims and the registry all carry the directory in their
    arguments; container processes are children of the shims.  The directory is matched with its trailing
    slash: sandbox 'ir' (or host ir1) must not claim the processes of sandbox 'irx' (or host ir10).
    """
    marker = f"{str(directory).rstrip('/')}/"
    table = all_processes()
    return _with_descendants(table, {pid for pid, (_, cmdline) in table.items() if marker in cmdline and pid != os.getpid()})


def _with_descendants(table: dict[int, tuple[int, str]], roots: set[int]) -> set[int]:
    found = set(roots)
    grew = True
    while grew:
        children = {pid for pid, (parent, _) in table.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return found


def engine_processes(host: SandboxHost) -> set[int]:
    """The host's dockerd, containerd, shims and containers: not its sshd (a server's Docker can stop alone)."""
    sshd_tree = _with_descendants(all_processes(), {host.sshd_pid}) if host.sshd_pid else set()
    return processes_under(host.directory) - sshd_tree


def kill(pids: set[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    waits.until(lambda: not any(_alive(pid) for pid in pids) or waits.NotYet(), 10, first=0.05, longest=0.5)


def _alive(pid: int) -> bool:
    """Running and not a zombie; reaps the zombie when it is our own child (engines we started)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
