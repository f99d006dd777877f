"""Benchmark (one run, not a test): the Spark verify job against plain confluent-kafka processes.

    .venv/bin/python benchmarks/spark_vs_baseline.py --brokers b1:9094,b2:9094,b3:9094

Both sides do exactly the same work on the same brokers in the same run: the baseline runs the
job's own per-(broker, partition) task function in a pool of plain processes (one per core, as
`local[*]` has), so the ratio is what Spark's scheduling costs, and Spark's start-up is shown apart.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor

from rich.console import Console
from rich.table import Table

from swarmkit.assets import SPARK_DIR
from swarmkit.sparkjob import SparkJobError, SparkReport, run_verify_job

sys.path.insert(0, str(SPARK_DIR))
import verify_job  # noqa: E402  (the job file is a script, not a package module)


def baseline(brokers: list[str], topic: str, records: int) -> tuple[list[dict], float]:
    """The job's traffic without Spark: (per-broker entries, seconds of traffic)."""
    targets = verify_job.probe_all(brokers, topic, verify_job.DEFAULT_PARTITIONS, verify_job.PROBE_TIMEOUT)
    slices = verify_job.plan_slices(
        [t for t in targets if not t.error], topic, records, verify_job.DEFAULT_PAYLOAD, verify_job.DEFAULT_TIMEOUT
    )
    workers = os.cpu_count() or 1
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(abs, range(workers)))  # start the processes before the clock runs
        started = time.monotonic()
        results = list(pool.map(verify_job.run_slice, slices))
        elapsed = time.monotonic() - started
    return verify_job.summarize(targets, results, records), elapsed


def _rate(count: int, seconds: float) -> str:
    return f"{count / seconds:,.0f}" if seconds > 0 else "-"


def render(console: Console, spark: SparkReport, base: list[dict], base_s: float) -> None:
    total_spark = sum(b.consumed for b in spark.brokers)
    total_base = sum(b["consumed"] for b in base)
    spark_rate = total_spark / spark.traffic_s if spark.traffic_s else 0.0
    base_rate = total_base / base_s if base_s else 0.0
    table = Table(title=f"{len(spark.brokers)} brokers, {spark.records_per_broker:,} records each, end to end")
    for column in ("run", "records back", "traffic s", "records/s", "vs baseline"):
        table.add_column(column, justify="right" if column != "run" else "left")
    ratio = f"{spark_rate / base_rate:.2f}x" if base_rate else "-"
    spark_row = (f"{total_spark:,}", f"{spark.traffic_s:.2f}", _rate(total_spark, spark.traffic_s), ratio)
    table.add_row(f"Spark {spark.master}", *spark_row)
    base_row = (f"{total_base:,}", f"{base_s:.2f}", _rate(total_base, base_s), "1.00x")
    table.add_row(f"plain, {os.cpu_count()} procs", *base_row)
    table.add_row(
        "Spark + start-up", f"{total_spark:,}", f"{spark.wall_s:.2f}", _rate(total_spark, spark.wall_s),
        f"{(total_spark / spark.wall_s) / base_rate:.2f}x" if base_rate and spark.wall_s else "-",
    )
    console.print(table)
    startup = Table(title="Spark start-up (not in the traffic rows above)")
    startup.add_column("SparkSession ready s", justify="right")
    startup.add_column("spark-submit wall minus traffic s", justify="right")
    startup.add_row(f"{spark.spark_startup_s:.2f}", f"{spark.wall_s - spark.traffic_s:.2f}")
    console.print(startup)
    brokers = Table(title="per broker: latency produce->consume (ms) and checks")
    brokers.add_column("broker", no_wrap=True)
    for column in ("spark p50", "spark p99", "plain p50", "plain p99", "checks"):
        brokers.add_column(column)
    for s, b in zip(spark.brokers, base):
        checks = "ok" if s.ok and b["ok"] else f"spark: {s.problem() or 'ok'}; baseline: {b['error'] or b['ok']}"
        brokers.add_row(
            s.broker, str(s.latency_p50_ms), str(s.latency_p99_ms),
            str(b["latency_ms"]["p50"]), str(b["latency_ms"]["p99"]), checks,
        )
    console.print(brokers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--brokers", required=True, help="comma-separated advertised HOST:PORT of every broker")
    parser.add_argument("--records", type=int, default=verify_job.DEFAULT_RECORDS, help="records per broker")
    parser.add_argument("--topic", default="swarmkit-bench")
    parser.add_argument("--master", default=None, help="Spark master (default local[*])")
    args = parser.parse_args()
    brokers = [b.strip() for b in args.brokers.split(",") if b.strip()]
    console = Console()
    with console.status("baseline: plain confluent-kafka processes"):
        base, base_s = baseline(brokers, f"{args.topic}-baseline", args.records)
    with console.status("Spark job"):
        try:
            spark = run_verify_job(brokers, f"{args.topic}-spark", args.records, master=args.master)
        except SparkJobError as exc:
            if exc.report is None:
                console.print(f"[red]{exc}[/red]\n{exc.hint}")
                return 1
            spark = exc.report
    render(console, spark, base, base_s)
    return 0 if spark.ok and all(b["ok"] for b in base) else 1


if __name__ == "__main__":
    sys.exit(main())
