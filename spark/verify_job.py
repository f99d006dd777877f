"""PySpark job: real traffic through every broker, read back and checked per broker.

    spark-submit spark/verify_job.py --brokers b1:9094,b2:9094 --topic T --records K --report out.json

For each broker (used alone as bootstrap) the driver finds the partitions of T that broker leads
(with tansu's memory engine every broker is its own cluster and leads all partitions of its own
copy of T; the topic is created there if missing). Each Spark task owns one (broker, partition):
it produces its share of the broker's K records there while reading the partition back with
``assign()`` (never a consumer group: group coordination is slow on tansu and irrelevant here),
then reads on to the end offset. Records carry run id, broker index, sequence and send time, so
the driver can count missing, duplicated and foreign records, compare an order-independent
checksum (sum of crc32 of every value, mod 2**64) of what was acknowledged with what was read,
and report produce->consume latency and throughput per broker. Exit status 0 only when every
broker was reachable and every record came back exactly once and intact.

The job is self-contained (pyspark + confluent-kafka only) because it must also run on Spark
workers that do not have swarmkit installed. The connector jar (spark-sql-kafka) is not used: it
comes from Maven Central, which these machines cannot reach.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import struct
import sys
import time
import uuid
import zlib
from array import array
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

DEFAULT_RECORDS = 50_000
DEFAULT_PAYLOAD = 100
DEFAULT_PARTITIONS = 2
DEFAULT_TIMEOUT = 60.0
PROBE_TIMEOUT = 10.0
HEADER = ">16sHQQ"  # run id, broker index, sequence, send time (ns since epoch); a str, as Struct cannot pickle
HEADER_SIZE = struct.calcsize(HEADER)
CHECKSUM_MOD = 2**64



def _quiet() -> logging.Logger:
    """librdkafka's log lines go here (nowhere); built where used, since Spark workers get a fresh process."""
    logger = logging.getLogger("swarmkit.verify_job.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
        logger.propagate = False
    return logger


@dataclass(frozen=True)
class Target:
    """One broker as the driver found it: which partitions it leads, or why it cannot be used."""

    index: int
    broker: str
    node_id: int = -1
    partitions: tuple[int, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Slice:
    """One task's work: the records of one broker that go to one partition it leads."""

    run_id: bytes
    broker_index: int
    broker: str
    topic: str
    partition: int
    first_seq: int
    step: int
    records: int
    payload_bytes: int
    timeout: float


def _client_conf(broker: str, timeout: float, errors: list[str]) -> dict[str, Any]:
    ms = int(max(timeout, 1.0) * 1000)
    return {
        "bootstrap.servers": broker,
        "socket.connection.setup.timeout.ms": min(ms, 10_000),
        "reconnect.backoff.max.ms": 1000,
        "logger": _quiet(),
        "error_cb": lambda err: errors.append(err.str()),
    }


def _leaders(admin: AdminClient, broker: str, topic: str, timeout: float) -> tuple[int, dict[int, int] | None]:
    """(node id of ``broker``, partition -> leader of ``topic`` or None if missing); RuntimeError if misadvertised."""
    md = admin.list_topics(timeout=timeout)
    me = next((b for b in md.brokers.values() if f"{b.host}:{b.port}" == broker), None)
    if me is None:
        advertised = ", ".join(f"{b.id}={b.host}:{b.port}" for b in md.brokers.values())
        raise RuntimeError(f"{broker} answers but advertises {advertised or 'no broker'}, not {broker}")
    info = md.topics.get(topic)
    if info is None or info.error is not None:
        return me.id, None
    return me.id, {p.id: p.leader for p in info.partitions.values()}


def probe_broker(index: int, broker: str, topic: str, partitions: int, timeout: float = PROBE_TIMEOUT) -> Target:
    """Bounded: metadata from ``broker`` alone, the topic created there if missing, the partitions it leads."""
    errors: list[str] = []
    admin = AdminClient(_client_conf(broker, timeout, errors))
    deadline = time.monotonic() + timeout
    try:
        node_id, leaders = _leaders(admin, broker, topic, timeout)
        if leaders is None:
            created = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=timeout)
            try:
                created[topic].result(timeout=timeout)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
        while (leaders is None or min(leaders.values(), default=-1) < 0) and time.monotonic() < deadline:
            time.sleep(0.1)  # a new topic's leaders appear in metadata a moment after creation
            node_id, leaders = _leaders(admin, broker, topic, max(deadline - time.monotonic(), 0.1))
    except KafkaException as exc:
        admin.poll(0)
        return Target(index, broker, error=f"{broker} unreachable: {errors[-1] if errors else exc.args[0].str()}")
    except RuntimeError as exc:
        return Target(index, broker, error=str(exc))
    led = tuple(sorted(p for p, leader in (leaders or {}).items() if leader == node_id))
    if not led:
        return Target(index, broker, node_id, error=f"{broker} (node {node_id}) leads no partition of {topic}")
    return Target(index, broker, node_id, led)


def plan_slices(targets: list[Target], topic: str, records: int, payload_bytes: int, timeout: float) -> list[Slice]:
    """Split each usable broker's ``records`` sequences over the partitions it leads (seq mod n)."""
    run_id = uuid.uuid4().bytes
    slices = []
    for target in targets:
        step = len(target.partitions)
        for position, partition in enumerate(target.partitions):
            count = len(range(position, records, step))
            slices.append(
                Slice(
                    run_id, target.index, target.broker, topic, partition, position, step, count, payload_bytes, timeout
                )
            )
    return slices


class _Reader:
    """Reads one partition back, checking each record of this run against the slice it belongs to."""

    def __init__(self, s: Slice) -> None:
        self.s = s
        self.seen = bytearray(s.records)
        self.consumed = self.duplicates = self.unexpected = self.foreign = 0
        self.checksum = 0
        self.latencies = array("f")
        self.next_offset = 0

    def take(self, messages: list[Any]) -> None:
        now = time.time_ns()
        for msg in messages:
            if msg.error():
                continue
            self.next_offset = msg.offset() + 1
            value = msg.value() or b""
            if len(value) < HEADER_SIZE:
                self.foreign += 1
                continue
            run_id, broker_index, seq, sent = struct.unpack_from(HEADER, value)
            if run_id != self.s.run_id:
                self.foreign += 1
                continue
            self.consumed += 1
            slot, rest = divmod(seq - self.s.first_seq, self.s.step)
            if broker_index != self.s.broker_index or rest or not 0 <= slot < self.s.records:
                self.unexpected += 1
                continue
            if self.seen[slot]:
                self.duplicates += 1
                continue
            self.seen[slot] = 1
            self.checksum = (self.checksum + zlib.crc32(value)) % CHECKSUM_MOD
            self.latencies.append((now - sent) / 1e6)


def run_slice(s: Slice) -> dict[str, Any]:
    """Produce the slice's records while reading the partition back; every wait bounded by ``s.timeout``."""
    started = time.time()
    deadline = time.monotonic() + s.timeout
    errors: list[str] = []
    acked = {"count": 0, "failed": 0, "checksum": 0, "error": "", "first": -1, "last": -1}

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            acked["failed"] += 1
            acked["error"] = acked["error"] or err.str()
        else:
            acked["count"] += 1
            acked["checksum"] = (acked["checksum"] + zlib.crc32(msg.value())) % CHECKSUM_MOD
            acked["first"] = msg.offset() if acked["first"] < 0 else min(acked["first"], msg.offset())
            acked["last"] = max(acked["last"], msg.offset())

    conf = _client_conf(s.broker, s.timeout, errors)
    producer = Producer({**conf, "linger.ms": 5, "message.timeout.ms": int(s.timeout * 1000)})
    consumer = Consumer(
        {
            **conf,
            "group.id": f"swarmkit-verify-{s.run_id.hex()}",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 5,
        }
    )
    reader = _Reader(s)
    result: dict[str, Any] = {"broker_index": s.broker_index, "partition": s.partition, "started": started}
    filler = b"x" * max(s.payload_bytes - HEADER_SIZE, 0)

    def send(n: int) -> None:
        value = struct.pack(HEADER, s.run_id, s.broker_index, s.first_seq + n * s.step, time.time_ns()) + filler
        while True:
            try:
                producer.produce(s.topic, value, partition=s.partition, on_delivery=delivered)
                return
            except BufferError:
                producer.poll(0.01)
                reader.take(consumer.consume(1000, timeout=0))
                if time.monotonic() > deadline:
                    raise TimeoutError(f"producer queue stayed full for {s.timeout:g}s") from None

    try:
        # Read from our first record's offset and up to our last acknowledged one: tansu's ListOffsets
        # (get_watermark_offsets) under-reports the high watermark, so watermarks cannot bound the read.
        send(0)
        producer.flush(s.timeout)
        if acked["first"] < 0:
            raise TimeoutError(f"first record not acknowledged within {s.timeout:g}s: {acked['error'] or 'no answer'}")
        consumer.assign([TopicPartition(s.topic, s.partition, acked["first"])])
        reader.next_offset = acked["first"]
        for n in range(1, s.records):
            send(n)
            if n % 500 == 0:
                producer.poll(0)
                reader.take(consumer.consume(1000, timeout=0))
        unsent = producer.flush(max(deadline - time.monotonic(), 0.1))
        result["produce_done"] = time.time()
        while reader.next_offset <= acked["last"] and time.monotonic() < deadline:
            reader.take(consumer.consume(1000, timeout=0.1))
        if unsent:
            result["error"] = f"{unsent} records still unsent after {s.timeout:g}s"
        elif reader.next_offset <= acked["last"]:
            end = acked["last"] + 1
            result["error"] = f"read back only to offset {reader.next_offset} of {end} within {s.timeout:g}s"
    except (KafkaException, TimeoutError) as exc:
        detail = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
        result["error"] = f"{s.broker} partition {s.partition}: {errors[-1] if errors else detail}"
    finally:
        consumer.close()
    if acked["failed"] and "error" not in result:
        result["error"] = f"{acked['failed']} records not acknowledged: {acked['error']}"
    result.update(
        consume_done=time.time(),
        produced=acked["count"],
        produced_checksum=acked["checksum"],
        consumed=reader.consumed,
        unique=sum(reader.seen),
        duplicates=reader.duplicates,
        unexpected=reader.unexpected,
        foreign=reader.foreign,
        consumed_checksum=reader.checksum,
        latencies=reader.latencies.tobytes(),
    )
    result.setdefault("produce_done", result["consume_done"])
    return result


def _percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)


