"""Runs the PySpark verify job (spark/verify_job.py) for `swarmkit verify --spark` and reads its report.

The job is submitted with the spark-submit of the installed pyspark package and Spark's Kafka
connector jars from the cache `scripts/setup.sh` fills from Maven Central (``--jars``: local files,
no Ivy resolution at run time). The driver runs this interpreter (it has confluent-kafka for
metadata); Spark tasks run only JVM code. The whole process group is killed if it outlives the
timeout: a JVM that hangs must not hang swarmkit.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from swarmkit.assets import SPARK_DIR
from swarmkit.errors import VerifyError
from swarmkit.images import maven
from swarmkit.security.settings import ClientSecurity

JOB = SPARK_DIR / "verify_job.py"
FETCH_JARS = "bash scripts/setup.sh"
SCALA = "2.13"
DEFAULT_TIMEOUT = 600.0
KILL_GRACE = 5.0
STDERR_TAIL = 15
EXECUTOR_MEMORY = "512m"  # Spark's floor is 450m; a `swarmkit spark up` worker offers exactly this
MASTER_UI_PORT = 8080  # a standalone master's web UI, whose /json/ lists its workers and cores
REGISTRATION_WAIT = "60s"  # how long the driver waits for an executor on every worker before the first task


class SparkJobError(VerifyError):
    """The Spark job failed or found bad brokers; ``report`` holds its findings when it got that far."""

    def __init__(self, message: str, hint: str = "", report: SparkReport | None = None) -> None:
        super().__init__(message, hint)
        self.report = report


@dataclass(frozen=True)
class PartitionTraffic:
    """One partition's line of the job's report: what its leader got and gave back."""

    partition: int
    expected: int
    consumed: int
    missing: int
    duplicates: int
    unexpected: int
    checksum_ok: bool
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    produce_records_per_s: float
    ok: bool

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PartitionTraffic:
        latency = data.get("latency_ms") or {}
        counts = ("partition", "expected", "consumed", "missing", "duplicates", "unexpected")
        return cls(
            **{name: int(data[name]) for name in counts},
            checksum_ok=bool(data["checksum_ok"]),
            latency_p50_ms=latency.get("p50"),
            latency_p99_ms=latency.get("p99"),
            produce_records_per_s=float(data["produce_records_per_s"]),
            ok=bool(data["ok"]),
        )


@dataclass(frozen=True)
class BrokerTraffic:
    """One broker's line of the job's report."""

    broker: str
    node_id: int
    reachable: bool
    ok: bool
    produced: int
    consumed: int
    missing: int
    duplicates: int
    unexpected: int
    checksum_ok: bool
    latency_p50_ms: float | None
    latency_p99_ms: float | None
    produce_records_per_s: float
    consume_records_per_s: float
    error: str
    partitions: tuple[PartitionTraffic, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BrokerTraffic:
        latency = data.get("latency_ms") or {}
        return cls(
            broker=data["broker"],
            node_id=int(data.get("node_id", -1)),
            reachable=bool(data["reachable"]),
            ok=bool(data["ok"]),
            produced=int(data["produced"]),
            consumed=int(data["consumed"]),
            missing=int(data["missing"]),
            duplicates=int(data["duplicates"]),
            unexpected=int(data.get("unexpected", 0)),
            checksum_ok=bool(data["checksum_ok"]),
            latency_p50_ms=latency.get("p50"),
            latency_p99_ms=latency.get("p99"),
            produce_records_per_s=float(data["produce_records_per_s"]),
            consume_records_per_s=float(data["consume_records_per_s"]),
            error=data.get("error") or "",
            partitions=tuple(PartitionTraffic.from_dict(p) for p in data.get("partitions", [])),
        )

    def problem(self) -> str:
        """What is wrong with this broker, in one phrase; empty when it is fine."""
        if self.ok:
            return ""
        if self.error:
            return self.error
        wrong = [
            f"{self.missing} missing" if self.missing else "",
            f"{self.duplicates} duplicated" if self.duplicates else "",
            f"{self.unexpected} unexpected" if self.unexpected else "",
            "checksum mismatch" if not self.checksum_ok else "",
        ]
        return ", ".join(w for w in wrong if w)


@dataclass(frozen=True)
class SparkReport:
    ok: bool
    topic: str
    master: str
    records_per_broker: int
    brokers: tuple[BrokerTraffic, ...]
    spark_startup_s: float
    traffic_s: float
    records_per_s: float
    elapsed_s: float
    wall_s: float
    report_path: str
    error: str = ""
    write_s: float = 0.0
    read_s: float = 0.0
    check_s: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any], wall_s: float, report_path: str) -> SparkReport:
        return cls(
            ok=bool(data["ok"]),
            topic=data.get("topic", ""),
            master=data.get("master", ""),
            records_per_broker=int(data["records_per_broker"]),
            brokers=tuple(BrokerTraffic.from_dict(b) for b in data.get("brokers", [])),
            spark_startup_s=float(data.get("spark_startup_s", 0.0)),
            traffic_s=float(data.get("traffic_s", 0.0)),
            records_per_s=float(data.get("records_per_s", 0.0)),
            elapsed_s=float(data.get("elapsed_s", 0.0)),
            wall_s=round(wall_s, 3),
            report_path=report_path,
            error=data.get("error") or "",
            **{
                phase: round(sum(float(c.get(phase, 0.0)) for c in data.get("clusters", [])), 3)
                for phase in ("write_s", "read_s", "check_s")
            },
        )

    @property
    def failures(self) -> list[str]:
        """One line per failing broker (and the job's own error, if it died)."""
        lines = [f"{b.broker}: {b.problem()}" for b in self.brokers if not b.ok]
        return ([self.error] if self.error else []) + lines

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SparkExtraMissing(SparkJobError):
    """pyspark is not installed (swarmkit without its spark extra): bad setup, said before anything is checked."""

    exit_code = 2


def pyspark_missing() -> SparkJobError:
    return SparkExtraMissing(
        "pyspark is not installed: `verify --spark` and `swarmkit spark` need swarmkit's spark extra",
        hint="pip install 'swarmkit-kafka[spark]' (pipx: pipx install 'swarmkit-kafka[spark]'); in a checkout scripts/setup.sh installs it",
    )


def pyspark_version() -> str:
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:
        raise pyspark_missing() from None


def spark_submit() -> Path:
    """The spark-submit shipped in the pyspark package (no system Spark needed)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise pyspark_missing()
    script = Path(next(iter(spec.submodule_search_locations))) / "bin" / "spark-submit"
    if not script.is_file():
        raise SparkJobError(f"spark-submit missing at {script}", hint="reinstall pyspark: .venv/bin/pip install -U pyspark")
    return script


def connector_dir(version: str | None = None) -> Path:
    """Where setup puts the connector jars for a pyspark version (the installed one by default)."""
    version = version or pyspark_version()
    return maven.cache_dir() / f"spark-kafka-{version}" / "jars"


def fetch_connector() -> Path:
    """Resolve spark/pom.xml (the connector at the pinned pyspark's version) into the cache, once."""
    with maven.cache_lock(maven.cache_dir()):
        return maven.resolved(SPARK_DIR / "pom.xml", connector_dir())


def connector_jars(version: str | None = None) -> list[Path]:
    """Spark's Kafka connector and its runtime dependencies; SparkJobError naming the first jar missing."""
    version = version or pyspark_version()
    folder = connector_dir(version)
    wanted = [
        f"spark-sql-kafka-0-10_{SCALA}-{version}.jar",
        f"spark-token-provider-kafka-0-10_{SCALA}-{version}.jar",
        "kafka-clients-*.jar",
        "commons-pool2-*.jar",
    ]
    jars = []
    for pattern in wanted:
        found = sorted(folder.glob(pattern))
        if not found:
            raise SparkJobError(
                f"Spark's Kafka connector jar {pattern} is missing from {folder}",
                hint=f"fetch the jars from Maven Central: {FETCH_JARS}",
            )
        jars.append(found[-1])
    return jars


SPARK_JAVA_VERSIONS = (17, 21, 25)  # the Java releases Spark 4.2 runs on
JVM_DIR = Path("/usr/lib/jvm")
AOT_CACHE_JAVA = 25  # from this release on the JVM keeps an AOT cache (JEP 483, 514, 515)
# A one-shot batch job: the throughput collector's cheaper write barriers beat G1's (read 0.3 s faster of 7)
DRIVER_JVM_OPTIONS = ("-XX:+UseParallelGC",)


@dataclass(frozen=True)
class DriverJava:
    """The JDK the Spark driver runs on. ``JAVA_HOME`` when set; for a local master otherwise the newest
    JDK under /usr/lib/jvm that Spark supports, because from Java 25 its AOT cache also keeps the
    method profiles of the last run: the JIT compiles the hot Kafka paths at once instead of after
    seconds of interpreting them, which on two cores shared with the brokers is most of a cold read.
    Executors on a standalone master run the image's Java 17: their driver keeps the Java on PATH."""

    home: Path | None  # None: spark-class finds java on PATH
    version: int

    @classmethod
    def for_master(cls, master: str | None) -> DriverJava:
        if os.environ.get("JAVA_HOME"):
            return cls.at(Path(os.environ["JAVA_HOME"]))
        if is_standalone(master):
            return cls(None, 0)
        installed = [cls.at(home) for home in JVM_DIR.glob("*") if (home / "bin" / "java").is_file()]
        supported = [java for java in installed if java.version in SPARK_JAVA_VERSIONS]
        return max(supported, key=lambda java: java.version, default=cls(None, 0))

    @classmethod
    def at(cls, home: Path) -> DriverJava:
        """The JDK at ``home``, its major version read from its ``release`` file (0 when unknown)."""
        release = home / "release"
        text = release.read_text(errors="replace") if release.is_file() else ""
        found = re.search(r'^JAVA_VERSION="(\d+)', text, re.MULTILINE)
        return cls(home, int(found.group(1)) if found else 0)

    @property
    def binary(self) -> Path:
        if self.home is not None:
            return self.home / "bin" / "java"
        return Path(shutil.which("java") or "java")

    def env(self) -> dict[str, str]:
        return {"JAVA_HOME": str(self.home)} if self.home is not None else {}


@dataclass(frozen=True)
class ClassArchive:
    """What the driver JVM keeps of its last run: Spark's start-up loads thousands of classes, and a
    one-shot job's first read runs interpreted until the JIT has seen enough of it. From Java 25 an
    AOT cache (classes loaded and linked, method profiles), before it a dynamic CDS archive (classes
    only). The first run writes it to a staging file, kept only if that run succeeded; a JVM that does
    not match it ignores it without a word, so its name carries what it must match: the java binary
    and the class path, that is where pyspark is installed (one archive per checkout's virtualenv)."""

    path: Path
    aot: bool
    staging: Path | None = None  # set when this run writes the archive

    @classmethod
    def for_java(cls, java: DriverJava) -> ClassArchive:
        binary = java.binary.resolve()
        java_identity = f"{binary}:{binary.stat().st_mtime_ns}" if binary.is_file() else "none"
        identity = f"{java_identity}:{spark_submit().resolve().parents[1]}"
        digest = hashlib.sha256(identity.encode()).hexdigest()[:12]
        aot = java.version >= AOT_CACHE_JAVA
        path = connector_dir().parent / f"driver-classes-{digest}.{'aot' if aot else 'jsa'}"
        staging = None if path.is_file() else path.with_name(f"{path.name}.{os.getpid()}.tmp")
        return cls(path, aot, staging)

    def java_options(self) -> list[str]:
        if self.aot:
            flag = f"-XX:AOTCacheOutput={self.staging}" if self.staging else f"-XX:AOTCache={self.path}"
            return [flag, "-Xlog:aot=off", "-Xlog:cds=off"]
        flag = f"-XX:ArchiveClassesAtExit={self.staging}" if self.staging else f"-XX:SharedArchiveFile={self.path}"
        return [flag, "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]

    def keep(self, succeeded: bool) -> None:
        if self.staging is None:
            return
        if succeeded and self.staging.is_file():
            self.staging.replace(self.path)
        else:
            self.staging.unlink(missing_ok=True)


def is_standalone(master: str | None) -> bool:
    return bool(master) and str(master).startswith("spark://")


def master_status(host: str) -> dict[str, Any] | None:
    """A standalone master's own view (``/json/`` of its web UI: workers, cores, applications), or None."""
    try:
        with urllib.request.urlopen(f"http://{host}:{MASTER_UI_PORT}/json/", timeout=2) as response:
            return dict(json.load(response))
    except (OSError, urllib.error.URLError, ValueError):
        return None


def _master_endpoint(master: str) -> tuple[str, int]:
    """The first HOST:PORT of a spark:// URL (a URL may list standby masters after a comma)."""
    parsed = urllib.parse.urlsplit(master.split(",")[0])
    return parsed.hostname or "", parsed.port or 7077


def _route_address(master: str) -> str | None:
    """This machine's address on the route to the master, or None when the master's host does not resolve."""
    host, port = _master_endpoint(master)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host, port))  # UDP: no packet is sent, the kernel only picks the route
            return str(probe.getsockname()[0])
    except OSError:
        return None


def driver_address(master: str) -> str:
    """Where executors on the swarm reach the driver: this machine's address on the route to the master
    (in the sandbox the bridge's address; a name like localhost would send them to themselves)."""
    address = _route_address(master)
    if address is None:
        raise SparkJobError(
            f"the Spark master {master} cannot be reached from here: its host does not resolve or has no route",
            hint="pass the master's URL as `swarmkit spark up` prints it, with a name this machine resolves",
        )
    return address


def event_log_dir(report_path: Path) -> Path:
    """Where a run on a standalone master keeps Spark's event log (which executor ran which task, on which host)."""
    return report_path.with_name(f"{report_path.stem}-events")


def standalone_options(master: str, report_path: Path) -> list[str]:
    """spark-submit options for a standalone master on the swarm: the driver's reachable address, the
    executors' small heap, the event log beside the report, and (when the master says how many cores
    it has) waiting for an executor on every worker, so the traffic runs on every node."""
    conf = {
        "spark.driver.host": _route_address(master) or "",  # unresolvable: run_verify_job's job_env says so
        "spark.executor.memory": EXECUTOR_MEMORY,
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": str(event_log_dir(report_path)),
        "spark.eventLog.compress": "false",  # JSON lines anyone can read, not zstd
    }
    status = master_status(_master_endpoint(master)[0])
    if status and status.get("cores"):
        conf["spark.cores.max"] = str(status["cores"])
        conf["spark.scheduler.minRegisteredResourcesRatio"] = "1.0"
        conf["spark.scheduler.maxRegisteredResourcesWaitingTime"] = REGISTRATION_WAIT
    return [option for key, value in conf.items() if value for option in ("--conf", f"{key}={value}")]


def job_command(
    brokers: Sequence[str],
    topic: str,
    report_path: Path,
    records: int | None = None,
    master: str | None = None,
    task_timeout: float | None = None,
    extra_args: Sequence[str] = (),
    submit_options: Sequence[str] = (),
) -> list[str]:
    """The spark-submit command line; also what to run by hand to repeat a verification."""
    jars = ",".join(str(jar) for jar in connector_jars())
    if master and is_standalone(master):
        submit_options = [*submit_options, *standalone_options(master, report_path)]
    # the driver's own class path too: only classes of the class path go into its archive (ClassArchive)
    command = [str(spark_submit()), "--jars", jars, "--driver-class-path", jars.replace(",", os.pathsep)]
    command += ["--conf", "spark.log.level=WARN", *submit_options, str(JOB)]
    command += ["--bootstrap", ",".join(brokers), "--topic", topic, "--report", str(report_path), *extra_args]
    if master:
        command += ["--master", master]
    if records is not None:
        command += ["--records", str(records)]
    if task_timeout is not None:
        command += ["--timeout", str(task_timeout)]
    return command


def job_env(master: str | None = None, java: DriverJava | None = None) -> dict[str, str]:
    """Spark's Python driver runs this interpreter, which has confluent-kafka for the job's metadata; on a
    standalone master the driver binds the address the swarm's executors reach it by."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    env.update(java.env() if java else {})
    if master is None or master.startswith("local"):
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
    elif is_standalone(master):
        env["SPARK_LOCAL_IP"] = driver_address(master)
    return env


def _stop(process: subprocess.Popen[str]) -> None:
    """Stop spark-submit and everything it started (JVM, Python workers): they share its process group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(KILL_GRACE)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(text: str) -> str:
    return "\n".join(text.strip().splitlines()[-STDERR_TAIL:])


def run_verify_job(
    brokers: Sequence[str],
    topic: str,
    records: int | None = None,
    *,
    master: str | None = None,
    report_path: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    task_timeout: float | None = None,
    extra_args: Sequence[str] = (),
    security: ClientSecurity | None = None,
) -> SparkReport:
    """Submit the job and return its report; SparkJobError (with the report, if any) unless every broker passed.

    A secure cluster's login reaches the job as two files in a private directory removed afterwards,
    never on its command line."""
    if not brokers:
        raise SparkJobError("no brokers to verify", hint="pass the brokers' advertised HOST:PORT endpoints")
    with _login_args(security) as login:
        return _submit(brokers, topic, records, master, report_path, timeout, task_timeout, [*extra_args, *login])


@contextlib.contextmanager
def _login_args(security: ClientSecurity | None) -> Iterator[list[str]]:
    """The job's options naming its login files, which exist only while the block runs."""
    if security is None:
        yield []
        return
    with tempfile.TemporaryDirectory(prefix="swarmkit-spark-client-") as private:
        conf, properties = replace(security, verify_hostname=True).write_files(Path(private))
        yield ["--client-config", str(conf), "--client-properties", str(properties)]


def _submit(
    brokers: Sequence[str],
    topic: str,
    records: int | None,
    master: str | None,
    report_path: Path | None,
    timeout: float,
    task_timeout: float | None,
    extra_args: Sequence[str],
) -> SparkReport:
    if report_path is None:
        report_path = Path(tempfile.mkdtemp(prefix="swarmkit-spark-")) / "report.json"
    report_path.unlink(missing_ok=True)
    if is_standalone(master):
        event_log_dir(report_path).mkdir(parents=True, exist_ok=True)
    java = DriverJava.for_master(master)
    archive = ClassArchive.for_java(java)
    options = ["--driver-java-options", " ".join([*DRIVER_JVM_OPTIONS, *archive.java_options()])]
    command = job_command(brokers, topic, report_path, records, master, task_timeout, extra_args, options)
    started = time.monotonic()
    process = subprocess.Popen(
        command, env=job_env(master, java), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop(process)
        raise SparkJobError(
            f"the Spark verify job did not finish within {timeout:g}s and was stopped",
            hint="raise the timeout, lower --records, or check the Spark master",
        ) from None
    finally:
        archive.keep(process.returncode == 0)  # a stopped run leaves no half-written archive behind
    wall = time.monotonic() - started
    if not report_path.is_file():
        raise SparkJobError(
            f"the Spark verify job exited with status {process.returncode} and wrote no report:\n{_tail(stderr)}",
            hint="check that Java 17 is installed and that pyspark runs (spark-submit --version)",
        )
    report = SparkReport.from_dict(json.loads(report_path.read_text()), wall, str(report_path))
    if process.returncode != 0 or not report.ok:
        raise SparkJobError(
            "the Spark verify job failed: " + "; ".join(report.failures or [f"exit status {process.returncode}"]),
            hint=f"for an unreachable broker run `swarmkit listeners diagnose --bootstrap HOST:PORT`; full report: {report_path}",
            report=report,
        )
    return report
