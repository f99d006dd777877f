"""Counted Kafka traffic for the tests: a producer that remembers every acknowledged record, and a
reader that takes everything back, so a test can say exactly what was lost or duplicated."""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from swarmkit import waits


def producer_config(bootstrap: str, **overrides: object) -> dict[str, object]:
    """acks=all, idempotent, and one request in flight per broker: with several, a leader change can answer a
    later batch OUT_OF_ORDER_SEQUENCE, on which librdkafka bumps the producer epoch, and a batch of another
    partition retried under the new epoch is written twice (librdkafka issue #4953, open) -- a client bug that
    showed here as 1-3 duplicates of ~32,000 records in the CA rotation's three rolls on a loaded machine."""
    return {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "max.in.flight.requests.per.connection": 1,
        "linger.ms": 5,
        "message.timeout.ms": 120_000,
        **overrides,
    }


@dataclass
class CountingProducer:
    """Writes numbered records to a topic from a thread until stopped (or ``limit`` records)."""

    bootstrap: str
    topic: str
    limit: int = 1_000_000
    rate_per_s: float = 1_000.0
    acknowledged: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    client_errors: list[str] = field(default_factory=list)  # librdkafka's own (a fatal idempotence error, a lost broker)
    sent: int = 0
    config: dict[str, object] = field(default_factory=dict)  # e.g. a secure cluster's login
    last_ack: dict[int, float] = field(default_factory=dict)  # partition -> when its last record was acknowledged
    longest_pause: dict[int, float] = field(default_factory=dict)  # partition -> longest time between two acks
    longest_pause_end: dict[int, float] = field(default_factory=dict)  # partition -> when its longest pause ended

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"producer-{self.topic}", daemon=True)

    def start(self) -> CountingProducer:
        self._thread.start()
        return self

    def stop(self, timeout: float = 150.0) -> CountingProducer:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the producer did not finish flushing"
        return self

    def acked_after(self, count: int, timeout: float) -> None:
        """Wait until ``count`` more records than now are acknowledged."""
        target = len(self.acknowledged) + count
        deadline = time.monotonic() + timeout
        while len(self.acknowledged) < target:
            assert time.monotonic() < deadline, (
                f"only {len(self.acknowledged)} of {target} acknowledged: {self.errors[:3]}; client: {self.client_errors[-5:]}"
            )
            time.sleep(0.05)

    def _delivered(self, error: KafkaError | None, message) -> None:
        if error is None:
            self.acknowledged.add(int(message.value()))
            now, partition = time.monotonic(), message.partition()
            if partition in self.last_ack:
                gap = now - self.last_ack[partition]
                if gap > self.longest_pause.get(partition, 0.0):
                    self.longest_pause[partition], self.longest_pause_end[partition] = gap, now
            self.last_ack[partition] = now
        else:
            self.errors.append(error.str())

    def _run(self) -> None:
        settings = producer_config(self.bootstrap, **self.config)
        producer = Producer(settings | {"error_cb": lambda error: self.client_errors.append(f"{time.strftime('%T')} {error}")})
        started = time.monotonic()
        while not self._stop.is_set() and self.sent < self.limit:
            try:
                producer.produce(self.topic, str(self.sent).encode(), on_delivery=self._delivered)
                self.sent += 1
            except BufferError:
                producer.poll(0.1)
            producer.poll(0)
            ahead = self.sent / self.rate_per_s - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(min(ahead, 0.05))
        producer.flush(140)


def end_offset(consumer: Consumer, partition: TopicPartition, bound: float = 60.0) -> int:
    """The partition's log end; asked again while its leadership moves (a broker just restarted: NOT_LEADER)."""

    def look() -> int | waits.NotYet:
        try:
            return int(consumer.get_watermark_offsets(partition, timeout=10)[1])
        except KafkaException as error:
            if not error.args[0].retriable():
                raise
            return waits.NotYet(str(error))

    return waits.until(look, bound, fail=lambda why: AssertionError(f"no end offset of {partition}: {why}"))


def read_everything(
    bootstrap: str, topic: str, partitions: int, timeout: float = 60.0, config: dict[str, object] | None = None
) -> Counter[int]:
    """Every record of every partition, from the first offset to the end offsets seen at the start."""
    settings = {"bootstrap.servers": bootstrap, "group.id": f"read-{topic}-{time.time()}", "enable.auto.commit": False}
    consumer = Consumer(settings | (config or {}))
    try:
        ends = {p: end_offset(consumer, TopicPartition(topic, p)) for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        found: Counter[int] = Counter()
        positions = dict.fromkeys(ends, 0)
        deadline = time.monotonic() + timeout
        while any(positions[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"read stalled at {positions} of {ends}"
            for message in consumer.consume(10_000, timeout=1):
                if message.error():
                    continue
                found[int(message.value())] += 1
                positions[message.partition()] = message.offset() + 1
        return found
    finally:
        consumer.close()


def lost_and_duplicated(acknowledged: set[int], found: Counter[int]) -> tuple[list[int], list[int]]:
    lost = sorted(acknowledged - set(found))
    duplicated = sorted(value for value, count in found.items() if count > 1)
    return lost, duplicated


def acknowledged_rate(bootstrap: str, topic: str, client_id: str, skip_s: float, measure_s: float, size: int = 8192) -> float:
    """Bytes per second acknowledged to a producer (``client.id`` ``client_id``) writing as fast as it may into
    partition 0 of ``topic``, counted over ``measure_s`` seconds after the first ``skip_s`` (a broker's quota
    windows settling after the first burst). The local queue is small, so what it counts is what the broker
    took, not what waits here."""
    acked: list[tuple[float, int]] = []

    def delivered(error: KafkaError | None, message) -> None:
        if error is None:
            acked.append((time.monotonic(), len(message.value())))

    producer = Producer(producer_config(bootstrap, **{"client.id": client_id, "queue.buffering.max.kbytes": 512}))
    payload, started = b"q" * size, time.monotonic()
    while time.monotonic() < started + skip_s + measure_s:
        try:
            producer.produce(topic, payload, partition=0, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge()
    producer.flush(30)
    counted = [count for at, count in acked if started + skip_s <= at < started + skip_s + measure_s]
    return sum(counted) / measure_s
