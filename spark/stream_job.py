"""Streaming mode of the verify job (``verify_job.py --streaming``): a Structured Streaming query on
Spark's Kafka source, checked record by record across a restart from its checkpoint.

    spark-submit --jars ... spark/verify_job.py --streaming --bootstrap node1:9094,... --topic T \\
        --seconds 20 --rate 5000 --checkpoint /tmp/ckpt --report out.json [--restart-after 8]

1. The brokers are probed and the topic planned as in batch mode (``verify_job.prepare``): the
   query starts at this run's first offset in every partition.
2. The query (Kafka source -> ``foreachBatch``) aggregates every micro-batch in the JVM in one
   pass, per bitmap bucket of sequence numbers: records, this run's records, the exact set of
   their sequences (a bitmap), crc32 sum, the largest latency and a latency sample (processing
   time minus the record's timestamp). Only those few rows reach Python; they are written to
   ``CHECKPOINT/sink/batch-<id>.json``, replacing the file of a batch Spark runs again after a
   restart: the sink is idempotent by batch id, which with the checkpoint's offset log is what
   makes the query exactly-once.
3. A producer thread in the driver (confluent-kafka, never inside a Spark task) writes RATE
   records/s for SECONDS with ``acks=all`` and idempotence, key = sequence number, round robin
   over the partitions so every leader gets its share. The producer runs outside the query on
   purpose: it keeps writing while the query is stopped (``--restart-after``: the query is stopped
   after that many seconds, once it has committed records, and a new one started from the same
   checkpoint; the producer then writes until that one has committed records too).
4. Once every record is acknowledged, the query drains what is available and stops; the union of
   all batches must hold every acknowledged sequence exactly once with the producer's crc32 sum.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import verify_job as job
from confluent_kafka import Producer
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

BUCKET_BITS = 32_768  # positions per Spark bitmap (bitmap_bucket_number / bitmap_bit_position)
RESTART_PAUSE_S = 2.0  # how long the producer writes with no query running
START_TIMEOUT_S = 180.0  # a busy 2-core machine takes minutes to start a query
LINGER_MS = 5  # a streaming producer trades batch size for latency


@dataclass
class Produced:
    """What the producer thread sent and got acknowledged."""

    sent: int = 0
    acked: int = 0
    crc: int = 0
    failed: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


def produce(plan: job.Plan, rate: int, stop: threading.Event, timeout: float, out: Produced) -> None:
    """RATE records/s until ``stop`` is set, paced every few milliseconds, then flushed."""
    producer = Producer(
        {
            **plan.client.driver,
            "bootstrap.servers": plan.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": LINGER_MS,
            "compression.type": "lz4",
            "message.timeout.ms": int(timeout * 1000),
            "log_level": 3,
            "error_cb": lambda err: out.errors.append(err.str()),
        }
    )
    tail, parts = job.value_tail(plan), plan.partitions

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            out.acked += 1
            out.crc += zlib.crc32(msg.value())
        else:
            out.failed.append(int(msg.key()))

    began = time.monotonic()
    while not stop.is_set():
        for seq in range(out.sent, int(rate * (time.monotonic() - began)) + 1):
            value = job.value_bytes(plan, seq, tail)
            producer.produce(plan.topic, value, key=str(seq).encode(), partition=parts[seq % len(parts)], on_delivery=delivered)
            out.sent = seq + 1
        producer.poll(0.002)
    producer.flush(timeout)
    out.seconds = time.monotonic() - began


def batch_rows(batch: DataFrame, run: str) -> list[dict[str, Any]]:
    """One micro-batch aggregated in the JVM, one pass: a few rows per 32,768 sequence numbers."""
    seq = F.col("key").cast("string").try_cast("long")
    ours = F.col("value").cast("string").startswith(run + ":") & (seq >= 0)
    latency = job.now_ms() - F.unix_millis("timestamp")
    rows = batch.select(
        F.when(ours, seq + 1).alias("n"),  # bitmap positions start at 1
        F.when(ours, F.crc32("value")).alias("crc"),
        F.when(ours, latency).alias("lat"),
        F.when(ours & (F.col("offset") % job.LATENCY_SAMPLE == 0), latency).alias("sample"),
    )
    buckets = rows.groupBy(F.bitmap_bucket_number("n").alias("bucket")).agg(
        F.count("*").alias("count"),
        F.count("n").alias("valid"),
        F.bitmap_construct_agg(F.bitmap_bit_position("n")).alias("bitmap"),
        F.sum("crc").alias("crc"),
        F.max("lat").alias("max_lat"),
        F.collect_list("sample").alias("lat"),
    )
    return [row.asDict() for row in buckets.collect()]


class Sink:
    """``foreachBatch`` target: each batch's rows as one file named by batch id, written atomically."""

    def __init__(self, folder: Path, run: str) -> None:
        self.folder, self.run, self.query = folder, run, 0
        folder.mkdir(parents=True, exist_ok=True)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        rows = batch_rows(batch, self.run)
        for row in rows:
            row["bitmap"] = base64.b64encode(row["bitmap"] or b"").decode() if row["bucket"] is not None else ""
        path = self.folder / f"batch-{batch_id}.json"
        replays = json.loads(path.read_text())["replays"] + 1 if path.is_file() else 0
        staged = path.with_suffix(".tmp")
        staged.write_text(json.dumps({"batch": batch_id, "query": self.query, "replays": replays, "rows": rows}))
        staged.replace(path)


