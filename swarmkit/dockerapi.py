"""The one adapter over Docker: every engine call in swarmkit goes through python-on-whales here."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path

from python_on_whales import DockerClient
from python_on_whales.exceptions import DockerException

from swarmkit.errors import EngineError


@functools.lru_cache(maxsize=None)
def client(endpoint: str) -> DockerClient:
    """One client per engine endpoint (unix://, tcp://, ssh://)."""
    return DockerClient(host=endpoint)


def _short(error: DockerException) -> str:
    text = (error.stderr or error.stdout or str(error)).strip()
    return text.splitlines()[-1] if text else str(error)


@dataclass(frozen=True)
class EngineInfo:
    endpoint: str
    version: str
    hostname: str
    swarm_state: str
    swarm_node_id: str
    swarm_cluster_id: str
    memory_bytes: int


def engine_info(endpoint: str) -> EngineInfo:
    try:
        info = client(endpoint).system.info()
    except DockerException as error:
        raise EngineError(
            f"the Docker engine at {endpoint} does not answer: {_short(error)}",
            hint="check that dockerd runs there and that this machine may reach it",
        ) from error
    swarm = info.swarm
    cluster = getattr(swarm, "cluster", None)
    return EngineInfo(
        endpoint=endpoint,
        version=info.server_version or "",
        hostname=info.name or "",
        swarm_state=(swarm.local_node_state or "inactive") if swarm else "inactive",
        swarm_node_id=(swarm.node_id or "") if swarm else "",
        swarm_cluster_id=(cluster.id if cluster and cluster.id else ""),
        memory_bytes=int(info.mem_total or 0),
    )


def wait_until_ready(endpoint: str, timeout: float) -> EngineInfo:
    """Poll an engine that was just started until it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return engine_info(endpoint)
        except EngineError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def build_image(endpoint: str, context_dir: Path, tag: str) -> None:
    """Build with the classic builder: it needs no BuildKit and no network for FROM scratch images."""
    try:
        client(endpoint).legacy_build(context_dir, tags=tag, pull=False)
    except DockerException as error:
        raise EngineError(f"building {tag} on {endpoint} failed: {_short(error)}") from error


def push_image(endpoint: str, tag: str) -> None:
    try:
        client(endpoint).image.push(tag, quiet=True)
    except DockerException as error:
        raise EngineError(
            f"pushing {tag} from {endpoint} failed: {_short(error)}",
            hint="is the registry running and is it listed as --insecure-registry for that engine?",
        ) from error


def has_image(endpoint: str, tag: str) -> bool:
    return client(endpoint).image.exists(tag)


def run_detached(
    endpoint: str,
    image: str,
    name: str,
    *,
    env: dict[str, str] | None = None,
    host_ports: tuple[int, ...] = (),
    labels: dict[str, str] | None = None,
) -> str:
    """Start a plain container (not a service); returns its id."""
    try:
        container = client(endpoint).run(
            image,
            name=name,
            detach=True,
            envs=env or {},
            publish=[(port, port) for port in host_ports],
            labels=labels or {},
        )
    except DockerException as error:
        raise EngineError(f"starting {image} on {endpoint} failed: {_short(error)}") from error
    return container.id


def remove_containers(endpoint: str, names: list[str]) -> None:
    existing = [c for c in names if client(endpoint).container.exists(c)]
    if existing:
        client(endpoint).container.remove(existing, force=True)
