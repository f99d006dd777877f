"""A broker data disk of a set size on each sandbox host, so a full disk can be drilled.

`sandbox up --data-limit 256m` mounts a tmpfs of that size per host (``HOST_DIR/broker-data``, in this
machine's mount namespace before the host's dockerd starts, so the engine sees the same filesystem) and
creates the stack's broker data volume (``kafka_data``, the default stack's) on each engine as a bind of
its ``log`` directory: Kafka's log directory then has exactly that much room, as on a server whose data
disk is that size.  tmpfs, not a loop device: it needs no free loop device, costs only the memory written,
and is gone with the sandbox.  `sandbox fault disk-full` fills the rest with one file beside ``log``
(``fallocate``: the whole limit at once, nothing written), heal removes it.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

from swarmkit.errors import SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.sandbox.system import run

DISK_DIR = "broker-data"
LOG_DIR = "log"  # the volume's content: Kafka's log directory
FILLER = "disk-full.filler"
DATA_VOLUME = "kafka_data"  # the default stack's broker data volume (stack.engines.apache.DATA_VOLUME)
LIMIT = re.compile(r"^([1-9][0-9]{0,4})([mg])$")
SMALLEST_MIB, LARGEST_MIB = 64, 8192
FILL_ATTEMPTS = 20


def limit(text: str) -> str:
    """A data disk size such as 256m or 1g (64m to 8g), checked: tmpfs's own size syntax."""
    match = LIMIT.match(text.lower())
    mib = int(match.group(1)) * (1024 if match.group(2) == "g" else 1) if match else 0
    if not SMALLEST_MIB <= mib <= LARGEST_MIB:
        raise SpecError(f"data limit '{text}' is not a size from 64m to 8g", hint="e.g. --data-limit 256m")
    return text.lower()


def disk_of(host_directory: str) -> Path:
    return Path(host_directory) / DISK_DIR


def mount(host_directory: str, size: str) -> None:
    """The host's data disk, unless mounted already (an engine started again keeps its data)."""
    disk = disk_of(host_directory)
    disk.mkdir(parents=True, exist_ok=True)
    if not os.path.ismount(disk):
        run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", f"swarmkit-{disk.parent.name}", str(disk))
    (disk / LOG_DIR).mkdir(exist_ok=True)


def create_volume(engine: Engine, host_directory: str) -> None:
    """The broker data volume as a bind of the disk's log directory (the engine copies the image's
    directory owner into it at the first mount, as into any new volume)."""
    dockerapi.ensure_bind_volume(engine, DATA_VOLUME, str(disk_of(host_directory) / LOG_DIR))


def fill(host_directory: str) -> int:
    """Take every free byte of the disk with one file; returns how many were taken.  A broker writing meanwhile
    makes ``fallocate`` of what was free a moment ago fail (tmpfs then takes nothing): it is tried again with what
    is free now."""
    disk, taken = disk_of(host_directory), 0
    with open(disk / FILLER, "ab") as filler:
        for _ in range(FILL_ATTEMPTS):
            stats = os.statvfs(disk)
            free = stats.f_bavail * stats.f_frsize
            if not free:
                break
            try:
                os.posix_fallocate(filler.fileno(), os.fstat(filler.fileno()).st_size, free)
            except OSError as error:
                if error.errno != errno.ENOSPC:
                    raise
                continue
            taken += free
    return taken


def free(host_directory: str) -> int:
    """Remove the filler; the bytes it held (0 when there was none)."""
    filler = disk_of(host_directory) / FILLER
    try:
        size = filler.stat().st_size
        filler.unlink()
    except FileNotFoundError:
        return 0
    return size


def usage(host_directory: str) -> tuple[int, int]:
    """(bytes used, bytes in all) of the host's data disk."""
    stats = os.statvfs(disk_of(host_directory))
    return (stats.f_blocks - stats.f_bfree) * stats.f_frsize, stats.f_blocks * stats.f_frsize
