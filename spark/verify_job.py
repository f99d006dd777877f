"""PySpark job: real traffic through every broker with Spark's own Kafka connector, read back and checked.

    spark-submit --jars "$(ls /var/cache/swarmkit/spark-kafka-4.2.0/jars/*.jar | paste -sd,)" \\
        spark/verify_job.py --bootstrap node1:9094,node2:9094,node3:9094 --topic T --records K --report out.json

The driver asks every broker alone for metadata (confluent-kafka, in the driver only): is it
reachable, does it advertise itself as given, which cluster is it in, which partitions of T does
it lead. Brokers that see each other form one cluster (Apache Kafka); tansu's memory engine makes
every broker its own cluster, and the same code then runs once per cluster. Per cluster:

1. where the run starts in every partition is taken (one acknowledged marker record each);
2. ``spark.range`` generates K records per leader broker in the JVM (no Python rows): value
   ``<run>:<seq>:xxxx…``, an explicit ``partition`` column spreading each broker's K records over
   the partitions it leads; written with the DataFrame Kafka sink, ``acks=all``, idempotence on;
3. the latest offsets are taken, and the batch Kafka source reads exactly that range
   (``assign`` + ``startingOffsets``/``endingOffsets``; tansu under-reports the latest offset,
   so the range ends at the later of it and start + records sent: records that are not there
   count as missing, never as a crash), aggregated in the JVM per partition with sums and counts
   only: records, valid ones (this run's, in the partition their sequence maps to), the sum of
   their sequence numbers, crc32 sum, record-timestamp span, and a histogram of read-time minus
   record timestamp for one record in 16 (produce->read-back latency);
4. the crc32 sum of what was written is computed in the driver from the generator's definition
   (``crc_sum``: closed form, no second pass over the records) and compared; where a partition's
   counts or sums differ from what was written, a second read counts its distinct sequence numbers
   exactly (bitmaps), so the report says how many records are missing and how many duplicated.

The JSON report has one entry per partition and per given broker; exit status 0 only when every
broker was reachable and every record came back exactly once and intact.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import uuid
import zlib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

DEFAULT_RECORDS = 50_000
DEFAULT_PAYLOAD = 100
DEFAULT_PARTITIONS = 3
DEFAULT_TIMEOUT = 120.0
PROBE_TIMEOUT = 10.0
LATENCY_SAMPLE = 16  # one record in 16 carries a latency sample: enough for p99, cheap to collect
SEQ_DIGITS = 12
RUN_CHARS = 8
POLL_TIMEOUT_MS = 10_000  # how long a read task waits for a record that is not there
CONNECTOR = "spark-sql-kafka-0-10"


@dataclass(frozen=True)
class Tuning:
    """What Spark users tune on the Kafka sink and source (see docs/spark.md, Tuning, and benchmarks/RESULTS.md)."""

    linger_ms: int = 20
    batch_size: int = 524_288
    compression: str = "lz4"
    write_tasks: int = 0  # 0: one per core
    min_partitions: int = 0  # 0: one read task per Kafka partition
    fetch_bytes: int = 16 << 20  # per partition and fetch; the consumer's 1 MiB default starves a read
    poll_records: int = 20_000  # per poll; the source asks the leader for two offsets after every poll
    timeout: float = DEFAULT_TIMEOUT

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Tuning:
        """The options ``add_tuning_arguments`` defines, under the fields' names."""
        return cls(**{f.name: getattr(args, f.name) for f in fields(cls)})

    def to_args(self) -> list[str]:
        """The same tuning as this job's command-line options (a benchmark hands it to spark-submit)."""
        return [arg for f in fields(self) for arg in (f"--{f.name.replace('_', '-')}", str(getattr(self, f.name)))]


def add_tuning_arguments(parser: argparse.ArgumentParser) -> None:
    """One option per ``Tuning`` field, for the job and for the benchmark that runs it."""
    parser.add_argument("--timeout", type=float, default=Tuning.timeout, help="Kafka delivery and poll timeout, s")
    parser.add_argument("--linger-ms", type=int, default=Tuning.linger_ms)
    parser.add_argument("--batch-size", type=int, default=Tuning.batch_size)
    parser.add_argument("--compression", default=Tuning.compression, choices=["none", "gzip", "snappy", "lz4", "zstd"])
    parser.add_argument("--write-tasks", type=int, default=0, help="Spark tasks writing (0: one per core)")
    parser.add_argument("--min-partitions", type=int, default=0, help="Spark tasks reading (0: one per partition)")
    parser.add_argument("--fetch-bytes", type=int, default=Tuning.fetch_bytes, help="max bytes per partition fetch")
    parser.add_argument("--poll-records", type=int, default=Tuning.poll_records, help="max records per Java consumer poll")


