"""The sandbox's small system helpers: commands, commands in a host's namespace, processes in a host."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from swarmkit import waits
from swarmkit.errors import SandboxError


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True)
    if check and result.returncode != 0:
        raise SandboxError(f"'{' '.join(command)}' failed: {result.stderr.strip()}")
    return result


def in_netns(netns: str, *command: str, check: bool = True) -> subprocess.CompletedProcess:
    return run("nsenter", f"--net=/var/run/netns/{netns}", *command, check=check)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    waits.until(
        lambda: condition() or waits.NotYet(),
        timeout,
        fail=lambda why: SandboxError(f"{what} did not come up within {timeout:.0f} s"),
    )


def spawn_in_host(netns: str, hostname: str, script: str, log: Path) -> int:
    """A long-running process "on" a sandbox host: its network namespace, its hostname and a private /run.

    nsenter + unshare rather than `ip netns exec`: the latter remounts /sys (dockerd then loses the
    cgroup mounts).  The private /run hides this machine's own sockets and pid files.  ``script``
    runs in sh after that and should exec the server; returns the pid."""
    prologue = f"hostname {hostname} && mount -t tmpfs tmpfs /run && "
    command = ["nsenter", f"--net=/var/run/netns/{netns}", "unshare", "--uts", "--mount", "--propagation", "private"]
    with open(log, "ab") as output:
        process = subprocess.Popen(
            [*command, "sh", "-c", prologue + script], stdout=output, stderr=subprocess.STDOUT, start_new_session=True
        )
    return process.pid
