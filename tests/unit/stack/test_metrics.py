"""The JMX exporter in the apache engine's JVMs and the Prometheus stack beside Kafka: both rendered, no Docker."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from swarmkit.assets import STACKS_DIR
from swarmkit.cli import metrics as metrics_cli
from swarmkit.cli.app import app
from swarmkit.images import image
from swarmkit.security import pki
from swarmkit.stack import prometheus
from swarmkit.stack.compose import StackRequest
from swarmkit.stack.deployed import controller_services
from swarmkit.stack.metrics import AGENT_ENV, AGENT_PORT, NODE_SERVICE, PROBE_IMAGE
from swarmkit.stack.render import render, render_stack
from tests.unit.stack.test_security import request as secure_request
from tests.unit.stack.test_stack import CLUSTER_ID, inventory

OURS = "10.231.0.1:5000/swarmkit/kafka:4.4.0"
SPEC = prometheus.MetricsSpec(
    "kafka", "kafka_internal", "kafka_broker", ("kafka_controller-1", "kafka_controller-2"), "abc123", 9090
)


@pytest.mark.parametrize("image", [OURS, "apache/kafka:4.4.0", "example.com/my/kafka:1"])
@pytest.mark.parametrize("mode", ["plaintext", "ssl", "sasl_ssl"])
def test_every_broker_and_controller_jvm_starts_the_agent_on_the_overlay_only(tmp_path: Path, mode: str, image: str) -> None:
    """Secure or not, whatever the image, only the external listener is published (test_day2 checks the deployed
    stack's ports); the agent's jar comes from the per-node volume, and the containers' environment does not name
    it in KAFKA_OPTS (a tool run in them with docker exec starts no second agent): the entrypoint adds it."""
    request = secure_request(mode, pki.Pki(tmp_path / "pki") if mode != "plaintext" else None, image=image)
    document = yaml.safe_load(render(request).text)
    assert {port["published"] for service in document["services"].values() for port in service.get("ports", [])} == {9094}
    exporter = document["services"].pop(NODE_SERVICE)
    assert exporter["deploy"]["mode"] == "global" and "ports" not in exporter
    assert exporter["volumes"] == [{"type": "volume", "source": "data", "target": "/kafka/data", "read_only": True}]
    for name, service in document["services"].items():
        assert "KAFKA_OPTS" not in service["environment"], name
        assert service["environment"][AGENT_ENV] == (
            f"-javaagent:/opt/swarmkit/metrics/jmx_prometheus_javaagent.jar={AGENT_PORT}:/usr/local/lib/swarmkit/jmx-exporter.yml"
        )
        assert service["entrypoint"][2:4] == ["/bin/sh", "/usr/local/lib/swarmkit/metrics-agent.sh"], name  # as appuser
        assert {"type": "volume", "source": "metrics-agent", "target": "/opt/swarmkit/metrics", "read_only": True} in service[
            "volumes"
        ]
        assert any(c["target"].endswith("/jmx-exporter.yml") for c in service["configs"]), name
        assert all(port["target"] != AGENT_PORT for port in service.get("ports", [])), name
    assert "metrics-agent" in document["volumes"]
    rules = [f for f in render(request).files if f.filename == "jmx-exporter.yml"]
    assert len(rules) == 1 and rules[0].content == (STACKS_DIR / "apache" / "jmx-exporter.yml").read_text()


def test_a_users_kafka_opts_stays_beside_the_agent() -> None:
    request = StackRequest(inventory(1), cluster_id=CLUSTER_ID, image=OURS, extra_env={"KAFKA_OPTS": "-Dx=1"})
    environment = yaml.safe_load(render_stack(request))["services"]["broker"]["environment"]
    assert environment["KAFKA_OPTS"] == "-Dx=1" and AGENT_ENV in environment


def test_prometheus_finds_brokers_and_controllers_by_dns_on_the_kafka_overlay() -> None:
    config = prometheus.server_config(SPEC)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert set(jobs) == {"kafka-broker", "kafka-controller", "node", "prometheus"}
    assert jobs["node"]["dns_sd_configs"][0]["names"] == ["tasks.kafka_node-exporter"]
    (brokers,) = jobs["kafka-broker"]["dns_sd_configs"]
    (controllers,) = jobs["kafka-controller"]["dns_sd_configs"]
    assert (brokers["names"], brokers["type"], brokers["port"]) == (["tasks.kafka_broker"], "A", AGENT_PORT)
    assert controllers["names"] == ["tasks.kafka_controller-1", "tasks.kafka_controller-2"]
    assert config["rule_files"] == ["/usr/local/lib/swarmkit/alerts.yml"]
    assert "kafka-controller" not in {
        j["job_name"] for j in prometheus.server_config(replace(SPEC, controllers=()))["scrape_configs"]
    }


def test_one_interval_paces_scrapes_rule_evaluations_and_target_lookups() -> None:
    for spec, every in ((SPEC, "15s"), (replace(SPEC, interval_s=5), "5s")):
        config = prometheus.server_config(spec)
        assert (config["global"]["scrape_interval"], config["global"]["evaluation_interval"]) == (every, every)
        assert {job["dns_sd_configs"][0]["refresh_interval"] for job in config["scrape_configs"] if "dns_sd_configs" in job} == {
            every
        }
    assert prometheus.render_stack(replace(SPEC, interval_s=5)) != prometheus.render_stack(SPEC)  # a new config: redeployed
    assert metrics_cli.SCRAPE_INTERVAL_S == prometheus.SCRAPE_INTERVAL_S


def test_verify_loops_named_by_their_address_are_one_more_job() -> None:
    config = prometheus.server_config(replace(SPEC, verify_targets=("10.0.0.5:9465", "ops-box:9465")))
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert jobs["swarmkit-verify"]["static_configs"] == [{"targets": ["10.0.0.5:9465", "ops-box:9465"]}]


def test_the_metrics_stack_runs_on_the_manager_with_its_data_on_a_volume() -> None:
    document = yaml.safe_load(prometheus.render_stack(SPEC))
    service = document["services"]["prometheus"]
    assert service["deploy"]["placement"]["constraints"] == ["node.id == abc123"]
    assert service["ports"] == [{"target": 9090, "published": 9090, "protocol": "tcp", "mode": "host"}]
    assert service["volumes"] == [{"type": "volume", "source": "data", "target": "/prometheus"}]
    assert document["networks"] == {"kafka": {"external": True, "name": "kafka_internal"}}
    files = {config.name: config for config in prometheus.config_files(SPEC)}
    assert {c["source"] for c in service["configs"]} == set(files) == set(document["configs"])
    assert f"--config.file={files[service['configs'][0]['source']].target}" in service["command"]
    assert prometheus.render_stack(SPEC) == prometheus.render_stack(SPEC)
    assert prometheus.render_stack(replace(SPEC, port=9191)) != prometheus.render_stack(SPEC)


def test_the_alert_rules_cover_what_docs_metrics_md_explains() -> None:
    groups = yaml.safe_load((STACKS_DIR / "prometheus" / "alerts.yml").read_text())["groups"]
    alerts = {rule["alert"]: rule for group in groups for rule in group["rules"] if "alert" in rule}
    assert {
        "KafkaBrokerDown",
        "KafkaTargetDown",
        "KafkaOfflinePartitions",
        "KafkaUnderReplicatedPartitions",
        "KafkaUnderMinIsrPartitions",
        "KafkaNoActiveController",
        "KafkaQuorumLag",
        "KafkaNodeDown",
        "KafkaDiskFilling",
        "KafkaOfflineLogDirectory",
        "ConsumerLagGrowing",
    } <= set(alerts)
    docs = (STACKS_DIR.parent / "docs" / "metrics.md").read_text()
    assert all(f"`{name}`" in docs for name in alerts)
    assert all(rule["labels"]["severity"] in ("warning", "critical") for rule in alerts.values())


def test_controllers_are_told_apart_from_other_services() -> None:
    services = ["kafka_broker", "kafka_controller-2", "kafka_controller-1", "kafka_controller-x", "kafka2_controller-1"]
    assert controller_services("kafka", services) == ("kafka_controller-1", "kafka_controller-2")


def test_metrics_commands_refuse_bad_input_with_a_hint(tmp_path: Path) -> None:
    runner = CliRunner()
    inventory_file = tmp_path / "inventory.yaml"
    inventory_file.write_text(
        yaml.safe_dump(
            {"hosts": [{"name": "n1", "endpoint": "unix:///nonexistent.sock", "address": "10.9.0.1", "role": "manager"}]}
        )
    )
    for args, said in (
        (["metrics", "up", "-i", str(inventory_file), "--port", "70000"], "not a port number"),
        (["metrics", "up", "-i", str(inventory_file), "--image", "Not An Image"], "not a valid image reference"),
        (["metrics", "up", "-i", str(inventory_file), "--verify-target", "ops-box"], "not HOST:PORT"),
        (["metrics", "up", "-i", str(inventory_file), "--scrape-interval", "0"], "not a whole number from 1"),
        (["metrics", "down", "-i", str(inventory_file), "--stack", "Bad Name"], "stack"),
    ):
        result = runner.invoke(app, [*args, "--json"])
        assert result.exit_code == 2, args
        document = json.loads(result.stdout)
        assert said in document["error"] and document["hint"] and "Traceback" not in result.output
    result = runner.invoke(app, ["metrics", "up", "-i", str(inventory_file)])
    assert result.exit_code == 1 and "Is the docker daemon running?" in result.output and "hint:" in result.output
    assert "Traceback" not in result.output


def test_the_node_exporter_runs_from_the_probe_image_swarmkit_builds() -> None:
    assert PROBE_IMAGE == image.PROBE_TAG


def _started_with(tmp_path: Path, agent: str, opts: str | None) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ["PATH"], "SWARMKIT_METRICS_AGENT": agent, **({"KAFKA_OPTS": opts} if opts is not None else {})}
    script = STACKS_DIR / "apache" / "metrics-agent.sh"
    show = 'echo "opts=${KAFKA_OPTS:-} agent=${SWARMKIT_METRICS_AGENT:-unset}"'
    return subprocess.run(["sh", str(script), "sh", "-c", show], env=env, capture_output=True, text=True, check=True)


def test_the_entrypoint_adds_the_agent_to_the_servers_kafka_opts_only_when_its_jar_is_there(tmp_path: Path) -> None:
    jar = tmp_path / "agent.jar"
    jar.write_bytes(b"jar")
    option = f"-javaagent:{jar}=9404:/rules.yml"
    assert _started_with(tmp_path, option, "-Dx=1").stdout.strip() == f"opts=-Dx=1 {option} agent=unset"
    assert _started_with(tmp_path, option, None).stdout.strip() == f"opts={option} agent=unset"
    missing = _started_with(tmp_path, f"-javaagent:{tmp_path}/none.jar=9404:/r.yml", "-Dx=1")
    assert missing.stdout.strip() == "opts=-Dx=1 agent=unset" and "starting without metrics" in missing.stderr
    assert _started_with(tmp_path, "", None).stdout.strip() == "opts= agent=unset"  # switched off
