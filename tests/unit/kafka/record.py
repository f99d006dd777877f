"""Record Kafka's answers from a real cluster into tests/unit/kafka/recorded/*.json (run by hand, not by pytest).

    python tests/unit/kafka/record.py BOOTSTRAP [--only NAME,...]

The cluster needs a topic ``t`` (3 partitions, RF 3), e.g. `swarmkit sandbox up --name rec --subnet 10.205.0.0/24`
then `swarmkit up -i INVENTORY --topics t:3:3`.  Each answer goes through swarmkit.kafka.answers, the same
conversion KafkaAdmin makes, so the parsers' tests read exactly what a live call hands them.  Record
``metadata_degraded`` and ``offsets_degraded`` after stopping one broker's engine (`swarmkit sandbox
stop-engine`), with ``--only``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    ElectionType,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, OffsetSpec

from swarmkit.kafka import answers, quorum

OUT = Path(__file__).parent / "recorded"
TOPIC, GROUP = "t", "recorded-group"


def _settled(future: Any, timeout: float = 15) -> Any:
    try:
        return future.result(timeout=timeout)
    except KafkaException as error:
        return error


def _traffic(bootstrap: str) -> None:
    """Ten records per partition, a group that reads some and commits: committed offsets behind the log end."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for n in range(30):
        producer.produce(TOPIC, value=b"%d" % n, partition=n % 3)
    producer.flush(30)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(3)])
    read = 0
    while read < 12:
        message = consumer.poll(10)
        if message is not None and not message.error():
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()


def _offsets(admin: AdminClient) -> list[dict[str, Any]]:
    wanted = {TopicPartition(TOPIC, p): OffsetSpec.latest() for p in range(3)}
    futures = admin.list_offsets(wanted, request_timeout=15)
    return answers.offsets({tp: _settled(future) for tp, future in futures.items()})


def recordings(bootstrap: str) -> dict[str, Any]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    host, port = bootstrap.rsplit(":", 1)
    configs = admin.describe_configs([ConfigResource("topic", TOPIC), ConfigResource("topic", "__consumer_offsets")])
    missing = admin.describe_configs([ConfigResource("topic", "no-such-topic")])
    too_many = admin.create_topics([NewTopic("too-many-replicas", 1, 7)], request_timeout=15)["too-many-replicas"]
    exists = admin.create_topics([NewTopic(TOPIC, 3, 3)], request_timeout=15)[TOPIC]
    described = admin.describe_topics(TopicCollection([TOPIC]), include_authorized_operations=True)[TOPIC]
    elected = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, p) for p in range(3)])
    return {
        "metadata": lambda: answers.metadata(admin.list_topics(timeout=15)),
        "describe_configs": lambda: {r.name: answers.configs(_settled(f)) for r, f in configs.items()},
        "describe_configs_missing_topic": lambda: {r.name: answers.error(_settled(f)) for r, f in missing.items()},
        "create_topic_too_many_replicas": lambda: answers.error(_settled(too_many)),
        "create_topic_exists": lambda: answers.error(_settled(exists)),
        "describe_cluster": lambda: answers.cluster(admin.describe_cluster(request_timeout=15).result(15)),
        "describe_topic_operations": lambda: answers.topic_description(_settled(described)),
        "elect_leaders": lambda: answers.elections(_settled(elected)),
        "quorum": lambda: quorum.raw_quorum(host, int(port), 15, None),
        "consumer_groups": lambda: answers.groups(admin.list_consumer_groups(request_timeout=15).result(15)),
        "group_offsets": lambda: answers.group_offsets(
            _settled(admin.list_consumer_group_offsets([_group_request()], request_timeout=15)[GROUP])
        ),
        "group_offsets_unknown_group": lambda: answers.group_offsets(
            _settled(admin.list_consumer_group_offsets([_group_request("nobody")], request_timeout=15)["nobody"])
        ),
        "offsets": lambda: _offsets(admin),
        "metadata_degraded": lambda: answers.metadata(admin.list_topics(timeout=15)),
        "offsets_degraded": lambda: _offsets(admin),
    }


def _group_request(group: str = GROUP) -> Any:
    return ConsumerGroupTopicPartitions(group)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bootstrap")
    parser.add_argument("--only", default="", help="comma-separated recording names")
    parser.add_argument("--traffic", action="store_true", help="produce and consume first (a group with lag)")
    args = parser.parse_args()
    if args.traffic:
        _traffic(args.bootstrap)
    wanted = [n for n in args.only.split(",") if n]
    OUT.mkdir(exist_ok=True)
    for name, record in recordings(args.bootstrap).items():
        if (wanted and name not in wanted) or (not wanted and name.endswith("_degraded")):
            continue
        (OUT / f"{name}.json").write_text(json.dumps(record(), indent=1, sort_keys=True) + "\n")
        print("recorded", name, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
