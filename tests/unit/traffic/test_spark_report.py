"""The Spark job's verdicts and report, the connector jars and their pin, without Spark or brokers."""

from __future__ import annotations

import re
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest

from swarmkit.assets import SPARK_DIR
from swarmkit.images import maven
from swarmkit.traffic.spark import (
    ClassArchive,
    DriverJava,
    SparkJobError,
    SparkReport,
    connector_dir,
    connector_jars,
    fetch_connector,
    job_command,
    job_env,
)

sys.path.insert(0, str(SPARK_DIR))
import verify_job  # noqa: E402

PLAN = verify_job.Plan("b1:9094,b2:9094", "t", "run12345", 10, 100, ((0, (0, 1, 2)), (1, (4,))), {0: 5, 1: 0, 2: 0, 4: 7})
JARS = [
    "spark-sql-kafka-0-10_2.13-9.9.9.jar",
    "spark-token-provider-kafka-0-10_2.13-9.9.9.jar",
    "kafka-clients-3.9.2.jar",
    "commons-pool2-2.13.1.jar",
]


def row(count: int, valid: int | None = None, distinct: int | None = None, crc: int = 7) -> dict:
    valid = count if valid is None else valid
    return {
        "count": count,
        "valid": valid,
        "distinct": valid if distinct is None else distinct,
        "crc": crc,
        "first_ts": 1000,
        "last_ts": 2000,
        "lat": [1.0, 2.0, 3.0],
    }


def run_of(rows: dict[int, dict], error: str = "") -> verify_job.ClusterRun:
    end = {p: PLAN.start[p] + PLAN.expected(p) for p in PLAN.partitions}
    crc = dict.fromkeys(PLAN.partitions, 7)
    return verify_job.ClusterRun(PLAN, rows, end, end, crc, 1.0, 2.0, 0.5, error)


def test_plan_gives_every_broker_its_records_spread_over_the_partitions_it_leads() -> None:
    assert [PLAN.expected(p) for p in (0, 1, 2, 4, 3)] == [4, 3, 3, 10, 0]
    assert PLAN.total == 20 and PLAN.partitions == [0, 1, 2, 4]


def test_summarize_judges_each_partition_and_broker() -> None:
    probes = [verify_job.Probe(0, "b1:9094", 1, ("b1:9094", "b2:9094")), verify_job.Probe(1, "b2:9094", 2)]
    good = verify_job.summarize(probes, [run_of({0: row(4), 1: row(3), 2: row(3), 4: row(10)})], {}, 10)
    assert [b["ok"] for b in good] == [True, True]
    assert good[0]["consumed"] == 10 and [p["partition"] for p in good[0]["partitions"]] == [0, 1, 2]
    assert good[0]["latency_ms"] == {"p50": 2.0, "p99": 3.0} and good[1]["consume_records_per_s"] == 5.0
    assert good[1]["produce_records_per_s"] == 10.0  # 10 records over 1 s of record timestamps
    assert "_lat" not in good[0]["partitions"][0]
    bad = verify_job.summarize(probes, [run_of({0: row(5, distinct=3), 1: row(3, valid=2), 2: row(3, crc=8)})], {}, 10)
    parts = {p["partition"]: p for p in bad[0]["partitions"]}
    assert (parts[0]["duplicates"], parts[0]["missing"], parts[0]["ok"]) == (2, 1, False)
    assert (parts[1]["unexpected"], parts[1]["missing"]) == (1, 1)
    assert not parts[2]["checksum_ok"] and parts[2]["missing"] == 0
    assert not bad[0]["ok"] and bad[0]["duplicates"] == 2 and bad[0]["unexpected"] == 1
    assert not bad[1]["ok"] and bad[1]["missing"] == 10 and bad[1]["consumed"] == 0


def test_unreachable_broken_and_idle_brokers_are_named() -> None:
    probes = [
        verify_job.Probe(0, "b1:9094", 1),
        verify_job.Probe(1, "b2:9094", 2),
        verify_job.Probe(2, "b3:9094", error="b3:9094 unreachable: refused"),
    ]
    errors = {1: "b2:9094 (node 2) leads no partition of t", 2: probes[2].error}
    failed = run_of({}, error="b1:9094: KafkaException: timed out")
    one, idle, dead = verify_job.summarize(probes, [failed], errors, 10)
    assert not one["ok"] and "timed out" in one["error"] and one["produced"] == 0 and one["missing"] == 10
    assert not idle["ok"] and idle["reachable"] and "leads no partition" in idle["error"]
    assert not dead["ok"] and not dead["reachable"] and dead["missing"] == 10 and "refused" in dead["error"]


