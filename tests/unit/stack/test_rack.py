"""A host's zone reaches its broker as broker.rack through the node's identity file (the apache entrypoint run
with sh, its start command replaced by `env`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from swarmkit.assets import STACKS_DIR
from swarmkit.swarm.identity import node_env


def start_environment(tmp_path: Path, identity: str) -> subprocess.CompletedProcess:
    (tmp_path / "node.env").write_text(identity)
    env = {
        "PATH": "/usr/bin:/bin",
        "SWARMKIT_LIB": str(STACKS_DIR / "node-identity.sh"),
        "SWARMKIT_IDENTITY_FILE": str(tmp_path / "node.env"),
        "SWARMKIT_NODE_HOSTNAME": "k1",
        "SWARMKIT_INTERNAL_HOST": "kafka_broker.x",
        "KAFKA_START_COMMAND": "env",
    }
    return subprocess.run(["sh", str(STACKS_DIR / "apache" / "entrypoint.sh")], env=env, capture_output=True, text=True)


def test_a_zone_becomes_the_brokers_rack_and_rack_aware_fetching(tmp_path: Path) -> None:
    started = start_environment(tmp_path, node_env(3, "10.0.0.3", "b"))
    assert started.returncode == 0, started.stderr
    assert "KAFKA_BROKER_RACK=b" in started.stdout.splitlines()
    assert "KAFKA_REPLICA_SELECTOR_CLASS=org.apache.kafka.common.replica.RackAwareReplicaSelector" in started.stdout
    assert "broker.rack=b" in started.stderr


def test_without_a_zone_the_identity_and_the_broker_are_as_before(tmp_path: Path) -> None:
    assert node_env(3, "10.0.0.3") == "BROKER_ID=3\nNODE_ADDRESS=10.0.0.3\n"
    started = start_environment(tmp_path, node_env(3, "10.0.0.3"))
    assert started.returncode == 0, started.stderr
    assert "KAFKA_BROKER_RACK" not in started.stdout and "KAFKA_REPLICA_SELECTOR_CLASS" not in started.stdout


@pytest.mark.parametrize("rack", ["a b", "a;reboot"])
def test_a_rack_that_is_no_zone_name_stops_the_broker(tmp_path: Path, rack: str) -> None:
    started = start_environment(tmp_path, f"BROKER_ID=3\nNODE_ADDRESS=10.0.0.3\nNODE_RACK={rack}\n")
    assert started.returncode == 64
    assert "is not a zone name" in started.stderr
