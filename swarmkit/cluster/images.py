"""Images the hosts need, put there without a registry: the probe image preflight runs.

Real servers may have no registry in reach and no Docker Hub either; the probe image is small and
built from files on this machine (busybox, socat), so it is built on each host through that host's
Docker endpoint (the build context travels over the API, as with `docker -H HOST build`).
"""

from __future__ import annotations

from dataclasses import replace

from swarmkit.errors import EngineError
from swarmkit.fanout import fan_out_settled
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.images import image


def with_probe_image(inventory: Inventory, docker: DockerHosts) -> Inventory:
    """The inventory as preflight needs it: its own ``stack.probe_image``, or swarmkit's probe image,
    built on every host that does not have it yet (all hosts at once)."""
    if inventory.stack.probe_image:
        return inventory

    def provide(host: Host) -> None:
        if not dockerapi.has_image(docker[host], image.PROBE_TAG):
            image.build(docker[host], image.probe_recipe(), image.PROBE_TAG)

    fan_out_settled(provide, inventory.hosts, EngineError)  # a host that fails here is named by preflight
    return replace(inventory, stack=replace(inventory.stack, probe_image=image.PROBE_TAG))
