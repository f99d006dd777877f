"""The swarmkit/kafka image's start script, run for real under busybox sh: environment in, server.properties out.

``run --print-properties`` prints what the image would write to server.properties and starts no
Java, so the official image's environment contract (KIP-975) is checked here without Docker.
Also the recipe's pure helpers: Maven's error line, the build cache's keys, the ldd parsing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swarmkit.assets import STACKS_DIR
from swarmkit.errors import SwarmkitError
from swarmkit.images import image, maven

KAFKA = STACKS_DIR / "kafka"
RUN = KAFKA / "run"
pytestmark = pytest.mark.skipif(not image.BUSYBOX.exists(), reason="needs busybox-static (scripts/setup.sh)")

CLUSTER = "MkU3OEVBNTcwNTJENDM2Qk"
COMBINED = {
    "KAFKA_PROCESS_ROLES": "broker,controller",
    "CLUSTER_ID": CLUSTER,
    "KAFKA_NODE_ID": "1",
    "KAFKA_LOG_DIRS": "/var/lib/kafka/data",
}


def run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """The image's run script under busybox with exactly ``env`` (nothing inherited from pytest)."""
    return subprocess.run(
        [str(image.BUSYBOX), "sh", str(RUN), "--print-properties", *args],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=30,
    )


def properties(env: dict[str, str], *args: str) -> dict[str, str]:
    result = run(env, *args)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    parsed = dict(line.split("=", 1) for line in lines)
    assert len(parsed) == len(lines), "a property was written twice"
    return parsed


def test_underscores_dots_and_dashes_follow_the_official_rules() -> None:
    got = properties(
        {
            **COMBINED,
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "KAFKA_LOG_DIRS": "/data/a,/data/b",
            "KAFKA_CONFLUENT_SUPPORT__METRICS___ENABLE": "false",
            "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR": "2",
            "KAFKA_A__B___C_D": "x",
        }
    )
    assert got["listener.security.protocol.map"] == "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
    assert got["log.dirs"] == "/data/a,/data/b"
    assert got["confluent.support_metrics-enable"] == "false"
    assert got["share.coordinator.state.topic.min.isr"] == "2"
    assert got["a_b-c.d"] == "x"
    assert got["node.id"] == "1" and got["process.roles"] == "broker,controller"


def test_jvm_and_logging_variables_are_not_properties() -> None:
    excluded = {
        name: "-Xfoo"
        for name in (
            "KAFKA_VERSION", "KAFKA_HEAP_OPTS", "KAFKA_LOG4J_OPTS", "KAFKA_OPTS", "KAFKA_JMX_OPTS",
            "KAFKA_JVM_PERFORMANCE_OPTS", "KAFKA_GC_LOG_OPTS", "KAFKA_LOG4J_ROOT_LOGLEVEL",
            "KAFKA_TOOLS_LOG4J_LOGLEVEL", "KAFKA_JMX_HOSTNAME",
        )
    }  # fmt: skip
    got = properties({**COMBINED, **excluded, "KAFKA_LOG4J_LOGGERS": "kafka=WARN"})
    assert set(got) == {"process.roles", "node.id", "log.dirs"}
    assert not any(value == "-Xfoo" for value in got.values())


def test_values_are_kept_whole() -> None:
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="p=w,{x}";'
    got = properties(
        {
            **COMBINED,
            "KAFKA_LISTENER_NAME_SASL__PLAINTEXT_PLAIN_SASL_JAAS_CONFIG": jaas,
            "KAFKA_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM": "",
            "KAFKA_RACK": "eu west {1}: a=b",
        }
    )
    assert got["listener.name.sasl_plaintext.plain.sasl.jaas.config"] == jaas
    assert got["ssl.endpoint.identification.algorithm"] == ""
    assert got["rack"] == "eu west {1}: a=b"


def test_a_backslash_is_escaped_so_java_reads_the_value_back_unchanged() -> None:
    got = properties({**COMBINED, "KAFKA_SASL_KERBEROS_PRINCIPAL_TO_LOCAL_RULES": r"RULE:[1:$1@$0](.*@EXAMPLE\.COM)s/@.*//"})
    assert got["sasl.kerberos.principal.to.local.rules"] == r"RULE:[1:$1@$0](.*@EXAMPLE\\.COM)s/@.*//"


