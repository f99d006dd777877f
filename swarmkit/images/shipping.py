"""Images the hosts need, put there without a registry.

Real servers may have no registry in reach and no Docker Hub either. The probe image preflight runs is
small and built from files on this machine (busybox, socat), so it is built on each host through that
host's Docker endpoint (the build context travels over the API, as with `docker -H HOST build`). The
broker image is shipped: saved here once and loaded on every host that lacks it (`swarmkit image push`).
"""

from __future__ import annotations

import functools
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from swarmkit.errors import EngineError
from swarmkit.fanout import fan_out, fan_out_settled
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine
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


OWN_RECIPES: dict[str, Callable[[], image.ImageRecipe]] = {
    **{image.kafka_tag(version): functools.partial(image.kafka_recipe, version) for version in image.KAFKA_VERSIONS},
    image.TANSU_TAG: image.tansu_recipe,
    image.PROBE_TAG: image.probe_recipe,
}


def is_own(tag: str) -> bool:
    """One of the images swarmkit builds: no registry serves it (the same name on Docker Hub would be anyone's),
    so it is shipped from this machine, never pulled."""
    return tag in OWN_RECIPES


@dataclass(frozen=True)
class Delivery:
    host: str
    action: str  # present | loaded
    seconds: float


@dataclass(frozen=True)
class PushResult:
    image: str
    built_here: bool
    deliveries: tuple[Delivery, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


def ensure_here(local: Engine, tag: str) -> bool:
    """Make sure this machine's engine has ``tag``; True when it had to be built (swarmkit's own images only)."""
    if dockerapi.has_image(local, tag):
        return False
    recipe = OWN_RECIPES.get(tag)
    if recipe is None:
        raise EngineError(
            f"the image {tag} is not on this machine's engine ({local.endpoint})",
            hint=f"pull or load it here first (docker pull {tag}), or use one swarmkit builds: {', '.join(OWN_RECIPES)}",
        )
    image.build(local, recipe(), tag)
    return True


def push_image(inventory: Inventory, docker: DockerHosts, local: Engine, tag: str) -> PushResult:
    """``docker save`` here once, ``docker load`` on every host that lacks ``tag`` (all at once), through the
    hosts' own endpoints: servers that reach no registry get the image all the same."""
    return ship(inventory, docker, local, tag, built_here=ensure_here(local, tag))


def ship(inventory: Inventory, docker: DockerHosts, local: Engine, tag: str, *, built_here: bool) -> PushResult:
    """The shipment of :func:`push_image` once ``tag`` is on ``local``."""
    present = fan_out(lambda host: dockerapi.has_image(docker[host], tag), inventory.hosts)
    missing = [host for host, has in zip(inventory.hosts, present) if not has]
    delivered = {host.name: Delivery(host.name, "present", 0.0) for host in inventory.hosts}
    with tempfile.TemporaryDirectory(prefix="swarmkit-image-") as scratch:
        archive = Path(scratch) / "image.tar"
        if missing:
            dockerapi.save_image(local, tag, archive)

        def load(host: Host) -> Delivery:
            started = time.monotonic()
            dockerapi.load_image(docker[host], archive)
            return Delivery(host.name, "loaded", round(time.monotonic() - started, 2))

        delivered |= {d.host: d for d in fan_out(load, missing)}
    return PushResult(tag, built_here, tuple(delivered[host.name] for host in inventory.hosts))
