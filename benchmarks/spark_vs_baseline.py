"""Benchmark (not a test): the Spark verify job against plain confluent-kafka processes doing the same work.

    .venv/bin/python benchmarks/spark_vs_baseline.py [--brokers node1:9094,node2:9094,node3:9094] --records 1000000 [--json]

Without --brokers it builds its own 3-host sandbox (``sb2``, 10.236.0.0/24, Apache Kafka, topic
``bench:6:3``) and always removes it; with --brokers it runs against that running cluster.

Same brokers, same run, same work on both sides: K records per leader broker of 100 bytes, spread
over the partitions each broker leads with the job's own mapping, written with ``acks=all`` and
idempotence, then exactly the written offset range read back and checked (count, distinct
sequences, crc32 sum, latency sample). The baseline is one plain process per core, each owning a
share of the partitions; Spark is the job under spark-submit (``local[*]`` unless --master), its
start-up reported apart. Before the rounds one uncounted pass of each side (``warm_up``) warms the
brokers and, on a machine's first Spark run, writes the driver JVM's archive (classes, and from
Java 25 method profiles). Exit 1 if either side loses, duplicates or corrupts a record.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from rich.console import Console
from rich.table import Table

from swarmkit.assets import SPARK_DIR
from swarmkit.hosts.inventory import load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.traffic.spark import ClassArchive, DriverJava, SparkJobError, SparkReport, run_verify_job

sys.path.insert(0, str(SPARK_DIR))
import verify_job as job  # noqa: E402  (the job file is a script, not a package module)

SANDBOX = "sb2"
SUBNET = "10.236.0.0/24"


@dataclass(frozen=True)
class Share:
    """One baseline process's work: some partitions of one cluster's plan."""

    plan: job.Plan
    partitions: tuple[int, ...]
    tuning: job.Tuning


def _producer(share: Share) -> Producer:
    t = share.tuning
    return Producer(
        {
            "bootstrap.servers": share.plan.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": t.linger_ms,
            "batch.size": t.batch_size,
            "compression.type": t.compression,
            "queue.buffering.max.messages": 1_000_000,
            "message.timeout.ms": int(t.timeout * 1000),
            "log_level": 3,
        }
    )


def produce(share: Share) -> dict[int, int]:
    """Send the share's records; partition -> crc32 sum of what was acknowledged."""
    plan, producer = share.plan, _producer(share)
    tail = job.value_tail(plan)
    acked: dict[int, int] = dict.fromkeys(share.partitions, 0)

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[msg.partition()] += zlib.crc32(msg.value())

    for partition in share.partitions:
        for seq in plan.sequences(partition):
            value = job.value_bytes(plan, seq, tail)
            while True:
                try:
                    producer.produce(plan.topic, value, partition=partition, on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.005)
    producer.flush(share.tuning.timeout)
    return acked


def consume(share: Share, end: dict[int, int]) -> dict[int, dict[str, Any]]:
    """Read exactly [start, end) of the share's partitions; the job's per-partition aggregates."""
    plan = share.plan
    consumer = Consumer(
        {
            "bootstrap.servers": plan.bootstrap,
            "group.id": f"bench-{plan.run}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 4 * share.tuning.fetch_bytes,
            "max.partition.fetch.bytes": share.tuning.fetch_bytes,
            "log_level": 3,
        }
    )
    consumer.assign([TopicPartition(plan.topic, p, plan.start[p]) for p in share.partitions])
    rows = {p: {"count": 0, "valid": 0, "seen": set(), "crc": 0, "lat": [], "ts": []} for p in share.partitions}
    pending, deadline, prefix = set(share.partitions), time.monotonic() + share.tuning.timeout, plan.run.encode()
    while pending and time.monotonic() < deadline:
        for msg in consumer.consume(10_000, timeout=0.5):
            partition, value = msg.partition(), msg.value()
            if msg.error() or partition not in pending or msg.offset() >= end[partition]:
                continue
            row, ts = rows[partition], msg.timestamp()[1]
            row["count"] += 1
            row["crc"] += zlib.crc32(value)
            row["ts"].append(ts)
            seq = int(value[len(prefix) + 1 : len(prefix) + 1 + job.SEQ_DIGITS]) if value.startswith(prefix) else -1
            if seq >= 0 and seq in plan.sequences(partition):
                row["valid"] += 1
                row["seen"].add(seq)
                if msg.offset() % job.LATENCY_SAMPLE == 0:
                    row["lat"].append(time.time() * 1000 - ts)
            if msg.offset() + 1 >= end[partition]:
                pending.discard(partition)
    consumer.close()
    return {p: _row(r) for p, r in rows.items()}