@dataclass(frozen=True)
class Client:
    """How the job's clients log in to a secure cluster (empty: plain text). The driver's confluent-kafka
    clients take librdkafka settings, the connector Java ones (each read from a key=value file, as
    ``swarmkit client-config --format librdkafka|properties`` writes them); bootstrap.servers is
    the job's own."""

    driver: dict[str, str] = field(default_factory=dict)
    connector: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_files(cls, driver: Path | None, connector: Path | None) -> Client:
        return cls(read_settings(driver), read_settings(connector))

    def connector_options(self) -> dict[str, str]:
        return {f"kafka.{key}": value for key, value in self.connector.items()}


def read_settings(path: Path | None) -> dict[str, str]:
    """key=value lines; blank lines, comments and bootstrap.servers are skipped."""
    if path is None:
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs if key.strip() != "bootstrap.servers"}


@dataclass(frozen=True)
class Probe:
    """One given broker as it answered alone: its node id and cluster, or why it cannot be used."""

    index: int
    broker: str
    node_id: int = -1
    cluster: tuple[str, ...] = ()
    error: str = ""


@dataclass(frozen=True)
class Plan:
    """One cluster's share of the run: who leads what, and where each partition stood before the write."""

    bootstrap: str
    topic: str
    run: str
    records: int
    payload_bytes: int
    owners: tuple[tuple[int, tuple[int, ...]], ...]  # (given broker index, partitions it leads)
    start: dict[int, int] = field(default_factory=dict)
    client: Client = field(default_factory=Client)

    @property
    def total(self) -> int:
        return self.records * len(self.owners)

    @property
    def partitions(self) -> list[int]:
        return sorted(p for _, parts in self.owners for p in parts)

    def expected(self, partition: int) -> int:
        """How many records the generator sends to ``partition`` (see ``partition_of``)."""
        return len(self.sequences(partition))

    def sequences(self, partition: int) -> range:
        """The sequence numbers the generator sends to ``partition`` (the inverse of ``partition_of``)."""
        brokers = len(self.owners)
        for slot, (_, parts) in enumerate(self.owners):
            if partition in parts:
                return range(slot + brokers * parts.index(partition), self.total, brokers * len(parts))
        return range(0)


def _admin(bootstrap: str, timeout: float, client: Client, errors: list[str] | None = None) -> AdminClient:
    """A client bounded by ``timeout`` whose errors go to ``errors`` (or nowhere), never to stderr."""
    ms = int(max(timeout, 1.0) * 1000)
    return AdminClient(
        {
            **client.driver,
            "bootstrap.servers": bootstrap,
            "socket.connection.setup.timeout.ms": min(ms, 10_000),
            "reconnect.backoff.max.ms": 1000,
            "log_level": 3,  # errors only: librdkafka's notices would drown the job's own lines
            "error_cb": lambda err: errors.append(err.str()) if errors is not None else None,
        }
    )


def probe(index: int, broker: str, timeout: float = PROBE_TIMEOUT, client: Client | None = None) -> Probe:
    """Metadata from ``broker`` alone, bounded by ``timeout``: unreachable and misadvertised brokers are named."""
    errors: list[str] = []
    try:
        md = _admin(broker, timeout, client or Client(), errors).list_topics(timeout=timeout)
    except KafkaException as exc:
        return Probe(index, broker, error=f"{broker} unreachable: {errors[-1] if errors else exc.args[0].str()}")
    advertised = sorted(f"{b.host}:{b.port}" for b in md.brokers.values())
    me = next((b for b in md.brokers.values() if f"{b.host}:{b.port}" == broker), None)
    if me is None:
        return Probe(index, broker, error=f"{broker} answers but advertises {', '.join(advertised) or 'no broker'}")
    return Probe(index, broker, me.id, tuple(advertised))


