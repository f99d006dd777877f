"""The Spark stack as rendered (pure), and the options a standalone master adds to the job's command."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from swarmkit.hosts.inventory import parse_inventory
from swarmkit.hosts.session import Session
from swarmkit.traffic import spark as sparkjob
from swarmkit.traffic import spark_cluster

SPEC = spark_cluster.SparkStackSpec(
    image="10.9.0.1:5000/swarmkit/spark:4.2.0",
    master_node_id="abc123",
    master_hostname="node1",
    hosts=(("node1", "10.9.0.11"), ("node2", "10.9.0.12")),
)


def _stack() -> dict:
    return yaml.safe_load(spark_cluster.render_stack(SPEC))


def test_master_is_pinned_to_its_manager_and_workers_run_on_every_node() -> None:
    services = _stack()["services"]
    assert services["master"]["deploy"]["placement"]["constraints"] == ["node.id == abc123"]
    assert services["master"]["deploy"]["replicas"] == 1
    assert services["worker"]["deploy"]["mode"] == "global"
    assert services["master"]["command"] == ["master"]
    assert services["worker"]["command"] == ["worker", "spark://node1:7077"]


def test_every_daemon_uses_the_host_network_and_resolves_every_node() -> None:
    stack = _stack()
    assert stack["networks"] == {"hostnet": {"external": True, "name": "host"}}
    for service in stack["services"].values():
        assert service["networks"] == ["hostnet"]
        assert service["extra_hosts"] == ["node1:10.9.0.11", "node2:10.9.0.12"]
        assert service["environment"]["SPARK_LOCAL_HOSTNAME"] == "{{.Node.Hostname}}"
        assert service["image"] == SPEC.image
        assert "ports" not in service  # host network: the daemons bind the node's ports themselves


def test_heaps_are_small_and_a_worker_offers_exactly_one_verify_executor() -> None:
    services = _stack()["services"]
    assert services["master"]["environment"]["SPARK_DAEMON_MEMORY"] == "256m"
    assert services["worker"]["environment"]["SPARK_DAEMON_MEMORY"] == "256m"
    assert services["worker"]["environment"]["SPARK_WORKER_MEMORY"] == sparkjob.EXECUTOR_MEMORY


def test_rendering_is_stable() -> None:
    assert spark_cluster.render_stack(SPEC) == spark_cluster.render_stack(SPEC)
    assert spark_cluster.render_stack(SPEC).startswith("# Spark standalone on the swarm")


@pytest.mark.parametrize(
    ("image", "registry"),
    [
        ("10.234.0.1:5000/swarmkit/kafka:4.4.0", "10.234.0.1:5000"),
        ("registry.example.net/swarmkit/kafka:4.4.0", "registry.example.net"),
        ("apache/kafka:4.4.0", ""),
        ("", ""),
    ],
)
def test_the_default_registry_is_the_one_of_the_inventory_image(image: str, registry: str) -> None:
    document = {
        "stack": {"image": image} if image else {},
        "hosts": [{"name": "n1", "endpoint": "unix:///tmp/n1.sock", "address": "10.0.0.1", "role": "manager"}],
    }
    assert spark_cluster.default_registry(parse_inventory(document)) == registry


def test_the_spark_stack_is_named_after_the_kafka_stack() -> None:
    assert spark_cluster.stack_name("kafka") == "kafka-spark"


def test_a_standalone_master_gets_the_driver_address_executor_memory_and_an_event_log(monkeypatch) -> None:
    monkeypatch.setattr(sparkjob, "master_status", lambda host: {"cores": 6})
    options = sparkjob.standalone_options("spark://127.0.0.1:7077", Path("/tmp/x/report.json"))
    conf = dict(options[i + 1].split("=", 1) for i in range(0, len(options), 2))
    assert conf["spark.driver.host"] == "127.0.0.1"  # this machine's address on the route to the master
    assert conf["spark.executor.memory"] == sparkjob.EXECUTOR_MEMORY
    assert conf["spark.eventLog.dir"] == "/tmp/x/report-events"
    assert conf["spark.cores.max"] == "6" and conf["spark.scheduler.minRegisteredResourcesRatio"] == "1.0"


def test_only_spark_urls_are_standalone_masters() -> None:
    assert sparkjob.is_standalone("spark://node1:7077")
    assert not sparkjob.is_standalone("local[*]") and not sparkjob.is_standalone(None)


def test_an_unresolvable_master_is_a_clear_error() -> None:
    with pytest.raises(sparkjob.SparkJobError, match="cannot be reached"):
        sparkjob.driver_address("spark://no-such-host.invalid:7077")


def test_the_master_host_must_be_a_manager() -> None:
    document = {
        "hosts": [
            {"name": "n1", "endpoint": "unix:///tmp/n1.sock", "address": "10.0.0.1", "role": "manager"},
            {"name": "n2", "endpoint": "unix:///tmp/n2.sock", "address": "10.0.0.2", "role": "worker"},
        ]
    }
    with pytest.raises(spark_cluster.SparkClusterError, match="not a manager"):
        spark_cluster.spark_up(Session.of(parse_inventory(document)), master_host="n2")
