"""The cluster a benchmark measures: the one ``--inventory`` names, or a 3-host Apache Kafka sandbox of its own
(three managers, so three controllers), removed at the end, also when something fails."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.sandbox import hosts as sandbox


@contextmanager
def measured_cluster(inventory: str | None, name: str, subnet: str) -> Iterator[Inventory]:
    if inventory:
        yield load_inventory(inventory)
        return
    sandbox.down(name)
    try:
        path = str(Path(tempfile.mkdtemp(prefix=f"{name}-")) / f"{name}.yaml")
        built = sandbox.up(3, name, name, subnet, path, engine="apache", managers=3)
        yield load_inventory(built.inventory_path)
    finally:
        sandbox.down(name)
