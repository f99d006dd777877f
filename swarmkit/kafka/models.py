"""The Kafka adapter's answers as swarmkit's types: what a cluster's metadata, topics and partitions are."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class BrokerInfo:
    node_id: int
    host: str
    port: int

    @property
    def endpoint(self) -> str:
        return f"{self.host}:{self.port}"


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    name: str
    partitions: tuple[PartitionInfo, ...]
    error: str = ""

    @property
    def partition_count(self) -> int:
        return len(self.partitions)

    @property
    def replication_factor(self) -> int:
        return max((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class ClusterMetadata:
    """What one bootstrap address says about its cluster (the ``kafkacat -L`` view)."""

    bootstrap: str
    cluster_id: str | None
    controller_id: int
    brokers: tuple[BrokerInfo, ...]
    topics: tuple[TopicInfo, ...]

    def broker(self, node_id: int) -> BrokerInfo | None:
        return next((b for b in self.brokers if b.node_id == node_id), None)

    def broker_at(self, endpoint: str) -> BrokerInfo | None:
        return next((b for b in self.brokers if b.endpoint == endpoint), None)

    def topic(self, name: str) -> TopicInfo | None:
        return next((t for t in self.topics if t.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        for topic, info in zip(data["topics"], self.topics):
            topic["partition_count"] = info.partition_count
            topic["replication_factor"] = info.replication_factor
        return data


TopicStatus = Literal["created", "exists", "mismatch", "failed"]


@dataclass(frozen=True)
class TopicResult:
    """The outcome of ensuring one topic on one bootstrap; a mismatch is reported, never altered."""

    bootstrap: str
    name: str
    status: TopicStatus
    partitions: int
    replicas: int
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in ("created", "exists")

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass(frozen=True)
class PartitionState:
    """One partition as the controller sees it: who leads, who holds a copy, who is in sync."""

    topic: str
    partition: int
    leader: int  # -1: no leader (offline)
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int

    @property
    def offline(self) -> bool:
        return self.leader < 0

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def under_min_isr(self) -> bool:
        """acks=all producers are refused (NOT_ENOUGH_REPLICAS) until the ISR grows back."""
        return len(self.isr) < self.min_isr