@dataclass
class Seen:
    """Every batch of the sink merged: the union of sequences and what it takes to judge it."""

    union: int = 0  # bit ``seq`` set when sequence ``seq`` was seen
    count: int = 0
    valid: int = 0
    crc: int = 0
    max_lat: int | None = None
    samples: list[float] = field(default_factory=list)
    batches: int = 0
    replays: int = 0
    per_query: dict[int, int] = field(default_factory=dict)


def merge(folder: Path) -> Seen:
    """The sink's batches read back; the last write of a replayed batch is the one that counts."""
    seen = Seen()
    for path in sorted(folder.glob("batch-*.json")):
        batch = json.loads(path.read_text())
        seen.batches += 1
        seen.replays += batch["replays"]
        for row in batch["rows"]:
            seen.count += row["count"]
            valid = row["valid"]
            seen.per_query[batch["query"]] = seen.per_query.get(batch["query"], 0) + valid
            if row["bucket"] is None:
                continue
            seen.valid += valid
            seen.crc += row["crc"] or 0
            bits = int.from_bytes(base64.b64decode(row["bitmap"]), "little")
            seen.union |= bits << ((row["bucket"] - 1) * BUCKET_BITS)
            seen.max_lat = max(seen.max_lat or 0, row["max_lat"] or 0)
            seen.samples += row["lat"]
    return seen


def start_query(spark: SparkSession, plan: job.Plan, checkpoint: Path, sink: Sink) -> StreamingQuery:
    """The Kafka source from this run's first offsets (ignored when the checkpoint already has offsets),
    returned once its first batch is committed: query start-up stays out of the latencies."""
    parts = plan.partitions
    sink.query += 1
    query = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", plan.bootstrap)
        .option("assign", json.dumps({plan.topic: parts}))
        .option("startingOffsets", json.dumps({plan.topic: {str(p): plan.start[p] for p in parts}}))
        .option("failOnDataLoss", "true")
        .options(**plan.client.connector_options())
        .load()
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(checkpoint / "query"))
        .start()
    )
    wait_for(query, lambda: bool(query.recentProgress), "to commit its first batch")
    return query


