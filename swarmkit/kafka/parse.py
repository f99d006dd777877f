"""Kafka's answers, as swarmkit.kafka.answers hands them over (plain data), read into swarmkit's types: pure
functions, tested on answers recorded from a sandbox cluster (tests/unit/kafka/recorded/).

An error an answer carries is ``{"code", "name", "message"}`` (librdkafka's names: TOPIC_ALREADY_EXISTS…);
none is dropped: each becomes a BrokerError with a hint or a field of what is returned.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

from swarmkit.errors import BrokerError
from swarmkit.security.acls import Grant
from swarmkit.stack.topics import TopicSpec

NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: a group that never committed on a partition
Answer = Mapping[str, Any]


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


@dataclass(frozen=True)
class PartitionLag:
    """How far one consumer group is behind on one partition (committed offset against the log end)."""

    group: str
    topic: str
    partition: int
    committed: int  # -1: nothing committed yet (the whole log counts as lag)
    log_end: int

    @property
    def lag(self) -> int:
        return self.log_end - max(self.committed, 0)


def failure(what: str, bootstrap: str, error: Answer, hint: str = "run it again") -> BrokerError:
    return BrokerError(f"{what} through {bootstrap} failed: {error.get('message') or error.get('name')}", hint=hint)


def cluster_metadata(bootstrap: str, answer: Answer) -> ClusterMetadata:
    """The user's view of a metadata answer: brokers by id, topics by name, internal topics left out."""
    brokers = tuple(BrokerInfo(b["id"], b["host"], b["port"]) for b in sorted(answer["brokers"], key=lambda b: b["id"]))
    topics = tuple(
        TopicInfo(
            name=t["topic"],
            partitions=tuple(
                PartitionInfo(p["id"], p["leader"], tuple(p["replicas"])) for p in sorted(t["partitions"], key=lambda p: p["id"])
            ),
            error=t["error"].get("message", ""),
        )
        for t in sorted(answer["topics"], key=lambda t: t["topic"])
        if not t["topic"].startswith("__")  # internal topics (__consumer_offsets) are not the user's
    )
    return ClusterMetadata(bootstrap, answer["cluster_id"], answer["controller_id"], brokers, topics)


def broker_ids(answer: Answer) -> tuple[int, ...]:
    return tuple(sorted(b["id"] for b in answer["brokers"]))


def partition_states(answer: Answer, min_isr: Mapping[str, int]) -> list[PartitionState]:
    """Every partition of every topic (internal ones included) with its ISR and its topic's min ISR."""
    return [
        PartitionState(t["topic"], p["id"], p["leader"], tuple(p["replicas"]), tuple(p["isrs"]), min_isr[t["topic"]])
        for t in sorted(answer["topics"], key=lambda t: t["topic"])
        for p in sorted(t["partitions"], key=lambda p: p["id"])
    ]


def settings(entries: Mapping[str, Answer]) -> dict[str, str]:
    """One resource's described settings that have a value."""
    return {name: entry["value"] for name, entry in entries.items() if entry["value"] is not None}


def min_isr(bootstrap: str, described: Mapping[str, Answer]) -> dict[str, int]:
    """Each topic's effective ``min.insync.replicas`` from its described settings (``{"error": …}`` for a topic
    whose settings could not be read: that is a BrokerError, never a silent 1)."""
    found = {}
    for topic, entries in described.items():
        if "error" in entries:
            raise failure(
                f"reading min.insync.replicas of topic {topic}",
                bootstrap,
                entries["error"],
                hint="the ISR check needs each topic's setting: check that the client may describe topic configs "
                "(DescribeConfigs) and run it again",
            )
        value = settings(entries).get("min.insync.replicas")
        found[topic] = int(value) if value is not None else 1
    return found


def racks(answer: Answer) -> dict[int, str]:
    """Each broker's ``broker.rack`` from a describe-cluster answer ("" for none)."""
    return {node["id"]: node["rack"] or "" for node in answer["nodes"]}


