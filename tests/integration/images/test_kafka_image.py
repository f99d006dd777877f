"""The swarmkit/kafka image on this machine's Docker engine: one combined KRaft node (broker and controller).

The image is built from the cached jars and runtime (image.kafka_recipe), started with the official
image's environment contract, a named volume for its data and a port published on 127.0.0.1, and
used with confluent-kafka from outside the container.  The container and the volume are removed at
the end, also on failure.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from python_on_whales.exceptions import DockerException

from swarmkit.hosts.dockerapi import Engine
from swarmkit.images import image
from swarmkit.stack.engines.apache import generate_cluster_id
from tests.integration.tansu_local import free_port

pytestmark = pytest.mark.integration

LOCAL = Engine.connect("unix:///var/run/docker.sock")
START_TIMEOUT = 240.0  # two JVM starts (format, server) on a loaded 2-core machine
T = TypeVar("T")


@dataclass(frozen=True)
class Node:
    container: str
    volume: str
    bootstrap: str
    cluster_id: str


def wait_until(what: str, probe: Callable[[], T | None], timeout: float = START_TIMEOUT) -> T:
    """Poll ``probe`` until it returns something other than None; fail with ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.5)


def logs(node: Node) -> str:
    return LOCAL.client.container.logs(node.container)


def docker_exec(node: Node, *command: str) -> str:
    return LOCAL.client.container.execute(node.container, list(command))


def wait_until_serving(node: Node, starts: int) -> None:
    """Until the server's ``starts``-th start is logged and it answers metadata through the published port."""

    def probe() -> bool | None:
        state = LOCAL.client.container.inspect(node.container).state
        if not state.running:
            pytest.fail(f"the container exited ({state.exit_code}):\n{logs(node)[-4000:]}")
        if logs(node).count("Kafka Server started") < starts:
            return None
        try:
            brokers = AdminClient({"bootstrap.servers": node.bootstrap}).list_topics(timeout=2).brokers
        except KafkaException:
            return None
        return True if brokers else None

    wait_until(f"start {starts} of the Kafka server", probe)


def node_env(cluster_id: str, port: int) -> dict[str, str]:
    """A single-node cluster as the official image documents it: clients outside reach PLAINTEXT at the
    published address; tools inside the container (docker exec) use INTERNAL, advertised as localhost."""
    return {
        "KAFKA_NODE_ID": "1",
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "CLUSTER_ID": cluster_id,
        "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
        "KAFKA_LISTENERS": "PLAINTEXT://:9092,CONTROLLER://:9093,INTERNAL://:9094",
        "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port},INTERNAL://localhost:9094",
        "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
        "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_HEAP_OPTS": "-Xmx256m -Xms256m",
    }


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    image.build(LOCAL, image.kafka_recipe(), image.KAFKA_TAG)
    docker = LOCAL.client
    suffix = uuid.uuid4().hex[:8]
    port = free_port()
    created = Node(f"swarmkit-kafka-it-{suffix}", f"swarmkit-kafka-it-{suffix}", f"127.0.0.1:{port}", generate_cluster_id())
    try:
        docker.volume.create(created.volume)
        docker.container.run(
            image.KAFKA_TAG,
            name=created.container,
            detach=True,
            envs=node_env(created.cluster_id, port),
            publish=[(f"127.0.0.1:{port}", 9092)],
            volumes=[(created.volume, "/var/lib/kafka/data")],
        )
        wait_until_serving(created, starts=1)
        yield created
    finally:
        docker.container.remove(created.container, force=True, volumes=True)
        docker.volume.remove(created.volume)


def produce(node: Node, topic: str, count: int, compression: str) -> list[bytes]:
    """Create ``topic`` (3 partitions) and write ``count`` records, every one acknowledged."""
    admin = AdminClient({"bootstrap.servers": node.bootstrap})  # kept alive until the future resolves
    admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
    failures: list[object] = []
    producer = Producer({"bootstrap.servers": node.bootstrap, "compression.type": compression, "linger.ms": 5})
    values = [f"{topic}-{index:06d}".encode() * 4 for index in range(count)]
    for index, value in enumerate(values):
        producer.produce(topic, value=value, partition=index % 3, on_delivery=lambda err, _: err and failures.append(err))
    assert producer.flush(30) == 0
    assert failures == []
    return values