def _row(r: dict[str, Any]) -> dict[str, Any]:
    return {
        "count": r["count"],
        "valid": r["valid"],
        "distinct": len(r["seen"]),
        "crc": r["crc"],
        "lat": r["lat"],
        "first_ts": min(r["ts"], default=None),
        "last_ts": max(r["ts"], default=None),
    }


@dataclass
class ShareResult:
    acked: dict[int, int]
    listed_end: dict[int, int]
    end: dict[int, int]
    rows: dict[int, dict[str, Any]]
    write_s: float
    read_s: float


def work(share: Share) -> ShareResult:
    """One process: produce its partitions, take the end offsets, read them back (like the job)."""
    plan, began = share.plan, time.monotonic()
    acked = produce(share)
    produced = time.monotonic()
    listed = job.latest_offsets(plan, list(share.partitions), share.tuning.timeout)
    end = {p: max(o, plan.start[p] + plan.expected(p)) for p, o in listed.items()}
    rows = consume(share, end)
    return ShareResult(acked, listed, end, rows, produced - began, time.monotonic() - produced)


def baseline(args: argparse.Namespace, tuning: job.Tuning) -> tuple[list[dict[str, Any]], float, list[job.ClusterRun]]:
    """The job's work without Spark: (per-broker entries, seconds of traffic, per-cluster phases)."""
    probes, plans, errors = job.prepare(
        args.brokers, args.topic, args.records, job.DEFAULT_PAYLOAD, args.partitions, job.PROBE_TIMEOUT
    )
    workers = os.cpu_count() or 1
    shares = [
        Share(plan, tuple(plan.partitions[i::workers]), tuning)
        for plan in plans
        for i in range(min(workers, len(plan.partitions)))
    ]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(abs, range(workers)))  # the processes exist before the clock runs
        began = time.monotonic()
        results = list(pool.map(work, shares))
        elapsed = time.monotonic() - began
    runs = []
    for cluster_plan in plans:
        run = job.ClusterRun(cluster_plan)
        for share, result in zip(shares, results):
            if share.plan is cluster_plan:
                run.rows.update(result.rows)
                run.expected_crc.update(result.acked)
                run.listed_end.update(result.listed_end)
                run.end.update(result.end)
                run.write_s, run.read_s = max(run.write_s, result.write_s), max(run.read_s, result.read_s)
        runs.append(run)
    return job.summarize(probes, runs, errors, args.records), elapsed, runs


def spark(args: argparse.Namespace, tuning: job.Tuning) -> SparkReport:
    """The job itself, through spark-submit, with the same tuning."""
    extra = ["--partitions", str(args.partitions), *tuning.to_args()]
    try:
        return run_verify_job(args.brokers, args.topic, args.records, master=args.master, timeout=1800, extra_args=extra)
    except SparkJobError as exc:
        if exc.report is None:
            raise
        return exc.report


def summary(
    report: SparkReport, base: list[dict[str, Any]], base_s: float, base_runs: list[job.ClusterRun], tuning: job.Tuning
) -> dict[str, Any]:
    """The one JSON object: rates end to end (start-up apart), ratio, and both sides' checks."""
    spark_back = sum(b.consumed for b in report.brokers)
    base_back = sum(b["consumed"] for b in base)
    spark_rate = spark_back / report.traffic_s if report.traffic_s else 0.0
    base_rate = base_back / base_s if base_s else 0.0
    return {
        "ok": report.ok and all(b["ok"] for b in base),
        "records_per_broker": report.records_per_broker,
        "brokers": [b.broker for b in report.brokers],
        "master": report.master,
        "spark_records_per_s": round(spark_rate, 1),
        "baseline_records_per_s": round(base_rate, 1),
        "ratio": round(spark_rate / base_rate, 3) if base_rate else 0.0,
        "spark_startup_s": report.spark_startup_s,
        "spark_traffic_s": report.traffic_s,
        "spark_write_s": report.write_s,
        "spark_read_s": report.read_s,
        "spark_check_s": report.check_s,
        "spark_wall_s": report.wall_s,
        "baseline_traffic_s": round(base_s, 3),
        "baseline_write_s": round(sum(r.write_s for r in base_runs), 3),  # the slowest process's, per cluster
        "baseline_read_s": round(sum(r.read_s for r in base_runs), 3),
        "baseline_processes": os.cpu_count() or 1,
        "tuning": asdict(tuning),
        "spark_problems": report.failures,
        "baseline_problems": [
            f"{b['broker']}: {b['error'] or 'records missing, duplicated or corrupted'}" for b in base if not b["ok"]
        ],
        "latency_ms": {
            b.broker: {
                "spark": [b.latency_p50_ms, b.latency_p99_ms],
                "baseline": [o["latency_ms"]["p50"], o["latency_ms"]["p99"]],
            }
            for b, o in zip(report.brokers, base)
        },
    }