def refused_elections(answer: Iterable[Answer]) -> list[str]:
    """The partitions a preferred-leader election refused, as ``topic-partition: why`` (already led by the
    preferred replica is not a refusal)."""
    return [
        f"{e['topic']}-{e['partition']}: {e['error']['message']}"
        for e in answer
        if e["error"] and e["error"]["name"] != "ELECTION_NOT_NEEDED"
    ]


def authorized_operations(answer: Answer) -> tuple[str, ...]:
    """What the client may do on a described topic, as grants spell it (DESCRIBE_CONFIGS: describe-configs)."""
    return tuple(sorted(_lower(o) for o in answer.get("authorized_operations") or ()))


def _lower(name: str) -> str:
    return name.lower().replace("_", "-")


def consumer_groups(bootstrap: str, answer: Answer) -> list[str]:
    """The group ids of a list-groups answer; an error in it (a broker that did not answer) is raised."""
    if answer["errors"]:
        raise failure("listing consumer groups", bootstrap, answer["errors"][0])
    return sorted(g["group_id"] for g in answer["groups"])


def committed(bootstrap: str, answer: Answer) -> dict[tuple[str, int], int]:
    """A group's committed offset per (topic, partition); -1 where it has none."""
    found = {}
    for p in answer["partitions"]:
        if p["error"]:
            raise failure(f"reading group {answer['group_id']}'s offset of {p['topic']}-{p['partition']}", bootstrap, p["error"])
        found[p["topic"], p["partition"]] = -1 if p["offset"] == NO_OFFSET else p["offset"]
    return found


def log_ends(bootstrap: str, answer: Iterable[Answer]) -> dict[tuple[str, int], int]:
    """Each partition's log-end offset from a list-offsets answer; a partition without one is a BrokerError
    (no leader: its lag cannot be known)."""
    found = {}
    for p in answer:
        if "error" in p:
            raise failure(
                f"reading the log end of {p['topic']}-{p['partition']}",
                bootstrap,
                p["error"],
                hint="a partition without a leader has no log end: see `swarmkit verify`",
            )
        found[p["topic"], p["partition"]] = p["offset"]
    return found


def lag(group: str, committed: Mapping[tuple[str, int], int], ends: Mapping[tuple[str, int], int]) -> list[PartitionLag]:
    """The group's lag on every partition it committed on."""
    return [
        PartitionLag(group, topic, partition, offset, ends[topic, partition])
        for (topic, partition), offset in sorted(committed.items())
    ]


def grants(acls: Iterable[Answer]) -> tuple[Grant, ...]:
    """A user's ACLs as grants: those swarmkit writes (allowed, from any host, on a topic or a group)."""
    mine = [a for a in acls if a["permission"] == "ALLOW" and a["host"] == "*" and a["restype"] in ("TOPIC", "GROUP")]
    return tuple(sorted(Grant(_lower(a["restype"]), a["name"], a["pattern"] == "PREFIXED", _lower(a["operation"])) for a in mine))


def compared(bootstrap: str, name: str, wanted: tuple[int, int], actual: tuple[int, int]) -> TopicResult:
    """An existing topic against its spec (partitions, replicas): ``exists``, or a ``mismatch`` left unchanged."""
    if actual == wanted:
        return TopicResult(bootstrap, name, "exists", *actual)
    return TopicResult(
        bootstrap,
        name,
        "mismatch",
        *actual,
        detail=f"exists with {actual[0]} partitions x {actual[1]} replicas, spec asks "
        f"{wanted[0]} x {wanted[1]}; left unchanged (alter or delete it by hand)",
    )


def created(bootstrap: str, spec: TopicSpec, answer: Answer | None) -> TopicResult:
    """A CreateTopics answer for one topic: created, or failed with Kafka's reason (an existing one is
    compared by the caller)."""
    if not answer:
        return TopicResult(bootstrap, spec.name, "created", spec.partitions, spec.replicas)
    return TopicResult(bootstrap, spec.name, "failed", 0, 0, detail=answer["error"]["message"])
