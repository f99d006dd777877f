"""Swarm bootstrap on real engines: init, join, idempotence, foreign swarms, leave; an engine behind TLS."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from swarmkit.cli.app import app
from swarmkit.errors import EngineError, SwarmError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine
from swarmkit.hosts.inventory import TlsFiles, load_inventory
from swarmkit.hosts.roles import NodeRole
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.state import Sandbox
from swarmkit.swarm import bootstrap as swarm
from tests.integration.sandboxes import module_sandbox
from tests.integration.tls_certs import EngineCerts, authority, engine_certs

pytestmark = pytest.mark.integration


sw = module_sandbox("sw", 3, "10.245.0.0/24")


def test_swarm_up_makes_a_three_node_swarm_and_is_idempotent(sw: Sandbox) -> None:
    inventory = load_inventory(sw.inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    first = swarm.swarm_up(inventory, docker=docker)
    assert [(a.host, a.action) for a in first.actions] == [("sw1", "init"), ("sw2", "join"), ("sw3", "join")]
    nodes = sorted((n.hostname, n.role, n.state, n.labels["swarmkit.host"]) for n in first.nodes)
    assert nodes == [
        ("sw1", "manager", "ready", "sw1"),
        ("sw2", "worker", "ready", "sw2"),
        ("sw3", "worker", "ready", "sw3"),
    ]
    again = swarm.swarm_up(inventory, docker=docker)
    assert not again.changed
    assert {n.id for n in again.nodes} == {n.id for n in first.nodes}


def test_a_host_in_another_swarm_is_reported_and_left_alone(sw: Sandbox) -> None:
    stranger = sandbox.add_node("sw")
    dockerapi.swarm_init(stranger.docker, stranger.address)
    foreign_id = dockerapi.engine_info(stranger.docker).swarm_node_id
    inventory = load_inventory(sw.inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    with pytest.raises(SwarmError, match="sw4 is already in another swarm"):
        swarm.swarm_up(inventory, docker=docker)
    assert dockerapi.engine_info(stranger.docker).swarm_node_id == foreign_id
    assert len(dockerapi.swarm_nodes(sw.hosts[0].docker)) == 3
    dockerapi.swarm_leave(stranger.docker, force=True)
    joined = swarm.swarm_up(inventory, docker=docker)
    assert [(a.host, a.action) for a in joined.actions if a.action != "member"] == [("sw4", "join")]


def test_join_command_hides_the_token_unless_asked(sw: Sandbox) -> None:
    inventory = load_inventory(sw.inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    hidden = swarm.join_command(inventory, NodeRole.WORKER, show_token=False, docker=docker)
    assert "SWMTKN" not in hidden and hidden.endswith("10.245.0.11:2377")
    assert "SWMTKN-" in swarm.join_command(inventory, NodeRole.WORKER, show_token=True, docker=docker)


def test_swarm_down_leaves_on_every_host(sw: Sandbox) -> None:
    inventory = load_inventory(sw.inventory_path)
    docker = DockerHosts.from_inventory(inventory)
    swarm.swarm_down(inventory, docker=docker)
    assert {dockerapi.engine_info(docker[h]).swarm_state for h in inventory.hosts} == {"inactive"}


@pytest.fixture(scope="module")
def tls_certs(sw: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> EngineCerts:
    """sw2's dockerd restarted as a real server's: also on tcp://ADDRESS:2376, --tlsverify, certificates made here."""
    certs = engine_certs(tmp_path_factory.mktemp("certs"), sw.host("sw2").address)
    sandbox.stop_engine("sw", "sw2")
    sandbox.start_engine("sw", "sw2", tls=certs.server)
    return certs


def tls_inventory(sw: Sandbox, path: Path, tls: TlsFiles) -> Path:
    """The sandbox's first two hosts, sw2 reached through tcp:// with a tls: block."""
    document = yaml.safe_load(Path(sw.inventory_path).read_text())
    hosts = document["hosts"][:2]
    hosts[1].update(endpoint=f"tcp://{sw.host('sw2').address}:{sandbox.TLS_PORT}", tls=vars(tls))
    path.write_text(yaml.safe_dump({**document, "hosts": hosts}))
    return path


def test_an_engine_behind_tls_is_reached_through_the_inventory_tls_block(
    sw: Sandbox, tls_certs: EngineCerts, tmp_path: Path
) -> None:
    inventory = load_inventory(tls_inventory(sw, tmp_path / "tls.yaml", tls_certs.client))
    docker = DockerHosts.from_inventory(inventory)
    assert dockerapi.engine_info(docker[inventory.host("sw2")]).hostname == "sw2"
    with pytest.raises(EngineError, match="does not answer"):  # the engine refuses a client without a certificate
        dockerapi.engine_info(Engine.connect(inventory.host("sw2").endpoint))
    joined = swarm.swarm_up(inventory, docker=docker)
    assert [(a.host, a.action) for a in joined.actions] == [("sw1", "init"), ("sw2", "join")]
    assert swarm.swarm_down(inventory, docker=DockerHosts.from_inventory(inventory))  # each host's TLS from the inventory
    assert dockerapi.engine_info(docker[inventory.host("sw2")]).swarm_state == "inactive"


def test_a_wrong_ca_is_one_clear_error_without_traceback(sw: Sandbox, tls_certs: EngineCerts, tmp_path: Path) -> None:
    stranger = authority(tmp_path, "stranger")  # did not sign sw2's certificate
    wrong = TlsFiles(ca=str(stranger.cert_path), cert=tls_certs.client.cert, key=tls_certs.client.key)
    result = CliRunner().invoke(
        app, ["swarm", "up", "--skip-preflight", "-i", str(tls_inventory(sw, tmp_path / "wrong.yaml", wrong))]
    )
    print(f"\n{result.output}")
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output
    assert f"error: the Docker engine at tcp://{sw.host('sw2').address}:2376 does not answer" in result.output
    assert "certificate verify failed" in result.output and "hint: check this host's tls: files" in result.output
