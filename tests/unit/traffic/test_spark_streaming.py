"""The streaming job's exactly-once verdict (the sink's batches merged) and its report, without Spark or brokers."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from swarmkit.assets import SPARK_DIR
from swarmkit.traffic import spark_streaming
from swarmkit.traffic.spark import SparkJobError
from swarmkit.traffic.spark_streaming import StreamingJobError, StreamOptions, StreamReport, run_streaming_job

sys.path.insert(0, str(SPARK_DIR))
import stream_job  # noqa: E402


def bitmap(*seqs: int) -> str:
    """A Spark bitmap (bucket 1) with bit ``seq`` set for each sequence, as the sink stores it."""
    blob = bytearray(stream_job.BUCKET_BITS // 8)
    for seq in seqs:
        blob[seq // 8] |= 1 << (seq % 8)
    return base64.b64encode(bytes(blob)).decode()


def batch(folder: Path, number: int, query: int, seqs: list[int], crc: int, replays: int = 0) -> None:
    row = {"bucket": 1, "count": len(seqs), "valid": len(seqs), "bitmap": bitmap(*seqs), "crc": crc, "max_lat": 40, "lat": [10.0]}
    other = {"bucket": None, "count": 2, "valid": 0, "bitmap": "", "crc": None, "max_lat": None, "lat": []}
    folder.mkdir(exist_ok=True)
    text = json.dumps({"batch": number, "query": query, "replays": replays, "rows": [row, other]})
    (folder / f"batch-{number}.json").write_text(text)


def test_batches_of_two_queries_merge_into_one_exactly_once_verdict(tmp_path: Path) -> None:
    batch(tmp_path, 0, 1, [0, 1, 2], crc=30)
    batch(tmp_path, 1, 2, [3, 4], crc=20, replays=1)  # re-run by the second query: its file replaced, not added
    seen = stream_job.merge(tmp_path)
    verdict = stream_job.judge(seen, stream_job.Produced(sent=5, acked=5, crc=50))
    assert verdict["missing"] == verdict["duplicates"] == verdict["unacked_seen"] == 0
    assert verdict["checksum_ok"] and verdict["distinct"] == 5 and verdict["unexpected"] == 4
    assert verdict["per_query"] == [3, 2] and verdict["replayed_batches"] == 1
    assert verdict["latency_ms"] == {"p50": 10.0, "p99": 10.0, "max": 40}


def test_a_record_seen_twice_or_never_breaks_the_verdict(tmp_path: Path) -> None:
    batch(tmp_path, 0, 1, [0, 1, 2], crc=30)
    batch(tmp_path, 1, 2, [2, 4], crc=20)
    verdict = stream_job.judge(stream_job.merge(tmp_path), stream_job.Produced(sent=6, acked=5, crc=50, failed=[5]))
    assert verdict["duplicates"] == 1 and verdict["missing"] == 1 and not verdict["checksum_ok"]


def test_options_become_the_job_arguments(tmp_path: Path) -> None:
    assert StreamOptions(seconds=12, rate=2000).job_args() == ["--streaming", "--seconds", "12", "--rate", "2000"]
    args = StreamOptions(seconds=5, rate=10, restart_after=2.5, checkpoint=tmp_path).job_args()
    assert args[-4:] == ["--restart-after", "2.5", "--checkpoint", str(tmp_path)]


REPORT = {
    "ok": False,
    "topic": "s",
    "master": "local[*]",
    "spark_startup_s": 1.5,
    "streaming": {
        "seconds": 10.0,
        "rate": 100,
        "produced": 1000,
        "acked": 1000,
        "consumed": 999,
        "distinct": 998,
        "missing": 2,
        "duplicates": 1,
        "unexpected": 0,
        "checksum_ok": False,
        "latency_ms": {"p50": 200.0, "p99": 900.0, "max": 1200},
        "records_per_s": 95.0,
        "produce_records_per_s": 100.0,
        "batches": 12,
        "replayed_batches": 1,
        "restarts": 1,
        "per_query": [400, 599],
    },
}


def test_the_report_names_what_broke_exactly_once() -> None:
    report = StreamReport.from_dict(REPORT, "/tmp/r.json")
    assert (report.latency_p50_ms, report.latency_p99_ms, report.latency_max_ms) == (200.0, 900.0, 1200)
    assert report.per_query == (400, 599) and report.restarts == 1
    assert report.failures == ["2 of 1000 acknowledged records missing", "1 duplicated", "checksum mismatch"]
    died = StreamReport.from_dict({"ok": False, "error": "TimeoutError: no leader"}, "/tmp/r.json")
    assert died.failures == ["TimeoutError: no leader"]


def test_a_failed_job_raises_with_its_streaming_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "r.json"

    def fails(*args: object, **kwargs: object) -> None:
        path.write_text(json.dumps(REPORT))
        raise SparkJobError("the Spark verify job failed: exit status 1", "see the report", report=object())  # type: ignore[arg-type]

    monkeypatch.setattr(spark_streaming, "run_verify_job", fails)
    with pytest.raises(StreamingJobError) as raised:
        run_streaming_job(["b:9094"], "s", report_path=path)
    assert raised.value.stream is not None and raised.value.stream.missing == 2
    assert "2 of 1000 acknowledged records missing" in raised.value.message


def test_the_summary_line_says_what_held_and_how_fast() -> None:
    good = {**REPORT, "ok": True, "streaming": {**REPORT["streaming"], "missing": 0, "duplicates": 0, "checksum_ok": True}}
    line = StreamReport.from_dict(good, "/tmp/r.json").summary()
    assert "every record exactly once" in line and "p99 900.0 ms" in line and "1 restart(s)" in line
    assert "FAILED 2 of 1000" in StreamReport.from_dict(REPORT, "/tmp/r.json").summary()