def test_a_value_with_a_line_break_is_refused() -> None:
    result = run({**COMBINED, "KAFKA_RACK": "a\nnode.id=2"})
    assert result.returncode == 64
    assert "KAFKA_RACK contains a line break" in result.stderr
    assert result.stdout == ""


def test_process_roles_without_cluster_id_is_a_clear_error() -> None:
    env = {key: value for key, value in COMBINED.items() if key != "CLUSTER_ID"}
    result = run(env)
    assert result.returncode == 64
    assert "CLUSTER_ID is not set" in result.stderr
    assert "random-uuid" in result.stderr


def test_listeners_are_derived_from_advertised_listeners_with_hosts_emptied() -> None:
    advertised = "INTERNAL://kafka_broker.1.abc:9092,EXTERNAL://node1.example.com:9094,V6://[2001:db8::1]:9095"
    got = properties({**COMBINED, "KAFKA_ADVERTISED_LISTENERS": advertised})
    assert got["advertised.listeners"] == advertised
    assert got["listeners"] == "INTERNAL://:9092,EXTERNAL://:9094,V6://:9095"


def test_explicit_listeners_are_not_replaced() -> None:
    got = properties(
        {**COMBINED, "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://node1:9092", "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092"}
    )
    assert got["listeners"] == "PLAINTEXT://0.0.0.0:9092"


def test_a_controller_only_node_may_not_advertise_listeners() -> None:
    env = {**COMBINED, "KAFKA_PROCESS_ROLES": "controller", "KAFKA_LISTENERS": "CONTROLLER://:9093"}
    result = run({**env, "KAFKA_ADVERTISED_LISTENERS": "CONTROLLER://c1:9093"})
    assert result.returncode == 64 and "not supported on a KRaft controller" in result.stderr
    got = properties({**env, "KAFKA_ADVERTISED_LISTENERS": ""})
    assert "advertised.listeners" not in got
    assert got["listeners"] == "CONTROLLER://:9093"


def test_log_dirs_default_to_the_official_path_with_a_warning() -> None:
    env = {key: value for key, value in COMBINED.items() if key != "KAFKA_LOG_DIRS"}
    result = run(env)
    assert result.returncode == 0
    assert "log.dirs=/tmp/kraft-combined-logs" in result.stdout.splitlines()
    assert "lost with the container" in result.stderr
    assert "log.dirs" not in properties({**env, "KAFKA_LOG_DIR": "/data"})


def test_no_configuration_at_all_gives_the_official_single_node_broker() -> None:
    got = properties({"KAFKA_HEAP_OPTS": "-Xmx256m", "KAFKA_JMX_PORT": "9999"})
    assert got["process.roles"] == "broker,controller"
    assert got["jmx.port"] == "9999"  # mapped like any KAFKA_* variable, as the official image does
    assert got["controller.quorum.voters"] == "1@localhost:29093"
    assert got["advertised.listeners"] == "PLAINTEXT://localhost:29092,PLAINTEXT_HOST://localhost:9092"


def test_arguments_set_variables_as_in_the_official_image() -> None:
    got = properties(COMBINED, "KAFKA_NUM_PARTITIONS=6", "KAFKA_RACK=r 1")
    assert got["num.partitions"] == "6" and got["rack"] == "r 1"
    result = run(COMBINED, "--bogus")
    assert result.returncode == 64 and "unknown argument" in result.stderr


def test_only_environment_variables_count_and_output_is_sorted() -> None:
    got = run({**COMBINED, "KAFKA_ZZZ": "1", "KAFKA_AAA": "2", "NOT_KAFKA_X": "3"})
    lines = got.stdout.splitlines()
    assert lines == sorted(lines)
    assert "aaa=2" in lines and "zzz=1" in lines and not any(line.startswith("x=") for line in lines)


def log4j_loggers(value: str) -> subprocess.CompletedProcess[str]:
    script = f". {KAFKA / 'env-to-properties.sh'} && kafka_log4j_loggers"
    env = {"PATH": "/usr/bin:/bin", "KAFKA_LOG4J_LOGGERS": value}
    return subprocess.run([str(image.BUSYBOX), "sh", "-c", script], env=env, capture_output=True, text=True, timeout=30)