def render(console: Console, result: dict[str, Any]) -> None:
    table = Table(title=f"{len(result['brokers'])} brokers, {result['records_per_broker']:,} records each, end to end")
    for column in ("run", "traffic s", "records/s", "vs baseline"):
        table.add_column(column, justify="left" if column == "run" else "right")
    table.add_row(
        f"Spark {result['master']}",
        f"{result['spark_traffic_s']:.2f}",
        f"{result['spark_records_per_s']:,.0f}",
        f"{result['ratio']:.2f}x",
    )
    table.add_row(
        f"plain confluent-kafka, {result['baseline_processes']} procs",
        f"{result['baseline_traffic_s']:.2f}",
        f"{result['baseline_records_per_s']:,.0f}",
        "1.00x",
    )
    console.print(table)
    if len(result["rounds"]) > 1:
        ratios = ", ".join(f"{r['ratio']:.2f}x ({r['first']} first, load {r['load_start']:.1f})" for r in result["rounds"])
        console.print(f"rounds: {ratios} (median shown above; best {result['best_ratio']:.2f}x)")
        console.print(
            f"medians over rounds: Spark {result['median_spark_records_per_s']:,.0f} records/s, "
            f"baseline {result['median_baseline_records_per_s']:,.0f}, start-up {result['median_spark_startup_s']:.2f} s"
        )
    console.print(
        f"Spark: start-up {result['spark_startup_s']:.2f} s apart (spark-submit wall {result['spark_wall_s']:.2f} s); "
        f"traffic = write {result['spark_write_s']:.2f} s + read and checks {result['spark_read_s']:.2f} s "
        f"+ checksum {result['spark_check_s']:.2f} s; tuning {result['tuning']}"
    )
    console.print(f"baseline: write {result['baseline_write_s']:.2f} s, read and checks {result['baseline_read_s']:.2f} s")
    warm = result["warm_up"]
    archive = ", writing the driver's archive" if warm["wrote_archive"] else ""
    console.print(
        f"before the rounds, not counted: a plain-client pass {warm['baseline_s']:.1f} s, "
        f"a Spark run {warm['spark_wall_s']:.1f} s{archive}"
    )
    latency = Table(title="produce -> read-back latency p50 / p99 (ms), per broker")
    for column in ("broker", "Spark", "baseline"):
        latency.add_column(column)
    for broker, sides in result["latency_ms"].items():
        latency.add_row(broker, " / ".join(map(str, sides["spark"])), " / ".join(map(str, sides["baseline"])))
    console.print(latency)
    for problem in result["spark_problems"] + result["baseline_problems"]:
        console.print(f"[red]{problem}[/]")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", default="", help="advertised HOST:PORT of every broker (default: a sandbox of its own)")
    parser.add_argument("--records", type=int, default=1_000_000, help="records per broker")
    parser.add_argument("--topic", default="swarmkit-bench", help="used by both sides (their offset ranges differ)")
    parser.add_argument("--partitions", type=int, default=6, help="if the topic must be created")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    job.add_tuning_arguments(parser)  # both sides get the same tuning
    parser.add_argument("--rounds", type=int, default=1, help="A/B rounds, who goes first alternating; median ratio shown")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    args = parser.parse_args()
    args.brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    return args


