"""Consumer lag through the Admin API: per group, topic and partition, the committed offset against the log end.

Three requests: the groups (ListGroups), each group's committed offsets (OffsetFetch, one group per request as
librdkafka allows), and the log-end offsets of every partition a group committed on (ListOffsets, latest).
A partition without a committed offset is left out (the group never consumed it); a lag is never negative
(a commit read after a newer log end).  The arithmetic is pure (``lags``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin

from swarmkit.errors import BrokerError
from swarmkit.kafka.admin import DEFAULT_TIMEOUT, _Client
from swarmkit.security.settings import ClientSecurity

Partition = tuple[str, int]  # (topic, partition)


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


def _result(client: _Client, what: str, future: Any, timeout: float) -> Any:
    try:
        return future.result(timeout=timeout)
    except ck.KafkaException as error:
        detail = error.args[0].str() if error.args else str(error)
        raise BrokerError(
            f"{what} on {client.bootstrap} failed: {detail}",
            hint="the admin user needs DESCRIBE on the cluster's groups and topics (sasl_ssl: swarmkit's admin has it)",
        ) from None
    except TimeoutError:
        raise BrokerError(
            f"{what} on {client.bootstrap}: no answer within {timeout:g}s", hint="check the brokers' health first (verify)"
        ) from None


def _committed(client: _Client, group: str, timeout: float) -> dict[Partition, int]:
    request = [ck.ConsumerGroupTopicPartitions(group)]
    futures = client.admin.list_consumer_group_offsets(request, request_timeout=timeout)
    answer = _result(client, f"reading the offsets of group {group}", futures[group], timeout)
    return {(tp.topic, tp.partition): tp.offset for tp in answer.topic_partitions or () if not tp.error}


def _ends(client: _Client, partitions: Iterable[Partition], timeout: float) -> dict[Partition, int]:
    wanted = {ck.TopicPartition(topic, partition): ck_admin.OffsetSpec.latest() for topic, partition in sorted(set(partitions))}
    if not wanted:
        return {}
    futures = client.admin.list_offsets(wanted, request_timeout=timeout)
    return {(tp.topic, tp.partition): _result(client, "reading log-end offsets", f, timeout).offset for tp, f in futures.items()}


def consumer_lag(
    bootstrap: str, timeout: float = DEFAULT_TIMEOUT, security: ClientSecurity | None = None
) -> tuple[PartitionLag, ...]:
    """Every consumer group's lag per partition, read from the cluster at ``bootstrap``."""
    client = _Client(bootstrap, timeout, security)
    listed = _result(client, "listing consumer groups", client.admin.list_consumer_groups(request_timeout=timeout), timeout)
    committed = {g.group_id: _committed(client, g.group_id, timeout) for g in listed.valid}
    return lags(committed, _ends(client, (p for offsets in committed.values() for p in offsets), timeout))
