"""The sandbox is a real server group: engines, hostnames, addresses, reachability, firewall, teardown."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from swarmkit.errors import BrokerError, SandboxError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.kafka import admin
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import plumbing
from swarmkit.sandbox import status as sandbox_status
from swarmkit.sandbox.state import Sandbox, SandboxHost
from tests.integration.sandboxes import fresh_sandbox, in_host, leftovers, module_sandbox

pytestmark = pytest.mark.integration

NAME = "sbx"
BROKER = "sbx-broker"
METADATA_SCRIPT = """
import sys
from swarmkit.kafka import admin
brokers = admin.broker_metadata(sys.argv[1], timeout=float(sys.argv[2])).brokers
print(",".join(f"{b.host}:{b.port}" for b in brokers))
"""


sbx = module_sandbox(NAME, 3, "10.241.0.0/24")


def start_broker(host: SandboxHost, image: str) -> None:
    dockerapi.run_detached(host.docker, image, BROKER, env={"SWARMKIT_NODE_HOSTNAME": host.name}, host_ports=(9094,))


def metadata_from(host: SandboxHost, target: str, timeout: float = 5) -> str:
    """Ask for broker metadata from inside another host's network namespace."""
    result = in_host(host, sys.executable, "-c", METADATA_SCRIPT, target, str(timeout), timeout=timeout + 20)
    return result.stdout.strip() if result.returncode == 0 else f"failed: {result.stderr.strip()[-200:]}"


def test_three_engines_with_distinct_hostnames_and_addresses(sbx: Sandbox) -> None:
    infos = [dockerapi.engine_info(h.docker) for h in sbx.hosts]
    assert [i.hostname for i in infos] == ["sbx1", "sbx2", "sbx3"]
    assert len({h.address for h in sbx.hosts}) == 3
    assert all(i.swarm_state == "inactive" for i in infos)


def test_inventory_lists_the_hosts(sbx: Sandbox) -> None:
    document = yaml.safe_load(Path(sbx.inventory_path).read_text())
    assert [(h["name"], h["address"], h["role"]) for h in document["hosts"]] == [
        ("sbx1", "10.241.0.11", "manager"),
        ("sbx2", "10.241.0.12", "worker"),
        ("sbx3", "10.241.0.13", "worker"),
    ]
    assert all(h["endpoint"].startswith("unix://") for h in document["hosts"])
    assert document["stack"]["image"] == sbx.images["tansu"]


def test_broker_image_runs_on_every_host_and_advertises_its_name(sbx: Sandbox) -> None:
    for host in sbx.hosts:
        start_broker(host, sbx.images["tansu"])
    for host in sbx.hosts:
        brokers = admin.broker_metadata(f"{host.address}:9094", timeout=10).brokers
        assert [(b.host, b.port) for b in brokers] == [(host.name, 9094)]


def test_every_host_reaches_the_others(sbx: Sandbox) -> None:
    for source in sbx.hosts:
        for target in sbx.hosts:
            if source != target:
                assert metadata_from(source, f"{target.address}:9094") == f"{target.name}:9094"


def test_firewall_block_and_unblock(sbx: Sandbox) -> None:
    node1, node2 = sbx.host("sbx1"), sbx.host("sbx2")
    plumbing.firewall(NAME, "sbx2", "9094/tcp", block=True)
    try:
        with pytest.raises(BrokerError):
            admin.broker_metadata(f"{node2.address}:9094", timeout=3)
        assert metadata_from(node1, f"{node2.address}:9094", timeout=3).startswith("failed")
        assert sandbox_status.read(NAME).firewall == ("sbx2 9094/tcp",)
    finally:
        plumbing.firewall(NAME, "sbx2", "9094/tcp", block=False)
    assert metadata_from(node1, f"{node2.address}:9094") == "sbx2:9094"
    assert sandbox_status.read(NAME).firewall == ()


def test_add_node_gives_a_fourth_working_host(sbx: Sandbox) -> None:
    added = sandbox.add_node(NAME)
    assert (added.name, added.address) == ("sbx4", "10.241.0.14")
    assert dockerapi.engine_info(added.docker).hostname == "sbx4"
    start_broker(added, sbx.images["tansu"])
    assert metadata_from(sbx.host("sbx1"), f"{added.address}:9094") == "sbx4:9094"
    assert "sbx4" in Path(sbx.inventory_path).read_text()


def test_bad_input_changes_nothing(sbx: Sandbox) -> None:
    with pytest.raises(SandboxError, match="already exists"):
        sandbox.up(3, NAME, "sbx", "10.241.0.0/24", "/dev/null")
    with pytest.raises(SpecError, match="PORT/PROTO"):
        plumbing.firewall(NAME, "sbx1", "9094", block=True)
    with pytest.raises(SpecError, match="no host 'nope'"):
        plumbing.firewall(NAME, "nope", "9094/tcp", block=True)
    assert sandbox_status.read(NAME).firewall == ()


def test_down_removes_everything_after_a_half_finished_up(tmp_path: Path) -> None:
    """A crash after the bridge, one namespace and one engine exist: down still finds it all."""
    name = "crash"
    sandbox.down(name)
    half = Sandbox(name=name, subnet="10.242.0.0/24", prefix="crash", inventory_path=str(tmp_path / "i.yaml"))
    try:
        plumbing.create_bridge(half)
        host = sandbox._new_host(half, 1)
        plumbing.create_host_network(half, host)
        sandbox._start_engine(half, host)
        dockerapi.wait_until_ready(host.docker, 30)
        assert leftovers(name)
    finally:
        sandbox.down(name)
    assert leftovers(name) == []


def test_failed_up_cleans_up_after_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_images(_: Sandbox) -> Sandbox:
        raise SandboxError("image build failed on purpose")

    monkeypatch.setattr(sandbox, "publish_images", broken_images)
    with pytest.raises(SandboxError, match="on purpose"):
        sandbox.up(2, "fail", "fail", "10.243.0.0/24", str(tmp_path / "i.yaml"))
    assert leftovers("fail") == []


def test_down_leaves_nothing(tmp_path: Path) -> None:
    with fresh_sandbox("gone", 2, "10.244.0.0/24", "gone", tmp_path):
        assert len(leftovers("gone")) > 3
    assert leftovers("gone") == []
