"""Consumer lag through the Admin API: per group, topic and partition, the committed offset against the log end.

Three requests: the groups (ListGroups), each group's committed offsets (OffsetFetch, one group per request as
librdkafka allows), and the log-end offsets of every partition a group committed on (ListOffsets, latest).
A partition without a committed offset is left out (the group never consumed it); a lag is never negative
(a commit read after a newer log end).  The arithmetic is pure (``lags``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from swarmkit.kafka.admin import DEFAULT_TIMEOUT, KafkaAdmin
from swarmkit.kafka.parse import Partition
from swarmkit.security.settings import ClientSecurity


@dataclass(frozen=True)
class PartitionLag:
    group: str
    topic: str
    partition: int
    committed: int
    end: int

    @property
    def lag(self) -> int:
        return max(0, self.end - self.committed)


@dataclass(frozen=True)
class GroupLag:
    """One group's lag on one topic: the sum over its partitions."""

    group: str
    topic: str
    lag: int
    partitions: int


def lags(committed: Mapping[str, Mapping[Partition, int]], ends: Mapping[Partition, int]) -> tuple[PartitionLag, ...]:
    """Pure: every (group, partition) with a commit and a known log end, in order."""
    return tuple(
        PartitionLag(group, topic, partition, offset, ends[(topic, partition)])
        for group in sorted(committed)
        for (topic, partition), offset in sorted(committed[group].items())
        if offset >= 0 and (topic, partition) in ends
    )


def by_topic(partitions: Iterable[PartitionLag]) -> tuple[GroupLag, ...]:
    """Pure: the lag of each group on each topic."""
    sums: dict[tuple[str, str], list[int]] = {}
    for p in partitions:
        total = sums.setdefault((p.group, p.topic), [0, 0])
        total[0] += p.lag
        total[1] += 1
    return tuple(GroupLag(group, topic, lag, count) for (group, topic), (lag, count) in sorted(sums.items()))


def consumer_lag(
    bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> tuple[PartitionLag, ...]:
    """Every consumer group's lag per partition, read from the cluster at ``bootstrap``."""
    with KafkaAdmin(bootstrap, security, timeout) as kafka:
        return lags(*kafka.consumer_offsets())