def test_report_parses_partitions_phases_and_names_failures() -> None:
    probes = [verify_job.Probe(0, "b1:9094", 1), verify_job.Probe(1, "b2:9094", error="b2:9094 unreachable")]
    brokers = verify_job.summarize(probes, [run_of({0: row(4), 1: row(3), 2: row(2)})], {1: probes[1].error}, 10)
    data = {
        "ok": False,
        "records_per_broker": 10,
        "topic": "t",
        "brokers": brokers,
        "spark_startup_s": 3.0,
        "traffic_s": 4.0,
        "records_per_s": 9.0,
        "elapsed_s": 5.0,
        "master": "local[*]",
        "clusters": [{"write_s": 1.0, "read_s": 2.0, "check_s": 0.5}, {"write_s": 1.5}],
    }
    report = SparkReport.from_dict(data, wall_s=7.5, report_path="/tmp/r.json")
    assert not report.ok and (report.write_s, report.read_s, report.check_s) == (2.5, 2.0, 0.5)
    assert report.failures == ["b1:9094: 1 missing", "b2:9094: b2:9094 unreachable"]
    assert [p.partition for p in report.brokers[0].partitions] == [0, 1, 2]
    assert report.brokers[0].partitions[2].missing == 1 and not report.brokers[0].partitions[2].ok
    assert report.to_dict()["brokers"][0]["partitions"][0]["latency_p50_ms"] == 2.0


def test_missing_connector_jar_is_named_with_the_command_that_fetches_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SWARMKIT_CACHE", str(tmp_path))
    folder = tmp_path / "spark-kafka-9.9.9" / "jars"
    folder.mkdir(parents=True)
    for name in JARS[:2] + JARS[3:]:
        (folder / name).touch()
    with pytest.raises(SparkJobError) as caught:
        connector_jars("9.9.9")
    assert "kafka-clients" in caught.value.message and str(folder) in caught.value.message
    assert "scripts/setup.sh" in caught.value.hint
    (folder / JARS[2]).touch()
    assert [jar.name for jar in connector_jars("9.9.9")] == JARS


