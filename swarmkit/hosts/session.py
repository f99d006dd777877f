"""One command's reach, passed explicitly: the inventory, a Docker client per host, this machine's engine,
and where progress goes."""

from __future__ import annotations

from dataclasses import dataclass

from swarmkit.hosts.dockerapi import DockerHosts, Engine
from swarmkit.hosts.inventory import Inventory
from swarmkit.waits import Progress, no_progress


@dataclass(frozen=True)
class Session:
    inventory: Inventory
    docker: DockerHosts
    progress: Progress = no_progress
    local: Engine | None = None  # this machine's engine: builds and ships swarmkit's own images when given

    @classmethod
    def of(
        cls,
        inventory: Inventory,
        docker: DockerHosts | None = None,
        progress: Progress = no_progress,
        local: Engine | None = None,
    ) -> Session:
        """A session over ``docker``, or over clients made from the inventory (each host's TLS included)."""
        return cls(inventory, docker if docker is not None else DockerHosts.from_inventory(inventory), progress, local)
