"""Records Kafka's answers, as swarmkit's Kafka adapter reads them, from a real sandbox cluster.

A 3-host apache sandbox (one manager and controller, three brokers) deployed in sasl_ssl mode; the answers
(as ``swarmkit.kafka.answers`` turns confluent-kafka's objects into plain data, and kafka-python's own
dicts) go to tests/unit/kafka/fixtures/*.json, the unit tests of ``swarmkit.kafka.parse`` read them.
Last, one host's engine is stopped and the metadata with its partitions under-replicated is recorded.
The sandbox is always removed.  Run as root, under the integration lock:

    flock /tmp/swarmkit-integration.lock .venv/bin/python scripts/record_kafka_answers.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import traceback
from dataclasses import replace
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
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, OffsetSpec

from swarmkit import waits
from swarmkit.hosts.inventory import load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin, answers, quorum, quotas
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity

NAME, SUBNET = "ka", "10.222.0.0/24"
BOOTSTRAP = "10.222.0.11:9094"
FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "unit" / "kafka" / "fixtures"
TIMEOUT = 15.0


def save(name: str, answer: Any) -> None:
    (FIXTURES / f"{name}.json").write_text(json.dumps(answer, indent=1, sort_keys=True, default=str) + "\n")
    print(f"recorded {name}", flush=True)


def settle(future: Any, read: Any = lambda a: a) -> Any:
    try:
        return read(future.result(timeout=TIMEOUT))
    except Exception as error:  # recorded as the adapter sees it
        return {"error": answers.error(error)}


def client(security: ClientSecurity) -> AdminClient:
    return AdminClient({"bootstrap.servers": BOOTSTRAP, "socket.timeout.ms": 10000, **security.librdkafka()})


def prepare(security: ClientSecurity) -> None:
    """min.insync.replicas 2 on orders, ten records on it, group ``app`` committed at 3 on each partition."""
    kafka = client(security)
    entry = ConfigEntry("min.insync.replicas", "2", incremental_operation=AlterConfigOpType.SET)
    for future in kafka.incremental_alter_configs([ConfigResource("topic", "orders", incremental_configs=[entry])]).values():
        future.result(TIMEOUT)
    settings = {"bootstrap.servers": BOOTSTRAP, **security.librdkafka()}
    producer = Producer({**settings, "acks": "all"})
    for number in range(10):
        producer.produce("orders", str(number).encode(), partition=number % 3)
    producer.flush(TIMEOUT)
    consumer = Consumer({**settings, "group.id": "app", "enable.auto.commit": False})
    deadline = waits.Deadline(60, first=1.0, longest=3.0)
    while True:  # the group coordinator is not ready at once on a new cluster (NOT_COORDINATOR)
        try:
            consumer.commit(offsets=[TopicPartition("orders", p, 3) for p in range(3)], asynchronous=False)
            break
        except KafkaException:
            if deadline.passed():
                raise
            deadline.sleep()
    consumer.close()
    admin.set_scram_user(BOOTSTRAP, "nogrants", "nogrants-password", security, TIMEOUT)


def record_admin(security: ClientSecurity) -> None:
    kafka = client(security)
    metadata = answers.metadata(kafka.list_topics(timeout=TIMEOUT))
    save("metadata", metadata)
    topics = sorted(t["topic"] for t in metadata["topics"])
    described = kafka.describe_configs([ConfigResource("topic", t) for t in [*topics, "missing"]])
    save("describe_configs", {r.name: settle(f, answers.configs) for r, f in described.items()})
    save("describe_cluster", settle(kafka.describe_cluster(), answers.cluster))
    described_topics = kafka.describe_topics(TopicCollection(["orders", "missing"]), include_authorized_operations=True)
    save("describe_topics", {t: settle(f, answers.topic_description) for t, f in described_topics.items()})
    save("list_consumer_groups", settle(kafka.list_consumer_groups(), answers.groups))
    offsets = kafka.list_consumer_group_offsets([ConsumerGroupTopicPartitions("app")])
    save("group_offsets", settle(offsets["app"], answers.group_offsets))
    ends = kafka.list_offsets({TopicPartition("orders", p): OffsetSpec.latest() for p in range(3)})
    save("log_ends", [{"topic": tp.topic, "partition": tp.partition, **settle(f, answers.log_end)} for tp, f in ends.items()])
    elected = kafka.elect_leaders(ElectionType.PREFERRED, [TopicPartition("orders", p) for p in range(3)])
    save("elect_leaders", settle(elected, answers.elections))
    created = kafka.create_topics([NewTopic("orders", 3, 3), NewTopic("fresh", 1, 1)], operation_timeout=TIMEOUT)
    save("create_topics", {t: settle(f, lambda _: {}) for t, f in created.items()})
    save("describe_scram_users", settle(kafka.describe_user_scram_credentials(), answers.scram_users))


def record_refusals(security: ClientSecurity) -> None:
    nobody = client(replace(security, username="nogrants", password="nogrants-password"))
    topics = nobody.describe_topics(TopicCollection(["orders"]), include_authorized_operations=True)
    save("describe_topics_unauthorized", {t: settle(f, answers.topic_description) for t, f in topics.items()})
    configs = nobody.describe_configs([ConfigResource("topic", "orders")])
    save("describe_configs_unauthorized", {r.name: settle(f, answers.configs) for r, f in configs.items()})
    offsets = nobody.list_consumer_group_offsets([ConsumerGroupTopicPartitions("app")])
    save("group_offsets_unauthorized", settle(offsets["app"], answers.group_offsets))
    complaints: list[dict[str, Any]] = []
    wrong = {"bootstrap.servers": BOOTSTRAP, **replace(security, password="wrong").librdkafka()}
    refused = AdminClient({**wrong, "error_cb": lambda e: complaints.append(answers.error(e))})
    try:
        refused.list_topics(timeout=8)
        save("metadata_wrong_password", {"complaints": complaints})
    except Exception as error:
        refused.poll(0)
        save("metadata_wrong_password", {"complaints": complaints, "error": answers.error(error)})


def record_kafka_python(security: ClientSecurity) -> None:
    with quorum._admin("10.222.0.11", 9094, TIMEOUT, security) as kafka:
        save("describe_quorum", kafka.describe_metadata_quorum())
        save("describe_features", kafka.describe_features())
    quotas.alter_quotas(BOOTSTRAP, {(("client-id", "slow"),): {"producer_byte_rate": 262144.0}}, TIMEOUT, security)
    with quotas._exchange(BOOTSTRAP, TIMEOUT, security) as send:
        save(
            "describe_client_quotas",
            send(quotas.kafka_protocol.DescribeClientQuotasRequest(components=[], strict=False)).to_dict(),
        )


def record_under_replicated(security: ClientSecurity) -> None:
    """ka3's engine stopped: its broker is fenced, the partitions it held fall out of sync."""
    sandbox.stop_engine(NAME, "ka3")
    kafka = client(security)
    deadline = waits.Deadline(90, first=1.0, longest=3.0)
    while True:
        raw = kafka.list_topics(timeout=TIMEOUT)
        shrunk = [p for t in raw.topics.values() if t.topic == "orders" for p in t.partitions.values() if len(p.isrs) < 3]
        if len(shrunk) == 3 or deadline.passed():
            break
        deadline.sleep()
    save("metadata_under_replicated", answers.metadata(raw))
    with quorum._admin("10.222.0.11", 9094, TIMEOUT, security) as python_kafka:
        save("describe_quorum_broker_down", python_kafka.describe_metadata_quorum())


def main() -> int:
    FIXTURES.mkdir(parents=True, exist_ok=True)
    sandbox.down(NAME)
    try:
        with tempfile.TemporaryDirectory() as scratch:
            box = sandbox.up(3, NAME, NAME, SUBNET, f"{scratch}/inventory.yaml", "apache", 1)
            inventory = load_inventory(box.inventory_path)
            result = up(
                plan(inventory, DeployOptions(topics="orders:3:3,solo:1:1", security="sasl_ssl", timeout=400)),
                Session.of(inventory),
            )
            print(f"up ok: {result.ok}", flush=True)
            security = pki.by_address(pki.for_stack(inventory, "kafka", "sasl_ssl"))
            assert security is not None
            prepare(security)
            for step in (record_admin, record_refusals, record_kafka_python, record_under_replicated):
                try:
                    step(security)
                except Exception:  # the other steps still record; the trace says what to fix
                    traceback.print_exc()
    finally:
        sandbox.down(NAME)
    return 0


if __name__ == "__main__":
    sys.exit(main())