def rounds(args: argparse.Namespace, tuning: job.Tuning, err: Console) -> dict[str, Any]:
    """``--rounds`` A/B rounds, the side that goes first alternating (the machine is shared: one round
    proves little, and whoever runs second meets a warmer or busier broker); the round with the median
    ratio, the medians of both sides' rates, every round's rates and load average, the best ratio."""
    results = []
    warmup = warm_up(args, tuning, err)
    for number in range(1, args.rounds + 1):
        load = os.getloadavg()[0]
        spark_first = number % 2 == 0
        if spark_first:
            with err.status(f"round {number}: Spark job first"):
                report = spark(args, tuning)
        with err.status(f"round {number}: baseline, plain confluent-kafka processes"):
            base, base_s, base_runs = baseline(args, tuning)
        if not spark_first:
            with err.status(f"round {number}: Spark job"):
                report = spark(args, tuning)
        results.append(summary(report, base, base_s, base_runs, tuning))
        results[-1].update(first="spark" if spark_first else "baseline", load_start=load, load_end=os.getloadavg()[0])
        err.print(f"round {number}: ratio {results[-1]['ratio']:.2f} ({results[-1]['first']} first, load {load:.1f})")
    ranked = sorted(results, key=lambda r: r["ratio"])
    result = dict(ranked[(len(ranked) - 1) // 2])
    result["ok"] = all(r["ok"] for r in results)
    result["best_ratio"] = ranked[-1]["ratio"]
    for key in ("spark_records_per_s", "baseline_records_per_s", "spark_startup_s"):
        result[f"median_{key}"] = statistics.median(r[key] for r in results)
    keys = ("first", "spark_records_per_s", "baseline_records_per_s", "ratio", "spark_startup_s", "load_start", "load_end")
    result["rounds"] = [{key: r[key] for key in keys} for r in results]
    result["warm_up"] = warmup
    return result


def warm_up(args: argparse.Namespace, tuning: job.Tuning, err: Console) -> dict[str, Any]:
    """One uncounted pass of each side before the rounds. Brokers compile their produce, replication
    and fetch paths on the first traffic they see (a fresh sandbox's single round gave Spark
    1.13x-1.52x against cold brokers under the baseline), and the first Spark run on a machine writes
    the driver JVM's archive (class data, from Java 25 method profiles) that every later run reads:
    the rounds measure what every run after these costs."""
    writes_archive = ClassArchive.for_java(DriverJava.for_master(args.master)).staging is not None
    began = time.monotonic()
    with err.status("warm-up, not counted: one plain-client pass"):
        baseline(args, tuning)
    middle = time.monotonic()
    with err.status("warm-up, not counted: one Spark run" + (" (writing the driver's archive)" if writes_archive else "")):
        report = spark(args, tuning)
    return {
        "baseline_s": round(middle - began, 3),
        "spark_wall_s": round(time.monotonic() - middle, 3),
        "wrote_archive": writes_archive,
        "ok": report.ok,
    }


@contextlib.contextmanager
def own_sandbox(args: argparse.Namespace, err: Console) -> Iterator[None]:
    """Without --brokers: a fresh 3-host Apache Kafka sandbox for the run, removed whatever happens."""
    if args.brokers:
        yield
        return
    sandbox.down(SANDBOX)
    try:
        with err.status(f"sandbox {SANDBOX}: 3 hosts, Apache Kafka, topic {args.topic}:6:3"):
            made = sandbox.up(3, SANDBOX, SANDBOX, SUBNET, str(Path(tempfile.mkdtemp()) / "sb2.yaml"), "apache", 3)
            result = up(
                plan(load_inventory(made.inventory_path), DeployOptions(topics=f"{args.topic}:{args.partitions}:3")),
                Session.of(load_inventory(made.inventory_path)),
            )
        if not result.ok:
            raise SystemExit(f"the sandbox's cluster did not come up: {result.deploy.problems}")
        args.brokers = [f"{SANDBOX}{n}:9094" for n in (1, 2, 3)]
        yield
    finally:
        sandbox.down(SANDBOX)


def main() -> int:
    args = parse_args()
    tuning = job.Tuning.from_args(args)
    err = Console(stderr=True)
    try:
        with own_sandbox(args, err):
            result = rounds(args, tuning, err)
    except SparkJobError as exc:
        err.print(f"[red]{exc}[/]\n{exc.hint}")
        return 1
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        render(Console(), result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