def consume(node: Node, topic: str, count: int) -> list[bytes]:
    """Read ``count`` records back from the start of every partition (assign, no consumer group)."""
    consumer = Consumer(
        {"bootstrap.servers": node.bootstrap, "group.id": f"it-{uuid.uuid4().hex[:6]}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, partition, 0) for partition in range(3)])
    received: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(received) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=1):
                assert message.error() is None, message.error()
                received.append(message.value())
    finally:
        consumer.close()
    return received


def test_the_server_runs_as_appuser_and_is_pid_1(node: Node) -> None:
    assert docker_exec(node, "id", "-u").strip() == "1000"
    status = docker_exec(node, "cat", "/proc/1/status")
    assert "\nUid:\t1000\t" in status
    assert docker_exec(node, "cat", "/proc/1/comm").strip() == "java"
    assert docker_exec(node, "stat", "-c", "%u:%g", "/var/lib/kafka/data").strip() == "1000:1000"
    assert "meta.properties" in docker_exec(node, "ls", "/var/lib/kafka/data").split()


def test_produce_and_consume_through_the_published_port(node: Node) -> None:
    for compression in ("zstd", "snappy", "lz4", "gzip"):  # the first three load JNI libraries from /tmp
        topic = f"it-{compression}-{uuid.uuid4().hex[:6]}"
        values = produce(node, topic, 3000, compression)
        assert sorted(consume(node, topic, len(values))) == sorted(values)


def test_server_logs_through_log4j2_at_info(node: Node) -> None:
    text = logs(node)
    assert "INFO [KafkaRaftServer nodeId=1] Kafka Server started" in text
    assert "SLF4J:" not in text  # no "no binding" warning: log4j-slf4j-impl matches slf4j 1.7
    assert "KafkaConfig values:" not in text  # the configuration dump is quieted
    assert " ERROR " not in text


def test_metadata_quorum_and_tools_work_inside_the_container(node: Node) -> None:
    status = docker_exec(
        node, "/opt/kafka/bin/kafka-metadata-quorum.sh", "--bootstrap-controller", "localhost:9093", "describe", "--status"
    )
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    assert fields["ClusterId"].strip() == node.cluster_id
    assert fields["LeaderId"].strip() == "1"
    assert '"id": 1' in fields["CurrentVoters"]
    topic = f"it-tools-{uuid.uuid4().hex[:6]}"
    internal = ("--bootstrap-server", "localhost:9094")
    docker_exec(node, "kafka-topics.sh", *internal, "--create", "--topic", topic, "--partitions", "2")
    assert f"Topic: {topic}\tTopicId:" in docker_exec(node, "kafka-topics.sh", *internal, "--describe", "--topic", topic)
    assert "No partition reassignments found." in docker_exec(node, "kafka-reassign-partitions.sh", *internal, "--list")


def test_a_restart_keeps_the_data_and_accepts_the_formatted_directory(node: Node) -> None:
    topic = f"it-restart-{uuid.uuid4().hex[:6]}"
    values = produce(node, topic, 500, "zstd")
    docker = LOCAL.client
    docker.container.stop(node.container, time=90)  # SIGTERM to the JVM (PID 1): a controlled shutdown
    text = logs(node)
    assert "Beginning controlled shutdown." in text
    assert "Transition from SHUTTING_DOWN to SHUTDOWN" in text
    docker.container.start(node.container)
    wait_until_serving(node, starts=2)
    text = logs(node)
    assert text.count("Formatting metadata directory /var/lib/kafka/data") == 1
    assert "===> Storage already formatted" in text  # the restart skipped the formatting JVM altogether
    assert sorted(consume(node, topic, len(values))) == sorted(values)
    try:
        docker_exec(node, "kafka-storage.sh", "format", "-t", node.cluster_id, "-c", "/opt/kafka/config/server.properties")
    except DockerException as error:  # without --ignore-formatted the tool refuses, as Kafka's does
        assert "already formatted" in str(error)
    else:
        pytest.fail("formatting a formatted directory again succeeded")