def _rate(count: int, start: float, end: float) -> float:
    return round(count / (end - start), 1) if count and end > start else 0.0


def summarize(targets: list[Target], results: list[dict[str, Any]], records: int) -> list[dict[str, Any]]:
    """One report entry per broker from the tasks' results."""
    brokers = []
    for target in targets:
        mine = [r for r in results if r["broker_index"] == target.index]
        latencies: list[float] = []
        for r in mine:
            latencies.extend(array("f", r["latencies"]))
        produced = sum(r["produced"] for r in mine)
        consumed = sum(r["consumed"] for r in mine)
        unique = sum(r["unique"] for r in mine)
        start = min((r["started"] for r in mine), default=0.0)
        errors = [target.error] if target.error else [r["error"] for r in mine if r.get("error")]
        entry = {
            "broker": target.broker,
            "node_id": target.node_id,
            "reachable": not target.error,
            "partitions": list(target.partitions),
            "produced": produced,
            "consumed": consumed,
            "missing": records - unique,
            "duplicates": sum(r["duplicates"] for r in mine),
            "unexpected": sum(r["unexpected"] for r in mine),
            "checksum_ok": bool(mine)
            and sum(r["produced_checksum"] for r in mine) % CHECKSUM_MOD
            == sum(r["consumed_checksum"] for r in mine) % CHECKSUM_MOD,
            "latency_ms": {"p50": _percentile(latencies, 0.50), "p99": _percentile(latencies, 0.99)},
            "produce_records_per_s": _rate(produced, start, max((r["produce_done"] for r in mine), default=0.0)),
            "consume_records_per_s": _rate(consumed, start, max((r["consume_done"] for r in mine), default=0.0)),
            "error": "; ".join(errors),
        }
        entry["ok"] = (
            entry["reachable"]
            and not entry["error"]
            and entry["missing"] == 0
            and entry["duplicates"] == 0
            and entry["unexpected"] == 0
            and entry["checksum_ok"]
        )
        brokers.append(entry)
    return brokers