def _leaders(admin: AdminClient, topic: str, partitions: int, replicas: int, timeout: float) -> dict[int, str]:
    """partition -> advertised address of its leader; the topic is created first if missing."""
    deadline = time.monotonic() + timeout
    created = False
    while True:
        md = admin.list_topics(timeout=timeout)  # naming the topic could auto-create it
        where = {b.id: f"{b.host}:{b.port}" for b in md.brokers.values()}
        info = md.topics.get(topic)
        missing = info is None or (info.error is not None and info.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART)
        if missing and not created:
            future = admin.create_topics([NewTopic(topic, partitions, replicas)], operation_timeout=timeout)[topic]
            try:
                future.result(timeout=timeout)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise
            created = True
        elif not missing and info.partitions and all(p.leader >= 0 for p in info.partitions.values()):
            return {p.id: where.get(p.leader, "") for p in info.partitions.values()}
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no leader for every partition after {timeout:g}s")
        time.sleep(0.1)  # a new topic's leaders appear in metadata a moment after creation


def latest_offsets(plan: Plan, partitions: list[int], timeout: float) -> dict[int, int]:
    """The high watermark of every partition: the first offset the next record gets."""
    admin, topic = _admin(plan.bootstrap, timeout, plan.client), plan.topic
    futures = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.latest() for p in partitions}, request_timeout=timeout)
    return {tp.partition: future.result().offset for tp, future in futures.items()}


def start_offsets(bootstrap: str, topic: str, partitions: list[int], run: str, timeout: float, client: Client) -> dict[int, int]:
    """Where this run's records will start in each partition: one acknowledged marker record each, plus one.

    Exact on every engine (tansu's ListOffsets answers the last batch's base offset, not the end),
    and a first proof that each leader accepts writes with ``acks=all``."""
    errors: list[str] = []
    producer = Producer(
        {
            **client.driver,
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": int(timeout * 1000),
            "log_level": 3,
            "error_cb": lambda err: errors.append(err.str()),
        }
    )
    offsets: dict[int, int] = {}

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            offsets[msg.partition()] = msg.offset() + 1
        else:
            errors.append(f"partition {msg.partition()}: {err.str()}")

    for partition in partitions:
        producer.produce(topic, f"swarmkit-verify-start:{run}".encode(), partition=partition, on_delivery=delivered)
    producer.flush(timeout)
    if len(offsets) < len(partitions):
        raise TimeoutError(f"start markers not acknowledged within {timeout:g}s: {errors[-1] if errors else 'no answer'}")
    return offsets


def plan_cluster(
    probes: list[Probe],
    topic: str,
    records: int,
    payload_bytes: int,
    run: str,
    partitions: int,
    timeout: float,
    client: Client,
) -> tuple[Plan | None, dict[int, str]]:
    """(the cluster's plan, or None; errors by broker index): every given broker must lead a partition."""
    bootstrap = ",".join(p.broker for p in probes)
    replicas = min(3, len(probes[0].cluster))
    leaders = _leaders(_admin(bootstrap, timeout, client), topic, partitions, replicas, timeout)
    owners, failed = [], {}
    for p in probes:
        led = tuple(sorted(part for part, leader in leaders.items() if leader == p.broker))
        if led:
            owners.append((p.index, led))
        else:
            failed[p.index] = f"{p.broker} (node {p.node_id}) leads no partition of {topic}"
    if not owners:
        return None, failed
    start = start_offsets(bootstrap, topic, sorted(p for _, led in owners for p in led), run, timeout, client)
    return Plan(bootstrap, topic, run, records, payload_bytes, tuple(owners), start, client), failed


def prepare(
    brokers: list[str],
    topic: str,
    records: int,
    payload_bytes: int,
    partitions: int,
    timeout: float,
    client: Client | None = None,
) -> tuple[list[Probe], list[Plan], dict[int, str]]:
    """Probe every broker in parallel (a dead one costs one timeout), then plan each cluster they form."""
    client = client or Client()
    with ThreadPoolExecutor(max_workers=len(brokers)) as pool:
        probes = list(pool.map(lambda ib: probe(ib[0], ib[1], timeout, client), enumerate(brokers)))
    errors = {p.index: p.error for p in probes if p.error}
    clusters: dict[tuple[str, ...], list[Probe]] = {}
    for p in probes:
        if not p.error:
            clusters.setdefault(p.cluster, []).append(p)
    run = uuid.uuid4().hex[:RUN_CHARS]
    plans = []
    for members in clusters.values():
        try:
            plan, failed = plan_cluster(members, topic, records, payload_bytes, run, partitions, timeout, client)
        except (KafkaException, TimeoutError) as exc:
            detail = exc.args[0].str() if isinstance(exc, KafkaException) else str(exc)
            plan, failed = None, {p.index: f"{p.broker}: {detail}" for p in members}
        errors.update(failed)
        plans += [plan] if plan else []
    return probes, plans, errors