def test_job_command_passes_the_jars_and_env(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("SWARMKIT_CACHE", str(tmp_path))
    monkeypatch.setattr("importlib.metadata.version", lambda name: "9.9.9")
    folder = tmp_path / "spark-kafka-9.9.9" / "jars"
    folder.mkdir(parents=True)
    for name in JARS:
        (folder / name).touch()
    command = job_command(["b1:9094", "b2:9094"], "t", tmp_path / "r.json", 5, "spark://m:7077", None, ["--linger-ms", "5"])
    assert Path(command[0]).name == "spark-submit" and Path(command[0]).is_file()
    assert command[command.index("--jars") + 1] == ",".join(str(folder / name) for name in JARS)
    assert command.index("--jars") < command.index(str(SPARK_DIR / "verify_job.py"))
    assert command[command.index("--bootstrap") + 1] == "b1:9094,b2:9094"
    assert command[command.index("--master") + 1] == "spark://m:7077"
    assert command[command.index("--linger-ms") + 1] == "5"
    assert command[command.index("--driver-class-path") + 1] == ":".join(str(folder / name) for name in JARS)
    env = job_env()
    assert env["PYSPARK_PYTHON"] == sys.executable and env["SPARK_LOCAL_IP"] == "127.0.0.1"
    assert job_env(java=DriverJava(tmp_path / "jdk", 25))["JAVA_HOME"] == str(tmp_path / "jdk")


def fake_jdk(root: Path, name: str, release: str) -> Path:
    home = root / name
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").touch()
    (home / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{release}"\n')
    return home


def test_the_driver_runs_on_java_home_else_the_newest_jdk_spark_supports(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setattr("swarmkit.traffic.spark.JVM_DIR", tmp_path)
    assert DriverJava.for_master(None) == DriverJava(None, 0)  # nothing installed there: java from PATH
    fake_jdk(tmp_path, "jdk-17", "17.0.15")
    newest = fake_jdk(tmp_path, "temurin-25", "25.0.3")
    fake_jdk(tmp_path, "jdk-26", "26")  # newer than Spark supports
    assert DriverJava.for_master("local[*]") == DriverJava(newest, 25)
    assert DriverJava.for_master("spark://m:7077") == DriverJava(None, 0)  # executors run the image's Java 17
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk-17"))
    assert DriverJava.for_master(None) == DriverJava(tmp_path / "jdk-17", 17)


@pytest.mark.parametrize(
    ("release", "writes", "reads", "logs"),
    [
        (17, "-XX:ArchiveClassesAtExit=", "-XX:SharedArchiveFile=", "-Xlog:cds=off -Xlog:cds+dynamic=off"),
        (25, "-XX:AOTCacheOutput=", "-XX:AOTCache=", "-Xlog:aot=off -Xlog:cds=off"),
    ],
)
def test_class_archive_is_written_by_a_successful_run_then_reused(tmp_path, monkeypatch, release, writes, reads, logs) -> None:
    monkeypatch.setenv("SWARMKIT_CACHE", str(tmp_path))
    java = DriverJava(fake_jdk(tmp_path, "jdk", f"{release}.0.1"), release)
    first = ClassArchive.for_java(java)
    assert first.staging is not None and first.path.parent == tmp_path / f"spark-kafka-{version('pyspark')}"
    assert " ".join(first.java_options()) == f"{writes}{first.staging} {logs}"
    first.path.parent.mkdir(parents=True)
    first.staging.write_bytes(b"half")
    first.keep(False)  # a failed run's archive is not trusted
    assert not first.staging.exists() and not first.path.exists()
    first.staging.write_bytes(b"archive")
    first.keep(True)
    assert first.path.read_bytes() == b"archive" and not first.staging.exists()
    second = ClassArchive.for_java(java)
    assert second.staging is None and f"{reads}{first.path}" in second.java_options()


def test_another_checkouts_pyspark_gets_an_archive_of_its_own(tmp_path, monkeypatch) -> None:
    """An archive made with another class path is ignored by the JVM without a word (a clean clone's
    .venv made this checkout's runs cold): the pyspark install is part of the archive's name."""
    monkeypatch.setenv("SWARMKIT_CACHE", str(tmp_path))
    java = DriverJava(fake_jdk(tmp_path, "jdk", "25.0.3"), 25)
    names = set()
    for checkout in ("main", "clone"):
        script = tmp_path / checkout / "pyspark" / "bin" / "spark-submit"
        script.parent.mkdir(parents=True)
        script.touch()
        monkeypatch.setattr("swarmkit.traffic.spark.spark_submit", lambda script=script: script)
        names.add(ClassArchive.for_java(java).path.name)
    assert len(names) == 2


def test_pyspark_pin_matches_the_connector_pom() -> None:
    pom = (SPARK_DIR / "pom.xml").read_text()
    spark_version = re.search(r"<spark.version>(.+?)</spark.version>", pom).group(1)
    project = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())["project"]
    assert f"pyspark=={spark_version}" in project["optional-dependencies"]["spark"]


def test_the_connector_is_resolved_from_the_spark_pom_into_the_cache(tmp_path, monkeypatch) -> None:
    calls = []
    monkeypatch.setenv("SWARMKIT_CACHE", str(tmp_path))
    monkeypatch.setattr(maven, "resolved", lambda pom, target: calls.append((pom, target)) or target)
    target = fetch_connector()
    assert calls == [(SPARK_DIR / "pom.xml", target)] and target == connector_dir()
    assert target.is_relative_to(tmp_path)


@pytest.mark.parametrize(
    "argv",
    [
        ["--bootstrap", "", "--topic", "t", "--report", "r"],
        ["--bootstrap", "b:1", "--topic", "t", "--report", "r", "--records", "0"],
        ["--bootstrap", "b:1", "--topic", "t", "--report", "r", "--payload-bytes", "10"],
    ],
)
def test_job_rejects_bad_arguments(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        verify_job.parse_args(argv)


def test_only_a_partition_whose_sums_match_what_was_written_skips_the_exact_count() -> None:
    sent = list(PLAN.sequences(0))  # 0, 6, 12, 18
    row = {"count": 4, "valid": 4, "seq_sum": sum(sent), "crc": 99}
    assert verify_job.as_written(PLAN, 0, row, 99)
    assert not verify_job.as_written(PLAN, 0, None, 99)  # nothing read back
    assert verify_job.as_written(PLAN, 3, None, 0)  # a partition nothing was sent to
    assert not verify_job.as_written(PLAN, 0, {**row, "crc": 98}, 99)  # a corrupted byte
    assert not verify_job.as_written(PLAN, 0, {**row, "count": 5}, 99)  # one record more than sent
    assert not verify_job.as_written(PLAN, 0, {**row, "valid": 3}, 99)  # one record not ours
    # 18 lost and 12 read twice: the same count, a different sum of sequence numbers
    assert not verify_job.as_written(PLAN, 0, {**row, "seq_sum": sum(sent) - 18 + 12}, 99)


def test_tuning_goes_through_the_job_command_line_unchanged() -> None:
    tuning = verify_job.Tuning(linger_ms=7, compression="zstd", min_partitions=12, poll_records=500, timeout=30.0)
    argv = ["--bootstrap", "b:9094", "--topic", "t", "--report", "r", *tuning.to_args()]
    assert verify_job.parse_args(argv).tuning == tuning
