"""Each broker's log directory: the bytes it holds and the free space of the file system under it.

Read inside each node's running broker container (``df`` and ``du`` of the image, busybox's or coreutils'),
so it needs no metrics stack: `status` and verify's report page show it; the alert rule on it reads the
node exporter's figure for the same file system (``KafkaDiskFilling``).  The parsing is pure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from swarmkit.errors import SwarmkitError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Host
from swarmkit.stack.deployed import broker_service

KIB = 1024


@dataclass(frozen=True)
class BrokerDisk:
    node: str
    log_dir_bytes: int = 0  # what the log directory holds on disk (du)
    size_bytes: int = 0  # the file system under it (df)
    free_bytes: int = 0
    error: str = ""

    @property
    def used_fraction(self) -> float:
        """How full the file system is (what the alert compares with metrics.disk_full)."""
        return 1 - self.free_bytes / self.size_bytes if self.size_bytes else 0.0


def parse_usage(node: str, text: str) -> BrokerDisk:
    """Pure: ``df -Pk DIR`` then ``du -sk DIR`` as one output."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    try:
        df = next(fields for fields in lines if len(fields) >= 6 and fields[1].isdigit())
        du = next(fields for fields in reversed(lines) if len(fields) == 2 and fields[0].isdigit())
        return BrokerDisk(node, int(du[0]) * KIB, int(df[1]) * KIB, int(df[3]) * KIB)
    except StopIteration:
        return BrokerDisk(node, error=f"unexpected df/du output: {text.strip()[:200]}")


def broker_disks(docker: DockerHosts, hosts: Sequence[Host], stack: str, data_dir: str) -> tuple[BrokerDisk, ...]:
    """Every host's broker log directory, read in its running broker container (all hosts at once)."""

    def read(host: Host) -> BrokerDisk:
        try:
            command = ["/bin/sh", "-c", 'df -Pk "$0" && du -sk "$0"', data_dir]
            return parse_usage(host.name, dockerapi.exec_in_service(docker[host], broker_service(stack), command))
        except SwarmkitError as error:
            return BrokerDisk(host.name, error=error.message)

    return tuple(fan_out(read, hosts))