def partition_of(seq: Column, plan: Plan) -> Column:
    """The partition a sequence number goes to: broker ``seq % n``, then round robin over its partitions."""
    brokers = len(plan.owners)
    table = F.array(*[F.array(*[F.lit(p) for p in parts]) for _, parts in plan.owners])
    mine = F.try_element_at(table, (seq % brokers + 1).cast("int"))
    turn = ((seq - seq % brokers) / brokers).cast("long")
    return F.try_element_at(mine, (turn % F.size(mine) + 1).cast("int"))


def value_tail(plan: Plan) -> str:
    """What follows ``<run>:<seq>`` in every record: ``:`` and x up to the payload size."""
    return ":" + "x" * (plan.payload_bytes - len(plan.run) - SEQ_DIGITS - 2)


def value_bytes(plan: Plan, seq: int, tail: str) -> bytes:
    """The record a sequence number stands for, built in Python (plain producers), as ``value_of`` builds it in the JVM."""
    return f"{plan.run}:{seq:0{SEQ_DIGITS}d}{tail}".encode()


def value_of(seq: Column, plan: Plan) -> Column:
    """The record a sequence number stands for: ``<run>:<seq>:`` padded with x to the payload size."""
    return F.concat(F.lit(plan.run + ":"), F.lpad(seq.cast("string"), SEQ_DIGITS, "0"), F.lit(value_tail(plan))).cast("binary")


def now_ms() -> Column:
    """The wall clock when a row is evaluated (``current_timestamp`` is fixed per query), for latency."""
    return F.expr("cast(reflect('java.lang.System', 'currentTimeMillis') as bigint)")


def _generated(spark: SparkSession, plan: Plan, tasks: int) -> DataFrame:
    seq = F.col("id")
    return spark.range(0, plan.total, 1, tasks).select(
        partition_of(seq, plan).alias("partition"), value_of(seq, plan).alias("value")
    )


def write(spark: SparkSession, plan: Plan, tuning: Tuning) -> None:
    """Every record through the DataFrame Kafka sink; the job fails if any send is not acknowledged."""
    tasks = tuning.write_tasks or spark.sparkContext.defaultParallelism
    (
        _generated(spark, plan, tasks)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", plan.bootstrap)
        .option("topic", plan.topic)
        .option("kafka.acks", "all")
        .option("kafka.enable.idempotence", "true")
        .option("kafka.linger.ms", str(tuning.linger_ms))
        .option("kafka.batch.size", str(tuning.batch_size))
        .option("kafka.compression.type", tuning.compression)
        .option("kafka.delivery.timeout.ms", str(int(tuning.timeout * 1000)))
        .options(**plan.client.connector_options())
        .save()
    )


SPLIT = 1000  # a sequence number is split into seq // SPLIT and its last three digits (see crc_sum)


