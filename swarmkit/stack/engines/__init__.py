"""Engines: one module per broker implementation, each turning a StackRequest into services.

``BrokerEngine`` is the contract every engine module meets (mypy checks the modules against it);
``ENGINES`` is the one registry of them.  Shared logic (listener model, identity volume, advertise
env, escaping) lives in ``swarmkit.stack.listeners`` and ``swarmkit.stack.compose``, never here.
"""

from __future__ import annotations

from typing import Any, Protocol

from swarmkit.defaults import EngineName
from swarmkit.errors import SpecError
from swarmkit.stack.compose import ConfigFile, StackRequest
from swarmkit.stack.engines import apache, tansu


class BrokerEngine(Protocol):
    NAME: EngineName
    DEFAULT_IMAGE: str
    KRAFT: bool  # the listener plan needs a controller listener, and the cluster a KRaft cluster id
    NEEDS_IDENTITY: bool  # brokers need the identity volume whatever the advertise mode
    SHARED_CLUSTER: bool  # the brokers form one cluster with replicas (False: each is its own, a single copy)
    JMX_METRICS: bool  # brokers and controllers export JMX metrics (what `metrics up` scrapes)
    CLIENT_QUOTAS: bool  # brokers enforce client quotas (stack.quotas)
    KAFKA_VERSIONED: bool  # the image is Apache Kafka of one release (a sandbox builds it for --kafka-version)
    DATA_DIR: str  # where a broker keeps its log in its container ('' for none: the data stays in memory)
    START_MARKERS: tuple[tuple[str, str], ...]  # (text a starting broker logs, the phase it begins)

    def generate_cluster_id(self) -> str:
        """A new cluster id (KRaft engines; others return '')."""
        ...

    def topic_broker_limit(self, broker_count: int) -> int:
        """How many brokers one topic can be replicated over with ``broker_count`` nodes."""
        ...

    def check(self, request: StackRequest) -> None:
        """Engine-specific validation; raises SpecError."""
        ...

    def services(self, request: StackRequest) -> dict[str, dict[str, Any]]:
        """The compose services, in order."""
        ...

    def volumes(self, request: StackRequest) -> tuple[str, ...]:
        """The named volumes the services need besides the identity volume."""
        ...

    def config_files(self, request: StackRequest) -> tuple[ConfigFile, ...]:
        """Files from stacks/ the services mount as swarm configs."""
        ...

    def notes(self, request: StackRequest) -> dict[str, list[str]]:
        """Comment lines to print above each service."""
        ...

    def network_notes(self, request: StackRequest) -> list[str]:
        """Comment lines to add above the networks."""
        ...


ENGINES: dict[str, BrokerEngine] = {apache.NAME: apache, tansu.NAME: tansu}


def engine_for(name: str) -> BrokerEngine:
    """The engine called ``name``; an unknown engine is a SpecError."""
    if name not in ENGINES:
        raise SpecError(
            f"engine: unknown engine '{name}'",
            hint=f"use one of {', '.join(ENGINES)} (--engine, or stack.engine in the inventory)",
        )
    return ENGINES[name]