def probe_all(brokers: list[str], topic: str, partitions: int, timeout: float) -> list[Target]:
    """Probe every broker in parallel so that dead ones cost one timeout, not one each."""
    with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
        return list(pool.map(lambda ib: probe_broker(ib[0], ib[1], topic, partitions, timeout), enumerate(brokers)))


def _spark_session(master: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName("swarmkit-verify")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if master.startswith("local"):
        builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def _run_on_spark(session: Any, slices: list[Slice]) -> list[dict[str, Any]]:
    """One Spark task per slice. Workers import this file as a module (shipped with addPyFile), so
    tasks reference its functions instead of cloudpickling them, and confluent_kafka is imported there."""
    if not slices:
        return []
    session.sparkContext.addPyFile(__file__)
    module = __import__(Path(__file__).stem)
    return session.sparkContext.parallelize(slices, len(slices)).map(module.run_slice).collect()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", required=True, help="comma-separated advertised HOST:PORT of every broker")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="records per broker")
    parser.add_argument("--report", required=True, type=Path, help="where to write the JSON report")
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS, help="if the topic must be created")
    parser.add_argument("--payload-bytes", type=int, default=DEFAULT_PAYLOAD)
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per task")
    parser.add_argument("--probe-timeout", type=float, default=PROBE_TIMEOUT, help="seconds per broker probe")
    args = parser.parse_args(argv)
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if not args.brokers or args.records < 1 or args.partitions < 1:
        parser.error("need at least one broker, --records >= 1 and --partitions >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    args = parse_args(argv)
    report: dict[str, Any] = {"ok": False, "records_per_broker": args.records, "topic": args.topic, "brokers": []}
    try:
        with ThreadPoolExecutor(max_workers=1) as background:  # probe brokers while Spark starts
            probing = background.submit(probe_all, args.brokers, args.topic, args.partitions, args.probe_timeout)
            session_start = time.monotonic()
            session = _spark_session(args.master)
            report["spark_startup_s"] = round(time.monotonic() - session_start, 3)
            report["master"] = session.sparkContext.master
            targets = probing.result()
        usable = [t for t in targets if not t.error]
        slices = plan_slices(usable, args.topic, args.records, args.payload_bytes, args.timeout)
        traffic_start = time.monotonic()
        results = _run_on_spark(session, slices)
        report["traffic_s"] = round(time.monotonic() - traffic_start, 3)
        report["brokers"] = summarize(targets, results, args.records)
        consumed = sum(b["consumed"] for b in report["brokers"])
        report["records_per_s"] = round(consumed / report["traffic_s"], 1) if report["traffic_s"] else 0.0
        report["ok"] = all(b["ok"] for b in report["brokers"])
        session.stop()
    except Exception as exc:  # the report must say why the job died, whatever it was
        report["error"] = f"{type(exc).__name__}: {exc}"
    report["elapsed_s"] = round(time.monotonic() - began, 3)
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(json.dumps(report, indent=2) + "\n")
    for broker in report["brokers"]:
        state = "ok" if broker["ok"] else f"FAILED {broker['error'] or 'records missing, duplicated or corrupted'}"
        print(f"{broker['broker']}: {broker['consumed']}/{args.records} back, {state}", file=sys.stderr)
    if "error" in report:
        print(f"verify job failed: {report['error']}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