def test_log4j_loggers_override_the_image_defaults_by_key() -> None:
    result = log4j_loggers("state.change.logger=INFO, kafka.controller = DEBUG")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "logger.state_change_logger.name = state.change.logger",
        "logger.state_change_logger.level = INFO",
        "logger.kafka_controller.name = kafka.controller",
        "logger.kafka_controller.level = DEBUG",
    ]
    base = (KAFKA / "log4j2.properties").read_text()
    assert "logger.state_change_logger.name = state.change.logger" in base  # same key: the appended one wins
    bad = log4j_loggers("kafka.controller")
    assert bad.returncode != 0 and "has no level" in bad.stderr


def test_wrapper_scripts_name_existing_main_classes() -> None:
    """The class each /opt/kafka/bin wrapper runs (checked against the resolved jars by the integration test)."""
    expected = {
        "kafka-storage.sh": "kafka.tools.StorageTool",
        "kafka-metadata-quorum.sh": "org.apache.kafka.tools.MetadataQuorumCommand",
        "kafka-reassign-partitions.sh": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
        "kafka-topics.sh": "org.apache.kafka.tools.TopicCommand",
    }
    for name, main_class in expected.items():
        assert f'kafka-run-class.sh" {main_class} ' in (KAFKA / "bin" / name).read_text()
    assert "kafka.Kafka" in (KAFKA / "bin" / "kafka-server-start.sh").read_text()


def test_maven_error_is_the_line_that_says_what_failed() -> None:
    output = (
        "\x1b[1;31m[ERROR]\x1b[m Failed to execute goal on project x: Could not find artifact "
        "org.apache.kafka:kafka-tools:jar:4.4.0 in central\n[ERROR] \n[ERROR] To see the full stack trace\n"
    )
    assert maven._maven_error(output).startswith("Failed to execute goal on project x: Could not find artifact")
    assert maven._maven_error("") == "no output"


def test_a_failed_resolution_is_a_swarmkit_error_with_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "mvn"
    fake.write_text(
        "#!/bin/sh\necho '[ERROR] Failed to execute goal: Could not transfer artifact (network unreachable)'\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(SwarmkitError) as raised:
        maven.resolved(KAFKA / "pom.xml", tmp_path / "cache" / "libs")
    assert "Could not transfer artifact" in raised.value.message
    assert "dependency:copy-dependencies" in raised.value.hint and str(tmp_path / "cache" / "libs") in raised.value.hint
    assert list((tmp_path / "cache").iterdir()) == []  # the staging directory is gone


def test_a_complete_cache_does_not_run_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin" / "mvn"
    fake.parent.mkdir()
    fake.write_text(
        '#!/bin/sh\necho run >>"$(dirname "$0")/calls"\nfor a; do case $a in -DoutputDirectory=*) touch "${a#*=}/x.jar";; esac; done\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    target = tmp_path / "cache" / "libs"
    assert maven.resolved(KAFKA / "pom.xml", target) == target
    assert maven.resolved(KAFKA / "pom.xml", target) == target
    assert (fake.parent / "calls").read_text() == "run\n"
    assert [path.name for path in target.iterdir()] == ["x.jar"]


def test_ldd_output_missing_library_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "ldd"
    fake.write_text(
        "#!/bin/sh\nprintf '\\tlinux-vdso.so.1 (0x1)\\n\\tlibjvm.so => not found\\n"
        "\\tlibfoo.so.1 => not found\\n\\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x2)\\n"
        "\\t/lib64/ld-linux-x86-64.so.2 (0x3)\\n'\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(SwarmkitError, match="libfoo.so.1"):
        image._shared_libraries(Path("/x/libawt.so"), frozenset({"libjvm.so"}))
    libraries = image._shared_libraries(Path("/x/libawt.so"), frozenset({"libjvm.so", "libfoo.so.1"}))
    assert libraries == [Path("/lib/x86_64-linux-gnu/libc.so.6"), Path("/lib64/ld-linux-x86-64.so.2")]


def test_cache_dir_follows_swarmkit_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SWARMKIT_CACHE", str(tmp_path))
    assert maven.cache_dir() == tmp_path
    monkeypatch.delenv("SWARMKIT_CACHE")
    assert maven.cache_dir() == Path("/var/cache/swarmkit")