def crc_sum(plan: Plan, seqs: range) -> int:
    """The sum of crc32 over ``value_bytes`` of every sequence number in ``seqs``, without building each record.

    All records have the same length, so crc32 is affine in their bytes: for the base record b (sequence
    0) and records x, y differing from b in disjoint digits, crc(x ^ y ^ b) = crc(x) ^ crc(y) ^ crc(b).
    With seq = h * SPLIT + lo, crc(seq) = A(h) ^ B(lo), A(h) = crc(h * SPLIT) ^ crc(0), B(lo) = crc(lo).
    A full block of SPLIT sequence numbers (step s) holds the lo of one residue r mod s, so its sum is
    sum(B) plus, for every bit set in A(h), 2**bit * (n - 2 * count of B with that bit): 32 steps a block."""
    tail = value_tail(plan)

    def crc(seq: int) -> int:
        return zlib.crc32(value_bytes(plan, seq, tail))

    base, blocks, total = crc(0), {}, 0
    for h in range(seqs.start // SPLIT, (seqs[-1] // SPLIT + 1) if seqs else 0):
        begin, end = h * SPLIT, (h + 1) * SPLIT
        if begin < seqs.start or end > seqs.stop:  # a partial block at either end: record by record
            first = max(seqs.start, begin)
            total += sum(crc(s) for s in range(first + (seqs.start - first) % seqs.step, min(end, seqs.stop), seqs.step))
            continue
        residue = (seqs.start - begin) % seqs.step
        if residue not in blocks:
            lows = [crc(lo) for lo in range(residue, SPLIT, seqs.step)]
            weights = [(len(lows) - 2 * sum(c >> bit & 1 for c in lows)) << bit for bit in range(32)]
            blocks[residue] = (sum(lows), weights)
        low_sum, weights = blocks[residue]
        high = crc(begin) ^ base
        total += low_sum + sum(w for bit, w in enumerate(weights) if high >> bit & 1)
    return total


def expected_checksums(plan: Plan) -> dict[int, int]:
    """partition -> sum of crc32 of the values written there, from the generator's definition (not from Spark)."""
    return {p: crc_sum(plan, plan.sequences(p)) for p in plan.partitions}


def _source(spark: SparkSession, plan: Plan, end: dict[int, int], tuning: Tuning) -> DataFrame:
    """Exactly the offsets [start, end) of every partition: assign, never a consumer group or "latest"."""
    parts = plan.partitions
    reader = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", plan.bootstrap)
        .option("assign", json.dumps({plan.topic: parts}))
        .option("startingOffsets", json.dumps({plan.topic: {str(p): plan.start[p] for p in parts}}))
        .option("endingOffsets", json.dumps({plan.topic: {str(p): end[p] for p in parts}}))
        .option("failOnDataLoss", "false")  # a record not there is counted as missing by the checks
        .option("kafkaConsumer.pollTimeoutMs", str(POLL_TIMEOUT_MS))
        .option("kafka.max.partition.fetch.bytes", str(tuning.fetch_bytes))
        .option("kafka.fetch.max.bytes", str(4 * tuning.fetch_bytes))
        .option("kafka.max.poll.records", str(tuning.poll_records))  # see Tuning.poll_records and docs/spark.md
        .option("kafka.check.crcs", "false")  # every value's crc32 is checked end to end below (librdkafka's default too)
        .options(**plan.client.connector_options())
    )
    if tuning.min_partitions:
        reader = reader.option("minPartitions", str(tuning.min_partitions))
    return reader.load()


def _checked(spark: SparkSession, plan: Plan, end: dict[int, int], tuning: Tuning) -> DataFrame:
    """Every record read back as (partition, sequence if valid, crc32, timestamp, latency if sampled).

    A record is valid when it is this run's and sits in the partition its sequence maps to; its
    bytes are judged by the crc32 sum against the generator's (a per-record comparison doubled the cost).
    The header is compared and parsed as bytes: a cast of the whole value to text costs a pass over it."""
    value, header = F.col("value"), len(plan.run) + 1
    seq = F.substring(value, header + 1, SEQ_DIGITS).cast("string").try_cast("long")
    ours = (F.substring(value, 1, header) == F.lit((plan.run + ":").encode())) & seq.between(0, plan.total - 1)
    valid = ours & (partition_of(seq, plan) == F.col("partition"))
    return _source(spark, plan, end, tuning).select(
        "partition",
        F.when(valid, seq).alias("seq"),
        F.crc32(value).alias("crc"),
        F.unix_millis("timestamp").alias("ts"),
        F.when(valid & (F.col("offset") % LATENCY_SAMPLE == 0), now_ms() - F.unix_millis("timestamp")).alias("lat"),
    )


