"""confluent-kafka's answer objects as plain data (dicts, lists, numbers, strings): the one place that reads
their attributes.  What comes out is what tests/unit/kafka/fixtures/*.json holds (recorded from a sandbox
cluster by scripts/record_kafka_answers.py) and what the pure functions of ``swarmkit.kafka.parse`` read.

An error is ``{"code": int, "name": str, "message": str, "retriable": bool}`` (librdkafka's names:
TOPIC_AUTHORIZATION_FAILED…), ``{}`` for none; a future that did not settle in time is a retriable error named
``TIMED_OUT``.
"""

from __future__ import annotations

from typing import Any

Answer = dict[str, Any]


def error(value: Any) -> Answer:
    """A KafkaError, or a KafkaException carrying one (a future's failure): its code, name and text."""
    if value is None:
        return {}
    args = getattr(value, "args", ())
    kafka_error = args[0] if args and hasattr(args[0], "code") else value
    if not hasattr(kafka_error, "code"):
        return {"code": -1, "name": type(value).__name__, "message": str(value)}
    retriable = bool(kafka_error.retriable()) if hasattr(kafka_error, "retriable") else False
    return {"code": int(kafka_error.code()), "name": kafka_error.name(), "message": kafka_error.str(), "retriable": retriable}


def timed_out(seconds: float) -> Answer:
    return {"error": {"code": -185, "name": "TIMED_OUT", "message": f"no answer within {seconds:g}s", "retriable": True}}


def metadata(raw: Any) -> Answer:
    """A ``list_topics`` answer (ClusterMetadata), internal topics included."""
    return {
        "cluster_id": raw.cluster_id,
        "controller_id": raw.controller_id,
        "brokers": [{"id": b.id, "host": b.host, "port": b.port} for b in raw.brokers.values()],
        "topics": [
            {
                "topic": t.topic,
                "error": error(t.error),
                "partitions": [
                    {"id": p.id, "leader": p.leader, "replicas": list(p.replicas), "isrs": list(p.isrs), "error": error(p.error)}
                    for p in t.partitions.values()
                ],
            }
            for t in raw.topics.values()
        ],
    }


def configs(entries: dict[str, Any]) -> Answer:
    """One resource's ``describe_configs`` answer: each entry's value and where it comes from."""
    return {
        name: {"value": e.value, "source": getattr(e.source, "name", str(e.source)), "is_default": bool(e.is_default)}
        for name, e in entries.items()
    }


def cluster(described: Any) -> Answer:
    """A ``describe_cluster`` answer."""
    return {
        "cluster_id": described.cluster_id,
        "controller": described.controller.id if described.controller else None,
        "nodes": [{"id": n.id, "host": n.host, "port": n.port, "rack": n.rack} for n in described.nodes],
    }


def topic_description(described: Any) -> Answer:
    """One topic's ``describe_topics`` answer: its partitions and what the client may do on it."""
    return {
        "name": described.name,
        "authorized_operations": sorted(_name(op) for op in described.authorized_operations or ()),
        "partitions": [
            {
                "id": p.id,
                "leader": p.leader.id if p.leader else -1,
                "replicas": [r.id for r in p.replicas],
                "isr": [r.id for r in p.isr],
            }
            for p in described.partitions
        ],
    }


def groups(listed: Any) -> Answer:
    """A ``list_consumer_groups`` answer."""
    return {
        "groups": [{"group_id": g.group_id, "state": _name(g.state)} for g in listed.valid],
        "errors": [error(e) for e in listed.errors],
    }


def group_offsets(answer: Any) -> Answer:
    """A ``list_consumer_group_offsets`` answer for one group: each partition's committed offset (-1001: none)."""
    return {
        "group_id": answer.group_id,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset, "error": error(tp.error)}
            for tp in answer.topic_partitions or ()
        ],
    }


def log_end(result: Any) -> Answer:
    """One partition's ``list_offsets`` answer (latest)."""
    return {"offset": result.offset}


def elections(results: dict[Any, Any]) -> Answer:
    """An ``elect_leaders`` answer: each partition's error ({} when elected)."""
    return {"partitions": [{"topic": tp.topic, "partition": tp.partition, "error": error(e)} for tp, e in results.items()]}


def scram_users(described: dict[str, Any]) -> Answer:
    """A ``describe_user_scram_credentials`` answer: the users holding a credential."""
    return {"users": sorted(described)}


def _name(value: object) -> str:
    return str(getattr(value, "name", value))


def same(answer: Any) -> Any:
    """An answer that is plain data already."""
    return answer


def nothing(_: Any) -> Answer:
    """A request that answers nothing but its success (creations, deletions, changes)."""
    return {}
