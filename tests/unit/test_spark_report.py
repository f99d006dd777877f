"""The Spark job's checking logic and its report, without Spark or brokers."""

from __future__ import annotations

import struct
import sys
from array import array
from dataclasses import replace
from pathlib import Path

import pytest

from swarmkit.assets import SPARK_DIR
from swarmkit.sparkjob import SparkReport, job_command, job_env

sys.path.insert(0, str(SPARK_DIR))
import verify_job  # noqa: E402


class FakeMessage:
    def __init__(self, offset: int, value: bytes) -> None:
        self._offset, self._value = offset, value

    def error(self) -> None:
        return None

    def offset(self) -> int:
        return self._offset

    def value(self) -> bytes:
        return self._value


RUN = b"r" * 16


def record(seq: int, broker_index: int = 0, run: bytes = RUN) -> bytes:
    return struct.pack(verify_job.HEADER, run, broker_index, seq, 0) + b"x" * 20


def test_plan_splits_each_brokers_records_over_its_partitions() -> None:
    targets = [
        verify_job.Target(0, "b1:9094", 111, (0, 1, 2)),
        verify_job.Target(1, "b2:9094", 111, (4,)),
    ]
    slices = verify_job.plan_slices(targets, "t", 10, 100, 30.0)
    assert [(s.broker, s.partition, s.records) for s in slices] == [
        ("b1:9094", 0, 4), ("b1:9094", 1, 3), ("b1:9094", 2, 3), ("b2:9094", 4, 10),
    ]
    assert len({s.run_id for s in slices}) == 1


def test_reader_counts_duplicates_foreign_and_misrouted_records() -> None:
    target = verify_job.Target(0, "b1:9094", 111, (0, 1))
    first, _ = verify_job.plan_slices([target], "t", 6, 100, 30.0)  # seqs 0, 2, 4
    first = replace(first, run_id=RUN)
    reader = verify_job._Reader(first)
    values = [record(0), record(2), record(2), record(1), record(4, broker_index=1), record(4, run=b"o" * 16), b"junk"]
    reader.take([FakeMessage(i, v) for i, v in enumerate(values)])
    assert (reader.consumed, sum(reader.seen), reader.duplicates) == (5, 2, 1)
    assert reader.unexpected == 2  # seq 1 belongs to partition 1; broker index 1 is another broker
    assert reader.foreign == 2 and reader.next_offset == 7


def result(index: int, produced: int, unique: int, duplicates: int = 0, same_checksum: bool = True) -> dict:
    return {
        "broker_index": index, "partition": 0, "started": 100.0, "produce_done": 101.0, "consume_done": 102.0,
        "produced": produced, "produced_checksum": 7, "consumed": unique + duplicates, "unique": unique,
        "duplicates": duplicates, "unexpected": 0, "foreign": 0, "consumed_checksum": 7 if same_checksum else 8,
        "latencies": array("f", [1.0, 2.0, 3.0]).tobytes(),
    }


def test_summarize_judges_each_broker() -> None:
    targets = [
        verify_job.Target(0, "b1:9094", 111, (0,)),
        verify_job.Target(1, "b2:9094", 111, (0,)),
        verify_job.Target(2, "b3:9094", 111, (0,)),
        verify_job.Target(3, "b4:9094", error="b4:9094 unreachable: refused"),
    ]
    results = [result(0, 10, 10), result(1, 10, 9, duplicates=1), result(2, 10, 10, same_checksum=False)]
    good, dup, corrupt, dead = verify_job.summarize(targets, results, 10)
    assert good["ok"] and good["latency_ms"] == {"p50": 2.0, "p99": 3.0}
    assert good["produce_records_per_s"] == 10.0 and good["consume_records_per_s"] == 5.0
    assert not dup["ok"] and dup["missing"] == 1 and dup["duplicates"] == 1
    assert not corrupt["ok"] and not corrupt["checksum_ok"] and corrupt["missing"] == 0
    assert not dead["ok"] and not dead["reachable"] and dead["missing"] == 10 and "refused" in dead["error"]


def test_report_parses_and_names_failures() -> None:
    targets = [verify_job.Target(0, "b1:9094", 111, (0,)), verify_job.Target(1, "b2:9094", error="b2:9094 unreachable")]
    brokers = verify_job.summarize(targets, [result(0, 10, 9)], 10)
    data = {"ok": False, "records_per_broker": 10, "topic": "t", "brokers": brokers, "spark_startup_s": 3.0,
            "traffic_s": 1.0, "records_per_s": 9.0, "elapsed_s": 5.0, "master": "local[*]"}
    report = SparkReport.from_dict(data, wall_s=7.5, report_path="/tmp/r.json")
    assert not report.ok and report.wall_s == 7.5
    assert report.failures == ["b1:9094: 1 missing", "b2:9094: b2:9094 unreachable"]
    assert report.to_dict()["brokers"][0]["latency_p50_ms"] == 2.0


def test_job_command_and_env(tmp_path: Path) -> None:
    command = job_command(["b1:9094", "b2:9094"], "t", tmp_path / "r.json", records=5, master="spark://m:7077")
    assert Path(command[0]).name == "spark-submit" and Path(command[0]).is_file()
    assert str(SPARK_DIR / "verify_job.py") in command
    assert command[command.index("--brokers") + 1] == "b1:9094,b2:9094"
    assert command[command.index("--master") + 1] == "spark://m:7077"
    assert command[command.index("--records") + 1] == "5"
    env = job_env()
    assert env["PYSPARK_PYTHON"] == sys.executable and env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert job_env("spark://m:7077")["PYSPARK_DRIVER_PYTHON"] == sys.executable


@pytest.mark.parametrize(
    "argv",
    [
        ["--brokers", "", "--topic", "t", "--report", "r"],
        ["--brokers", "b:1", "--topic", "t", "--report", "r", "--records", "0"],
    ],
)
def test_job_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        verify_job.parse_args(argv)
