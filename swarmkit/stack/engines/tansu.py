"""The tansu engine: the offline Kafka-compatible broker image (the sandbox default).

Tansu serves a single listener, the external one; its entrypoint (``stacks/tansu/entrypoint.sh``,
already in the image) reads only env.  With the ``memory://`` storage engine every tansu broker
is its own single-broker cluster: there is no internal listener and no controller, topics are
ensured on every broker and can have one replica.
"""

from __future__ import annotations

from typing import Any

from swarmkit.defaults import EngineName
from swarmkit.errors import SpecError
from swarmkit.stack.compose import (
    BROKER_SERVICE,
    ConfigFile,
    StackRequest,
    advertise_env,
    broker_deploy,
    host_port,
    identity_mount,
    with_extra_env,
)

NAME = EngineName.TANSU
DEFAULT_IMAGE = "swarmkit/tansu:0.6.0"
KRAFT = False
NEEDS_IDENTITY = False  # only the inventory-address mode reads the identity volume
SHARED_CLUSTER = False
JMX_METRICS = False
CLIENT_QUOTAS = False
KAFKA_VERSIONED = False
DATA_DIR = ""  # memory:// storage: no data directory on the host
START_MARKERS: tuple[tuple[str, str], ...] = ()  # tansu starts in well under a second: its task state says enough


def generate_cluster_id() -> str:
    """Tansu brokers need no cluster id."""
    return ""


def topic_broker_limit(broker_count: int) -> int:
    return 1  # every broker is its own cluster


def check(request: StackRequest) -> None:
    external = request.listeners.external_listener
    if external.protocol != "PLAINTEXT":
        raise SpecError(
            f"listener.security.protocol.map: tansu serves {external.name} only as PLAINTEXT, not {external.protocol}",
            hint="use the apache engine for SSL or SASL",
        )
    if request.replication_factor not in (None, 1):
        raise SpecError(
            f"default.replication.factor: {request.replication_factor}, but every tansu broker is its own single-broker cluster",
            hint="leave --replication-factor out with the tansu engine (its topics have 1 replica), or use the apache engine",
        )
    for spec in request.topics:
        if spec.replicas > 1:
            raise SpecError(
                f"topic spec '{spec.to_spec_string()}': {spec.replicas} replicas, but every tansu broker is its own"
                " single-broker cluster",
                hint=f"use 1 replica with the tansu engine ({spec.name}:{spec.partitions}:1), or the apache engine",
            )


def services(request: StackRequest) -> dict[str, dict[str, Any]]:
    external = request.listeners.external_listener
    env = {**advertise_env(request), "EXTERNAL_PORT": str(external.port)}
    return {
        BROKER_SERVICE: {
            "image": request.image or DEFAULT_IMAGE,
            "environment": with_extra_env(request, env),
            "ports": [host_port(external)],
            "networks": [request.network],
            "volumes": [identity_mount()],
            "deploy": broker_deploy(request),
        }
    }


def volumes(request: StackRequest) -> tuple[str, ...]:
    return ()


def config_files(request: StackRequest) -> tuple[ConfigFile, ...]:
    return ()  # the entrypoint is image content


def notes(request: StackRequest) -> dict[str, list[str]]:
    return {
        BROKER_SERVICE: [
            "One tansu broker per node (mode: global), serving only the external listener, advertised",
            "with this node's host (SWARMKIT_ADVERTISE); the image's entrypoint reads these variables.",
        ]
    }


def network_notes(request: StackRequest) -> list[str]:
    return [
        "tansu serves no internal listener (each memory:// broker is its own cluster): the overlay is",
        "rendered anyway so every engine's stack has the same shape.",
    ]
