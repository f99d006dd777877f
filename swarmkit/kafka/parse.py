"""Kafka's answers, as ``swarmkit.kafka.answers`` hands them over (plain data), read into swarmkit's types.

Pure functions, tested on answers recorded from a sandbox cluster (tests/unit/kafka/fixtures/).  An answer
that failed is ``{"error": {"code", "name", "message"}}``; no error is dropped: each becomes a BrokerError
with a hint, or a field of what is returned (a topic's ``error``, a refused election, a ``failed`` topic).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from swarmkit.errors import BrokerError
from swarmkit.kafka.models import BrokerInfo, ClusterMetadata, PartitionInfo, PartitionState, TopicInfo, TopicResult
from swarmkit.stack.topics import TopicSpec

Answer = Mapping[str, Any]
Partition = tuple[str, int]  # (topic, partition)
NO_OFFSET = -1001  # librdkafka's OFFSET_INVALID: nothing committed on that partition
MIN_ISR = "min.insync.replicas"
KAFKA_DEFAULT_MIN_ISR = 1  # the broker setting's default, for a server that does not list it
RETRY = "run it again"
ACCESS_HINT = "swarmkit's admin user has every right; another user needs DESCRIBE on the cluster's topics and groups"


def failed(answer: object) -> bool:
    """Whether a settled future's answer is a failure (``{"error": …}``)."""
    return isinstance(answer, Mapping) and set(answer) == {"error"}


def error_name(answer: Answer) -> str:
    return str(answer["error"].get("name", "")) if failed(answer) else ""


def retriable(answer: Answer) -> bool:
    """A failure Kafka says may pass if the request is sent again (a controller not answering during an election)."""
    return failed(answer) and bool(answer["error"].get("retriable", False))


def failure(what: str, bootstrap: str, error: Answer, hint: str = RETRY) -> BrokerError:
    return BrokerError(f"{what} through {bootstrap} failed: {error.get('message') or error.get('name')}", hint=hint)


def checked(what: str, bootstrap: str, answer: Any, hint: str = RETRY) -> Any:
    """The answer itself; BrokerError with ``hint`` when it is a failure."""
    if failed(answer):
        raise failure(what, bootstrap, answer["error"], hint)
    return answer


def complaint(errors: Sequence[Answer]) -> str:
    """What a client's errors say went wrong: the last one, but "all brokers are down" only when nothing said why."""
    said = [e for e in errors if e.get("name") != "_ALL_BROKERS_DOWN"] or errors
    return str(said[-1].get("message", "")) if said else ""


def named_controller(answer: Answer) -> str:
    """Which broker a metadata answer sends admin requests to: KRaft brokers name a random unfenced broker there,
    and none (-1) when they know no unfenced broker."""
    wanted = answer["controller_id"]
    broker = next((b for b in answer["brokers"] if b["id"] == wanted), None)
    if broker:
        return f"metadata names broker {wanted} at {broker['host']}:{broker['port']} controller"
    if wanted < 0:
        return "metadata names no controller: the broker that answered knows no unfenced broker"
    return f"metadata names broker {wanted} controller but does not list it"


def _partitions(topic: Answer) -> list[Answer]:
    return sorted(topic["partitions"], key=lambda p: p["id"])


def cluster_metadata(bootstrap: str, answer: Answer) -> ClusterMetadata:
    """The user's view of a metadata answer: brokers by id, topics by name, internal topics (``__…``) left out."""
    brokers = tuple(BrokerInfo(b["id"], b["host"], b["port"]) for b in sorted(answer["brokers"], key=lambda b: b["id"]))
    topics = tuple(
        TopicInfo(
            t["topic"],
            tuple(PartitionInfo(p["id"], p["leader"], tuple(p["replicas"])) for p in _partitions(t)),
            t["error"].get("message", "") if t["error"] else "",
        )
        for t in sorted(answer["topics"], key=lambda t: t["topic"])
        if not t["topic"].startswith("__")
    )
    return ClusterMetadata(bootstrap, answer["cluster_id"], answer["controller_id"], brokers, topics)


def broker_ids(answer: Answer) -> tuple[int, ...]:
    return tuple(sorted(b["id"] for b in answer["brokers"]))


def topic_names(answer: Answer) -> list[str]:
    """Every topic a metadata answer lists, internal ones included."""
    return sorted(t["topic"] for t in answer["topics"])


def min_isr(bootstrap: str, described: Mapping[str, Answer]) -> dict[str, int]:
    """Each topic's effective ``min.insync.replicas`` from its ``describe_configs`` answer; BrokerError when a
    topic's answer failed (never a guess: a wrong 1 would hide partitions under min ISR).  Apache Kafka lists every
    setting, defaults included; a server that leaves this one out (tansu, which keeps no ISR) has Kafka's default."""
    found = {}
    for topic, answer in described.items():
        entry = checked(f"reading min.insync.replicas of topic {topic}", bootstrap, answer).get(MIN_ISR) or {}
        found[topic] = int(entry.get("value") or KAFKA_DEFAULT_MIN_ISR)
    return found


