"""A command's servers: its inventory and their Docker engines (what most commands start from)."""

from __future__ import annotations

from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory


def load_hosts(path: str) -> tuple[Inventory, DockerHosts]:
    """The inventory and its Docker engines, each client with that host's own TLS settings; their shared
    SSH connections (ssh:// hosts) end when the command drops them, at the latest when swarmkit exits."""
    inventory = load_inventory(path)
    return inventory, dockerapi.DockerHosts.from_inventory(inventory)