def read_checks(spark: SparkSession, plan: Plan, end: dict[int, int], tuning: Tuning) -> list[dict[str, Any]]:
    """Per partition, aggregated in the JVM in one pass: records, valid ones, the sum of their sequence
    numbers, crc32 sum, timestamp span, and the latency sample as a histogram (one group per partition
    and millisecond). Only sums, counts, minima and maxima over the records: Spark compiles that
    aggregation into the read's own loop, where bitmaps or lists would make it interpret every row."""
    groups = (
        _checked(spark, plan, end, tuning)
        .groupBy("partition", "lat")
        .agg(
            F.count("*").alias("count"),
            F.count("seq").alias("valid"),
            F.sum("seq").alias("seq_sum"),
            F.sum("crc").alias("crc"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
        )
    )
    per_partition = groups.groupBy("partition").agg(
        *[F.sum(c).alias(c) for c in ("count", "valid", "seq_sum", "crc")],
        F.min("first_ts").alias("first_ts"),
        F.max("last_ts").alias("last_ts"),
        F.collect_list(F.when(F.col("lat").isNotNull(), F.array("lat", "count"))).alias("histogram"),
    )
    rows = [row.asDict() for row in per_partition.collect()]
    for row in rows:
        row["lat"] = [lat for lat, times in row.pop("histogram") for _ in range(times)]
    return rows


def distinct_sequences(spark: SparkSession, plan: Plan, end: dict[int, int], tuning: Tuning) -> dict[int, int]:
    """Exactly how many different sequence numbers every partition holds (bitmaps): a second read, made
    only when the first one's counts or sums differ from what was written, to say how many records are
    missing and how many duplicated."""
    position = F.col("seq") + 1  # bitmap positions start at 1
    buckets = (
        _checked(spark, plan, end, tuning)
        .where(F.col("seq").isNotNull())
        .groupBy("partition", F.bitmap_bucket_number(position).alias("bucket"))
        .agg(F.bitmap_count(F.bitmap_construct_agg(F.bitmap_bit_position(position))).alias("distinct"))
    )
    per_partition = buckets.groupBy("partition").agg(F.sum("distinct").alias("distinct"))
    return {row["partition"]: row["distinct"] for row in per_partition.collect()}


def as_written(plan: Plan, partition: int, row: dict[str, Any] | None, crc: int | None) -> bool:
    """Whether a partition's first-pass sums match the generator's: as many records as were sent, all
    valid, the same sum of sequence numbers and the same crc32 sum. A record lost and another duplicated
    would have to leave both sums unchanged to pass, which crc32's spread makes a 1-in-2**32 chance."""
    sent = plan.sequences(partition)
    if not row:
        return not sent
    seq_sum = len(sent) * sent.start + sent.step * len(sent) * (len(sent) - 1) // 2
    counts_match = row["count"] == row["valid"] == len(sent)
    return counts_match and row["seq_sum"] == seq_sum and row["crc"] == crc


@dataclass
class ClusterRun:
    """What one cluster's write and read gave: per-partition aggregates, or the error that stopped it."""

    plan: Plan
    rows: dict[int, dict[str, Any]] = field(default_factory=dict)
    listed_end: dict[int, int] = field(default_factory=dict)
    end: dict[int, int] = field(default_factory=dict)
    expected_crc: dict[int, int] = field(default_factory=dict)
    write_s: float = 0.0
    read_s: float = 0.0
    check_s: float = 0.0
    error: str = ""


def run_cluster(spark: SparkSession, plan: Plan, tuning: Tuning) -> ClusterRun:
    """Write, take the end offsets, read exactly the range back, recompute the written checksum; count
    distinct sequences exactly only where the sums say something is wrong."""
    result = ClusterRun(plan)
    try:
        began = time.monotonic()
        write(spark, plan, tuning)
        result.write_s = time.monotonic() - began
        result.listed_end = latest_offsets(plan, plan.partitions, tuning.timeout)
        result.end = {p: max(o, plan.start[p] + plan.expected(p)) for p, o in result.listed_end.items()}
        began = time.monotonic()
        result.rows = {row["partition"]: row for row in read_checks(spark, plan, result.end, tuning)}
        result.read_s = time.monotonic() - began
        began = time.monotonic()
        result.expected_crc = expected_checksums(plan)
        result.check_s = time.monotonic() - began
        began = time.monotonic()
        if all(as_written(plan, p, result.rows.get(p), result.expected_crc[p]) for p in plan.partitions):
            distinct = {p: row["valid"] for p, row in result.rows.items()}
        else:
            distinct = distinct_sequences(spark, plan, result.end, tuning)
        for partition, row in result.rows.items():
            row["distinct"] = distinct.get(partition, 0)
        result.read_s += time.monotonic() - began
    except Exception as exc:  # a Kafka or Spark failure of this cluster: reported per broker, not a crash
        result.error = f"{plan.bootstrap}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    return result


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    return round(float(values[min(len(values) - 1, int(q * len(values)))]), 3)


def per_second(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if count and seconds > 0 else 0.0


def partition_entry(run: ClusterRun, partition: int) -> dict[str, Any]:
    """One partition's verdict; ``_lat`` (latency samples) is dropped before the report is written."""
    row = run.rows.get(partition) or {}
    expected = run.plan.expected(partition)
    count, valid, distinct = row.get("count") or 0, row.get("valid") or 0, row.get("distinct") or 0
    span_s = ((row.get("last_ts") or 0) - (row.get("first_ts") or 0)) / 1000
    entry = {
        "partition": partition,
        "expected": expected,
        "listed_appended": run.listed_end.get(partition, 0) - run.plan.start.get(partition, 0) if run.end else 0,
        "consumed": count,
        "missing": expected - distinct,
        "duplicates": valid - distinct,
        "unexpected": count - valid,
        "checksum_ok": bool(run.expected_crc) and row.get("crc") == run.expected_crc.get(partition),
        "produce_records_per_s": per_second(valid, span_s),
        "_lat": list(row.get("lat") or []),
        "_span": (row.get("first_ts"), row.get("last_ts")),
    }
    entry["latency_ms"] = {"p50": percentile(entry["_lat"], 0.5), "p99": percentile(entry["_lat"], 0.99)}
    entry["ok"] = _clean(entry)
    return entry


def _clean(entry: dict[str, Any]) -> bool:
    counts = ("missing", "duplicates", "unexpected")
    return entry["checksum_ok"] and not any(entry[c] for c in counts) and not entry.get("error")


def broker_entry(probe_: Probe, records: int, run: ClusterRun | None, error: str) -> dict[str, Any]:
    """One given broker's verdict over the partitions it leads (all of ``records`` missing if it got none)."""
    parts = dict(run.plan.owners if run else ()).get(probe_.index, ())
    entries = [partition_entry(run, p) for p in parts] if run else []
    latencies = [x for e in entries for x in e.pop("_lat")]
    spans = [e.pop("_span") for e in entries]
    first = min((s[0] for s in spans if s[0] is not None), default=0)
    last = max((s[1] for s in spans if s[1] is not None), default=0)
    consumed = sum(e["consumed"] for e in entries)
    valid = consumed - sum(e["unexpected"] for e in entries)
    error = error or (run.error if run else "")
    entry = {
        "broker": probe_.broker,
        "node_id": probe_.node_id,
        "reachable": not probe_.error,
        "partitions": entries,
        "produced": records if run and run.end and not run.error else 0,
        "consumed": consumed,
        "missing": sum(e["missing"] for e in entries) if entries else records,
        "duplicates": sum(e["duplicates"] for e in entries),
        "unexpected": sum(e["unexpected"] for e in entries),
        "checksum_ok": bool(entries) and all(e["checksum_ok"] for e in entries),
        "latency_ms": {"p50": percentile(latencies, 0.5), "p99": percentile(latencies, 0.99)},
        "produce_records_per_s": per_second(valid, (last - first) / 1000),
        "consume_records_per_s": per_second(consumed, run.read_s if run else 0.0),
        "error": error,
    }
    entry["ok"] = entry["reachable"] and bool(entries) and _clean(entry)
    return entry


def summarize(probes: list[Probe], runs: list[ClusterRun], errors: dict[int, str], records: int) -> list[dict]:
    """One report entry per given broker, in the order given."""
    by_index = {index: run for run in runs for index, _ in run.plan.owners}
    return [broker_entry(p, records, by_index.get(p.index), errors.get(p.index, "")) for p in probes]


def spark_session(master: str | None) -> SparkSession:
    """A session with what shortens start-up: no UI, no console progress, a tiny shuffle (the checks aggregate)."""
    builder = (
        SparkSession.builder.appName("swarmkit-verify")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.adaptive.enabled", "false")
    )
    if master:
        builder = builder.master(master)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


def require_connector(session: SparkSession) -> None:
    """Fail with the fix, not with Spark's "Failed to find data source: kafka"."""
    jars = session.sparkContext.getConf().get("spark.jars", "")
    if CONNECTOR not in jars:
        raise RuntimeError(
            f"Spark's Kafka connector ({CONNECTOR}) is not among spark.jars: pass it with spark-submit --jars "
            "(bash scripts/setup.sh fetches the jars into /var/cache/swarmkit/spark-kafka-VERSION/jars)"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", "--brokers", dest="brokers", required=True, help="every broker, HOST:PORT,...")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--records", type=int, default=DEFAULT_RECORDS, help="records per broker")
    parser.add_argument("--report", required=True, type=Path, help="where to write the JSON report")
    parser.add_argument("--master", default=None, help="default: spark-submit's (local[*])")
    parser.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS, help="if the topic must be created")
    parser.add_argument("--payload-bytes", type=int, default=DEFAULT_PAYLOAD)
    parser.add_argument("--probe-timeout", type=float, default=PROBE_TIMEOUT, help="seconds per broker probe")
    add_tuning_arguments(parser)
    parser.add_argument("--client-config", type=Path, help="librdkafka settings for a secure cluster (the driver's checks)")
    parser.add_argument("--client-properties", type=Path, help="Java client settings for a secure cluster (the connector)")
    streaming = parser.add_argument_group("streaming mode (stream_job.py)")
    streaming.add_argument("--streaming", action="store_true", help="a Structured Streaming query instead of a batch")
    streaming.add_argument("--seconds", type=float, default=20.0, help="how long the producer writes")
    streaming.add_argument("--rate", type=int, default=5000, help="records/s the producer writes")
    streaming.add_argument("--checkpoint", type=Path, help="the query's checkpoint and sink (default: beside --report)")
    streaming.add_argument("--restart-after", type=float, default=0.0, help="stop the query after S s, start it again")
    args = parser.parse_args(argv)
    args.checkpoint = args.checkpoint or args.report.parent / f"{args.report.stem}-checkpoint"
    if (args.client_config is None) != (args.client_properties is None):
        parser.error("a secure cluster needs both --client-config (librdkafka) and --client-properties (Java)")
    args.client = Client.from_files(args.client_config, args.client_properties)
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    if not args.brokers or args.records < 1 or args.partitions < 1:
        parser.error("need at least one broker, --records >= 1 and --partitions >= 1")
    if args.streaming and (args.seconds <= 0 or args.rate < 1 or not 0 <= args.restart_after < args.seconds):
        parser.error("streaming needs --seconds > 0, --rate >= 1 and --restart-after within --seconds")
    if args.payload_bytes < RUN_CHARS + SEQ_DIGITS + 2:
        parser.error(f"--payload-bytes must hold the record header ({RUN_CHARS + SEQ_DIGITS + 2} bytes)")
    args.tuning = Tuning.from_args(args)
    return args


def started(
    args: argparse.Namespace, report: dict[str, Any], records: int
) -> tuple[SparkSession, list[Probe], list[Plan], dict[int, str]]:
    """The session and every cluster's plan: metadata is gathered while Spark starts (start-up reported apart)."""
    with ThreadPoolExecutor(max_workers=1) as background:
        preparing = background.submit(
            prepare, args.brokers, args.topic, records, args.payload_bytes, args.partitions, args.probe_timeout, args.client
        )
        began = time.monotonic()
        session = spark_session(args.master)
        report["spark_startup_s"] = round(time.monotonic() - began, 3)
        report["master"] = session.sparkContext.master
        probes, plans, errors = preparing.result()
    require_connector(session)
    return session, probes, plans, errors


def run(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Fill ``report``: each cluster in turn."""
    session, probes, plans, errors = started(args, report, args.records)
    began = time.monotonic()
    runs = [run_cluster(session, plan, args.tuning) for plan in plans]
    report["traffic_s"] = round(time.monotonic() - began, 3)
    report["clusters"] = [
        {
            "bootstrap": r.plan.bootstrap,
            "write_s": round(r.write_s, 3),
            "read_s": round(r.read_s, 3),
            "check_s": round(r.check_s, 3),
            "error": r.error,
        }
        for r in runs
    ]
    report["brokers"] = summarize(probes, runs, errors, args.records)
    consumed = sum(b["consumed"] for b in report["brokers"])
    report["records_per_s"] = per_second(consumed, report["traffic_s"])
    report["ok"] = all(b["ok"] for b in report["brokers"])
    session.stop()


def main(argv: list[str] | None = None) -> int:
    began = time.monotonic()
    args = parse_args(argv)
    report: dict[str, Any] = {
        "ok": False,
        "records_per_broker": args.records,
        "topic": args.topic,
        "brokers": [],
        "tuning": asdict(args.tuning),
    }
    try:
        if args.streaming:
            import stream_job  # the streaming mode shares this file's probing, planning and session

            stream_job.run(args, report)
        else:
            run(args, report)
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