def partition_states(answer: Answer, min_isr_by_topic: Mapping[str, int]) -> list[PartitionState]:
    """Every partition of every topic a metadata answer lists, with its ISR and its topic's min ISR."""
    return [
        PartitionState(t["topic"], p["id"], p["leader"], tuple(p["replicas"]), tuple(p["isrs"]), min_isr_by_topic[t["topic"]])
        for t in sorted(answer["topics"], key=lambda t: t["topic"])
        for p in _partitions(t)
    ]


def settings(configs: Answer) -> dict[str, str]:
    """One resource's ``describe_configs`` answer as its settings (those with a value)."""
    return {name: entry["value"] for name, entry in configs.items() if entry.get("value") is not None}


def racks(cluster: Answer) -> dict[int, str]:
    """Each node's ``broker.rack`` ("" when it has none) from a ``describe_cluster`` answer."""
    return {node["id"]: node["rack"] or "" for node in cluster["nodes"]}


def refused_elections(answer: Answer) -> list[str]:
    """The partitions whose preferred leader was not elected, as ``topic-partition: why``; a partition already
    led by its preferred replica (ELECTION_NOT_NEEDED) is not one."""
    return [
        f"{p['topic']}-{p['partition']}: {p['error'].get('message') or p['error'].get('name')}"
        for p in answer["partitions"]
        if p["error"] and p["error"].get("name") != "ELECTION_NOT_NEEDED"
    ]


def compared(bootstrap: str, spec: TopicSpec, info: TopicInfo) -> TopicResult:
    """An existing topic against its spec: ``exists``, or a ``mismatch`` left unchanged."""
    actual = (info.partition_count, info.replication_factor)
    if actual == (spec.partitions, spec.replicas):
        return TopicResult(bootstrap, spec.name, "exists", *actual)
    return TopicResult(
        bootstrap,
        spec.name,
        "mismatch",
        *actual,
        detail=f"exists with {actual[0]} partitions x {actual[1]} replicas, spec asks "
        f"{spec.partitions} x {spec.replicas}; left unchanged (alter or delete it by hand)",
    )


def created(bootstrap: str, spec: TopicSpec, answer: Answer) -> TopicResult:
    """One topic's ``create_topics`` answer: created, or failed naming why."""
    if failed(answer):
        error = answer["error"]
        return TopicResult(bootstrap, spec.name, "failed", 0, 0, detail=error.get("message") or error.get("name", ""))
    return TopicResult(bootstrap, spec.name, "created", spec.partitions, spec.replicas)


def authorized_operations(bootstrap: str, described: Mapping[str, Answer]) -> dict[str, tuple[str, ...]]:
    """What the client may do on each topic (``read``, ``write``…); a topic it may not describe maps to ``()``,
    any other failure is a BrokerError."""
    found: dict[str, tuple[str, ...]] = {}
    for topic, answer in described.items():
        if error_name(answer) == "TOPIC_AUTHORIZATION_FAILED":
            found[topic] = ()
            continue
        operations = checked(f"describing topic {topic}", bootstrap, answer)["authorized_operations"]
        found[topic] = tuple(sorted(op.lower().replace("_", "-") for op in operations))
    return found


def group_ids(bootstrap: str, answer: Answer) -> list[str]:
    """The consumer groups of a ``list_consumer_groups`` answer; BrokerError when a broker could not list its own."""
    listed = checked("listing consumer groups", bootstrap, answer, ACCESS_HINT)
    if listed["errors"]:
        raise failure("listing consumer groups", bootstrap, listed["errors"][0], RETRY)
    return sorted(g["group_id"] for g in listed["groups"])


def committed(bootstrap: str, answer: Answer) -> dict[Partition, int]:
    """A group's committed offsets (partitions it never committed on left out); BrokerError naming a partition
    whose offset could not be read."""
    offsets = checked("reading a group's offsets", bootstrap, answer, ACCESS_HINT)
    found = {}
    for p in offsets["partitions"]:
        if p["error"]:
            raise failure(
                f"reading the offset of group {offsets['group_id']} on {p['topic']}-{p['partition']}", bootstrap, p["error"]
            )
        if p["offset"] != NO_OFFSET:
            found[(p["topic"], p["partition"])] = p["offset"]
    return found


def log_ends(bootstrap: str, answers: Mapping[Partition, Answer]) -> dict[Partition, int]:
    """Each partition's log-end offset from its ``list_offsets`` answer."""
    return {
        (topic, partition): checked(f"reading the log end of {topic}-{partition}", bootstrap, answer)["offset"]
        for (topic, partition), answer in answers.items()
    }


def scram_users(answer: Answer) -> list[str]:
    return sorted(answer["users"])