def wait_for(query: StreamingQuery, done: Callable[[], bool], what: str) -> None:
    """Poll until ``done``; the query's own failure, or START_TIMEOUT_S, ends the wait with an error."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not done():
        if not query.isActive:
            raise RuntimeError(f"the streaming query stopped while waiting for it {what}: {query.exception()}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the streaming query did not manage {what} within {START_TIMEOUT_S:g}s")
        time.sleep(0.05)


def read_records(query: StreamingQuery) -> Callable[[], bool]:
    return lambda: any(p["numInputRows"] for p in query.recentProgress)


def judge(seen: Seen, produced: Produced) -> dict[str, Any]:
    """Exactly once: every acknowledged sequence seen, none twice, the crc32 sums equal."""
    acked = (1 << produced.sent) - 1
    for seq in produced.failed:
        acked &= ~(1 << seq)
    distinct = seen.union.bit_count()
    latency = {
        "p50": job.percentile(seen.samples, 0.5),
        "p99": job.percentile(seen.samples, 0.99),
        "max": seen.max_lat,
    }
    return {
        "produced": produced.sent,
        "acked": produced.acked,
        "consumed": seen.valid,
        "distinct": distinct,
        "missing": (acked & ~seen.union).bit_count(),
        "duplicates": seen.valid - distinct,
        "unacked_seen": (seen.union & ~acked).bit_count(),
        "unexpected": seen.count - seen.valid,
        "checksum_ok": seen.crc == produced.crc and produced.acked == distinct,
        "latency_ms": latency,
        "batches": seen.batches,
        "replayed_batches": seen.replays,
        "per_query": [seen.per_query[q] for q in sorted(seen.per_query)],
        "producer_errors": produced.errors[-3:],
    }


def stream(spark: SparkSession, plan: job.Plan, args: argparse.Namespace) -> dict[str, Any]:
    """Query, producer, drain; the verdict. With ``--restart-after`` the query is stopped once it has
    committed records and that time has passed, and restarted; the producer writes throughout, and
    at least until the new query has committed records too (on a busy machine that is past SECONDS)."""
    sink = Sink(args.checkpoint / "sink", plan.run)
    query = start_query(spark, plan, args.checkpoint, sink)
    began, produced, stop = time.monotonic(), Produced(), threading.Event()
    producer = threading.Thread(target=produce, args=(plan, args.rate, stop, args.timeout, produced), daemon=True)
    producer.start()
    if args.restart_after:
        wait_for(query, lambda: time.monotonic() - began >= args.restart_after and read_records(query)(), "to read records")
        query.stop()  # mid-stream: the producer keeps writing
        time.sleep(RESTART_PAUSE_S)
        query = start_query(spark, plan, args.checkpoint, sink)
        wait_for(query, read_records(query), "to read records after its restart")
    time.sleep(max(0.0, args.seconds - (time.monotonic() - began)))
    stop.set()
    producer.join()
    query.processAllAvailable()  # everything acknowledged is in the source: through the sink and committed
    window = time.monotonic() - began
    query.stop()
    result = judge(merge(sink.folder), produced)
    result["restarts"] = sink.query - 1
    result["records_per_s"] = job.per_second(result["consumed"], window)
    result["produce_records_per_s"] = job.per_second(produced.acked, produced.seconds)
    result["window_s"] = round(window, 3)
    result["ok"] = not any(result[k] for k in ("missing", "duplicates")) and result["checksum_ok"] and produced.acked > 0
    return result


def run(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Fill ``report`` as batch mode does (start-up apart), with the stream's verdict under ``streaming``."""
    session, _, plans, errors = job.started(args, report, records=1)
    session.conf.set("spark.sql.shuffle.partitions", "1")  # a micro-batch's few aggregate rows need no more
    report["records_per_broker"] = 0
    problems = [errors[i] for i in sorted(errors)]
    if len(plans) != 1:
        problems.append(f"streaming needs the brokers to form one cluster, they form {len(plans)}")
    if problems:
        report["error"] = "; ".join(problems)
        session.stop()
        return
    report["streaming"] = {"seconds": args.seconds, "rate": args.rate, **stream(session, plans[0], args)}
    report["traffic_s"] = report["streaming"]["window_s"]
    report["records_per_s"] = report["streaming"]["records_per_s"]
    report["ok"] = report["streaming"]["ok"]
    session.stop()
    print(summary_line(report["streaming"]), file=sys.stderr)


def summary_line(result: dict[str, Any]) -> str:
    latency = result["latency_ms"]
    return (
        f"streaming: {result['distinct']}/{result['acked']} acknowledged records seen once, {result['missing']} missing, "
        f"{result['duplicates']} duplicated, {result['records_per_s']:g} records/s, latency ms p50 {latency['p50']} "
        f"p99 {latency['p99']} max {latency['max']}, {result['restarts']} restart(s)"
    )
