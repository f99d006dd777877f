"""Local volumes: the per-node identity and data volumes a stack keeps across deploys."""

from __future__ import annotations

from swarmkit.hosts.dockerapi.calls import call
from swarmkit.hosts.dockerapi.engine import Engine


def ensure_volume(engine: Engine, name: str, labels: dict[str, str]) -> None:
    """Create a local volume unless it exists; an existing one is used as it is."""
    if not engine.client.volume.exists(name):
        call(engine, f"creating volume {name}", lambda c: c.volume.create(name, driver="local", labels=labels))


def ensure_bind_volume(engine: Engine, name: str, directory: str) -> None:
    """A local volume that binds a directory of the engine's host (e.g. a disk of a set size); kept if it exists."""
    options = {"type": "none", "o": "bind", "device": directory}
    if not engine.client.volume.exists(name):
        call(engine, f"creating volume {name} on {directory}", lambda c: c.volume.create(name, driver="local", options=options))


def remove_labelled_volumes(engine: Engine, label: str) -> list[str]:
    """Remove every volume carrying a label; returns their names."""
    found = call(engine, "listing volumes", lambda c: c.volume.list(filters=[("label", label)]))
    names = sorted(volume.name for volume in found)
    if names:
        call(engine, f"removing volumes {', '.join(names)}", lambda c: c.volume.remove(names))
    return names
