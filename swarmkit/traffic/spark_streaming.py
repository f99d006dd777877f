"""`swarmkit verify --spark --streaming`: the verify job's streaming mode (spark/stream_job.py) and its report.

The same spark-submit as the batch job (``spark.run_verify_job``: connector jars, class archive,
timeout, process group), with ``--streaming``: a Structured Streaming query on the Kafka source
while a producer writes at a fixed rate; its verdict is exactly-once across a restart from the
query's checkpoint, and its numbers are end-to-end latency and records/s.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from swarmkit.defaults import STREAM_RATE, STREAM_SECONDS
from swarmkit.security.settings import ClientSecurity
from swarmkit.traffic.spark import SparkJobError, run_verify_job


class StreamingJobError(SparkJobError):
    """The streaming job failed or broke exactly-once; ``stream`` holds its report when it got that far."""

    def __init__(self, message: str, hint: str = "", stream: StreamReport | None = None) -> None:
        super().__init__(message, hint)
        self.stream = stream


@dataclass(frozen=True)
class StreamOptions:
    """How long and how fast the producer writes, and whether the query is restarted mid-stream."""

    seconds: float = STREAM_SECONDS
    rate: int = STREAM_RATE
    restart_after: float = 0.0  # 0: never; else stop the query after that many seconds and start it again
    checkpoint: Path | None = None  # default: beside the report

    def job_args(self) -> list[str]:
        args = ["--streaming", "--seconds", f"{self.seconds:g}", "--rate", str(self.rate)]
        args += ["--restart-after", f"{self.restart_after:g}"] if self.restart_after else []
        return args + (["--checkpoint", str(self.checkpoint)] if self.checkpoint else [])


@dataclass(frozen=True)
class StreamReport:
    """The streaming job's verdict: every acknowledged record seen exactly once, and how fast and how late."""

    ok: bool
    topic: str
    master: str
    seconds: float
    rate: int
    produced: int
    acked: int
    consumed: int
    distinct: int
    missing: int
    duplicates: int
    unexpected: int
    checksum_ok: bool
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    latency_max_ms: float | None
    records_per_s: float
    produce_records_per_s: float
    batches: int
    replayed_batches: int
    restarts: int
    per_query: tuple[int, ...]
    spark_startup_s: float
    report_path: str
    error: str = ""

    @classmethod
    def from_dict(cls, data: dict[str, Any], report_path: str) -> StreamReport:
        stream = data.get("streaming") or {}
        latency = stream.get("latency_ms") or {}
        counts = ("produced", "acked", "consumed", "distinct", "missing", "duplicates", "unexpected")
        return cls(
            ok=bool(data.get("ok")) and bool(stream),
            topic=data.get("topic", ""),
            master=data.get("master", ""),
            seconds=float(stream.get("seconds", 0.0)),
            rate=int(stream.get("rate", 0)),
            **{name: int(stream.get(name, 0)) for name in counts},
            checksum_ok=bool(stream.get("checksum_ok")),
            latency_p50_ms=latency.get("p50"),
            latency_p99_ms=latency.get("p99"),
            latency_max_ms=latency.get("max"),
            records_per_s=float(stream.get("records_per_s", 0.0)),
            produce_records_per_s=float(stream.get("produce_records_per_s", 0.0)),
            batches=int(stream.get("batches", 0)),
            replayed_batches=int(stream.get("replayed_batches", 0)),
            restarts=int(stream.get("restarts", 0)),
            per_query=tuple(int(n) for n in stream.get("per_query", ())),
            spark_startup_s=float(data.get("spark_startup_s", 0.0)),
            report_path=report_path,
            error=data.get("error") or "",
        )

    @property
    def failures(self) -> list[str]:
        """What broke exactly-once (or the job's own error), one phrase each; empty when ok."""
        if self.ok:
            return []
        wrong = [
            self.error,
            f"{self.missing} of {self.acked} acknowledged records missing" if self.missing else "",
            f"{self.duplicates} duplicated" if self.duplicates else "",
            "checksum mismatch" if self.acked and not self.checksum_ok else "",
            "no record acknowledged" if not self.acked and not self.error else "",
        ]
        return [w for w in wrong if w]

    def summary(self) -> str:
        """One line for the verify table: the exactly-once verdict, throughput and latency."""
        verdict = "every record exactly once" if self.ok else "FAILED " + "; ".join(self.failures)
        return (
            f"Spark streaming ({self.master}): {self.distinct:,}/{self.acked:,} acknowledged records seen, {verdict}; "
            f"{self.records_per_s:,.0f} records/s at {self.rate:,}/s offered over {self.seconds:g} s, "
            f"latency p50 {self.latency_p50_ms} ms, p99 {self.latency_p99_ms} ms, max {self.latency_max_ms} ms; "
            f"{self.batches} batches, {self.restarts} restart(s) from the checkpoint"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_streaming_job(
    brokers: Sequence[str],
    topic: str,
    options: StreamOptions = StreamOptions(),
    *,
    master: str | None = None,
    report_path: Path | None = None,
    timeout: float | None = None,
    security: ClientSecurity | None = None,
) -> StreamReport:
    """Submit the job in streaming mode; StreamingJobError (with the report, if any) unless exactly-once held."""
    report_path = report_path or Path(tempfile.mkdtemp(prefix="swarmkit-stream-")) / "report.json"
    limit = timeout or options.seconds + options.restart_after + 300  # start-up, catch-up and drain on a busy machine
    try:
        run_verify_job(
            brokers,
            topic,
            master=master,
            report_path=report_path,
            timeout=limit,
            extra_args=options.job_args(),
            security=security,
        )
    except SparkJobError as error:
        if error.report is None:
            raise StreamingJobError(error.message, error.hint) from error
        report = StreamReport.from_dict(json.loads(report_path.read_text()), str(report_path))
        message = "the Spark streaming job failed: " + "; ".join(report.failures or [error.message])
        raise StreamingJobError(message, error.hint, stream=report) from error
    return StreamReport.from_dict(json.loads(report_path.read_text()), str(report_path))
