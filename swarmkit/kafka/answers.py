"""confluent-kafka's answer objects as plain data (dicts, lists, numbers, strings): the one place that reads
their attributes.  What comes out is what tests/unit/kafka/recorded/*.json holds (recorded from a sandbox
cluster by tests/unit/kafka/record.py), and what the pure parsers of ``swarmkit.kafka.parse`` read.
"""

from __future__ import annotations

from typing import Any


def error(value: Any) -> dict[str, Any]:
    """A KafkaError (or a KafkaException carrying one): its code, name and librdkafka's text."""
    if value is None:
        return {}
    args = getattr(value, "args", ())
    kafka_error = args[0] if args and hasattr(args[0], "code") else value
    return {"code": int(kafka_error.code()), "name": kafka_error.name(), "message": kafka_error.str()}


def metadata(raw: Any) -> dict[str, Any]:
    """A ClusterMetadata answer (``list_topics``)."""
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


def configs(entries: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """One resource's ``describe_configs`` answer: each entry's value and where it comes from."""
    return {
        name: {"value": e.value, "source": int(e.source), "is_default": e.is_default, "is_sensitive": e.is_sensitive}
        for name, e in entries.items()
    }


def cluster(described: Any) -> dict[str, Any]:
    """A ``describe_cluster`` answer."""
    return {
        "cluster_id": described.cluster_id,
        "controller": described.controller.id if described.controller else None,
        "nodes": [{"id": n.id, "host": n.host, "port": n.port, "rack": n.rack} for n in described.nodes],
    }


def groups(listed: Any) -> dict[str, Any]:
    """A ``list_consumer_groups`` answer."""
    return {
        "groups": [{"group_id": g.group_id, "state": _name(g.state), "simple": g.is_simple_consumer_group} for g in listed.valid],
        "errors": [error(e) for e in listed.errors],
    }


def group_offsets(answer: Any) -> dict[str, Any]:
    """A ``list_consumer_group_offsets`` answer for one group: each partition's committed offset (-1001: none)."""
    return {
        "group_id": answer.group_id,
        "partitions": [
            {"topic": tp.topic, "partition": tp.partition, "offset": tp.offset, "error": error(tp.error)}
            for tp in answer.topic_partitions
        ],
    }


def offsets(answers: dict[Any, Any]) -> list[dict[str, Any]]:
    """``list_offsets`` results, settled: each partition's log-end offset (or its error)."""
    return [{"topic": tp.topic, "partition": tp.partition, **_offset(result)} for tp, result in answers.items()]


def _offset(result: Any) -> dict[str, Any]:
    return {"error": error(result)} if isinstance(result, BaseException) else {"offset": result.offset}


def elections(results: dict[Any, Any]) -> list[dict[str, Any]]:
    """An ``elect_leaders`` answer: each partition's error, {} when elected."""
    return [{"topic": tp.topic, "partition": tp.partition, "error": error(e)} for tp, e in results.items()]


def topic_description(described: Any) -> dict[str, Any]:
    """A ``describe_topics`` answer for one topic (with its authorized operations)."""
    operations = described.authorized_operations
    return {"name": described.name, "authorized_operations": None if operations is None else [_name(o) for o in operations]}


def acl(binding: Any) -> dict[str, Any]:
    """One AclBinding, its enums by name."""
    return {
        "restype": _name(binding.restype),
        "name": binding.name,
        "pattern": _name(binding.resource_pattern_type),
        "principal": binding.principal,
        "host": binding.host,
        "operation": _name(binding.operation),
        "permission": _name(binding.permission_type),
    }


def _name(value: Any) -> str:
    return str(getattr(value, "name", value))
