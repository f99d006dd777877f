"""A stand-in for ``swarmkit.kafka.admin.KafkaAdmin`` in callers' unit tests: it answers from the data it is
given (parsed from recorded answers or made by hand) and records every change asked of it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from swarmkit.errors import BrokerError
from swarmkit.kafka.models import ClusterMetadata, PartitionInfo, PartitionState, TopicInfo
from swarmkit.security.acls import Grant

EMPTY = ClusterMetadata("k1:9094", "c", 1, (), ())


class FakeKafkaAdmin:
    def __init__(
        self,
        metadata: ClusterMetadata = EMPTY,
        configs: Mapping[str, dict[str, str]] | None = None,
        grants: Mapping[str, tuple[Grant, ...]] | None = None,
        states: Iterable[tuple[tuple[int, ...], list[PartitionState]] | BrokerError] = (),
    ) -> None:
        self.bootstrap, self.security, self.timeout = metadata.bootstrap, None, 1.0
        self._metadata = metadata
        self._states = iter(states)  # partition_states' answers, one per call (an error is raised)
        self.configs = {topic: dict(settings) for topic, settings in (configs or {}).items()}
        self.grants = dict(grants or {})
        self.changes: list[tuple[str, Any]] = []
        self.closed = False

    def __enter__(self) -> FakeKafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed = True

    def metadata(self) -> ClusterMetadata:
        return self._metadata

    def partition_states(self) -> tuple[tuple[int, ...], list[PartitionState]]:
        answer = next(self._states)
        if isinstance(answer, BrokerError):
            raise answer
        return answer

    def topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        return {topic: self.configs[topic] for topic in topics}

    def alter_topic_configs(self, changes: Mapping[str, Mapping[str, str]]) -> None:
        if changes:
            self.changes.append(("alter", dict(changes)))
        for topic, settings in changes.items():
            self.configs[topic].update(settings)

    def add_partitions(self, counts: Mapping[str, int]) -> None:
        if counts:
            self.changes.append(("partitions", dict(counts)))
        topics = tuple(
            replace(
                t, partitions=t.partitions + tuple(PartitionInfo(i, 1, (1,)) for i in range(t.partition_count, counts[t.name]))
            )
            if t.name in counts
            else t
            for t in self._metadata.topics
        )
        self._metadata = replace(self._metadata, topics=topics)

    def scram_users(self) -> list[str]:
        return sorted(self.grants)

    def user_grants(self, user: str) -> tuple[Grant, ...]:
        return self.grants[user]


def topic(name: str, partitions: int, replicas: int = 1) -> TopicInfo:
    return TopicInfo(name, tuple(PartitionInfo(i, 1, tuple(range(1, replicas + 1))) for i in range(partitions)))
