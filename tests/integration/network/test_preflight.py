"""Preflight on a real 3-host sandbox: real traffic through simulated firewalls, real port squatters."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace

import pytest

from swarmkit.errors import PreflightError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine
from swarmkit.hosts.inventory import Host, Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.images import shipping
from swarmkit.images.image import PROBE_TAG
from swarmkit.network import preflight
from swarmkit.network.preflight import CLIENT, IN_USE_BY_SWARM, PROBE_LABEL_FILTER, run_preflight
from swarmkit.ops import deploy
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import plumbing
from swarmkit.sandbox.state import Sandbox
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

NAME = "pf"


pf = module_sandbox(NAME, 3, "10.232.0.0/24")


@pytest.fixture(scope="module")
def inventory(pf: Sandbox) -> Inventory:
    return load_inventory(pf.inventory_path)


@pytest.fixture(scope="module")
def docker(inventory: Inventory) -> DockerHosts:
    return DockerHosts.from_inventory(inventory)


@contextlib.contextmanager
def blocked(host: str, port: str) -> Iterator[None]:
    plumbing.firewall(NAME, host, port, block=True)
    try:
        yield
    finally:
        plumbing.firewall(NAME, host, port, block=False)


def probe_containers(inventory: Inventory, docker: DockerHosts) -> int:
    return sum(len(docker[h].client.container.list(all=True, filters=[("label", PROBE_LABEL_FILTER)])) for h in inventory.hosts)


def test_fresh_hosts_pass(inventory, docker):
    report = run_preflight(inventory, docker=docker)
    assert report.ok, report.failures
    assert [e.host for e in report.engines] == ["pf1", "pf2", "pf3"]
    assert all(e.version and e.swarm_state == "inactive" for e in report.engines)
    reached = {(c.from_, c.to, c.port, c.protocol) for c in report.checks if c.check == "reachable" and c.status == "ok"}
    assert ("pf2", "pf1", 2377, "tcp") in reached and ("pf3", "pf2", 4789, "udp") in reached
    assert (CLIENT, "pf3", 9094, "tcp") in reached
    assert len(reached) == len(preflight.plan_probes(inventory.hosts, report.ports))
    assert probe_containers(inventory, docker) == 0


def test_without_a_probe_image_swarmkit_builds_its_own_on_every_host(inventory, docker):
    """Real servers need no registry for preflight: the probe image is built through each host's endpoint."""
    for host in inventory.hosts:
        if dockerapi.has_image(docker[host], PROBE_TAG):  # a local tag: the sandbox's probe image has its registry's name
            docker[host].client.image.remove(PROBE_TAG, force=True)
    bare = replace(inventory, stack=replace(inventory.stack, probe_image=""))
    with pytest.raises(PreflightError, match="probe_image"):
        run_preflight(bare, docker=docker)
    provided = shipping.with_probe_image(bare, docker)
    assert provided.stack.probe_image == PROBE_TAG
    assert all(dockerapi.has_image(docker[h], PROBE_TAG) for h in inventory.hosts)
    report = run_preflight(provided, docker=docker)
    assert report.ok, report.failures


def test_image_push_loads_an_image_on_every_host_that_lacks_it(inventory, docker):
    for host in inventory.hosts[1:]:
        if dockerapi.has_image(docker[host], PROBE_TAG):
            docker[host].client.image.remove(PROBE_TAG, force=True)
    local = Engine.connect("unix:///var/run/docker.sock")  # this machine's engine, which scripts/setup.sh starts
    first = shipping.push_image(inventory, docker, local, PROBE_TAG)
    assert [(d.host, d.action) for d in first.deliveries][1:] == [("pf2", "loaded"), ("pf3", "loaded")]
    assert all(dockerapi.has_image(docker[h], PROBE_TAG) for h in inventory.hosts)
    again = shipping.push_image(inventory, docker, local, PROBE_TAG)
    assert {d.action for d in again.deliveries} == {"present"} and not again.built_here


def test_a_failed_preflight_ships_nothing(inventory, docker):
    """No registry serves swarmkit's own images, so up ships them from this machine, but only once
    preflight passed, while the swarm forms (the small probe image stands in for the broker's; the
    shipment itself is `image push`'s, tested above)."""
    for host in inventory.hosts[1:]:
        if dockerapi.has_image(docker[host], PROBE_TAG):
            docker[host].client.image.remove(PROBE_TAG, force=True)
    local = Engine.connect("unix:///var/run/docker.sock")
    with blocked("pf3", "9094/tcp"), pytest.raises(PreflightError, match="9094"):
        deploy.up(plan(inventory, DeployOptions(image=PROBE_TAG)), Session.of(inventory, docker=docker, local=local))
    assert [h.name for h in inventory.hosts if dockerapi.has_image(docker[h], PROBE_TAG)] == ["pf1"]
    assert {dockerapi.engine_info(docker[h]).swarm_state for h in inventory.hosts} == {"inactive"}


@pytest.mark.parametrize(
    "port, sources",
    [("4789/udp", {"pf1", "pf2"}), ("7946/tcp", {"pf1", "pf2"}), ("9094/tcp", {"pf1", "pf2", CLIENT})],
)
def test_blocked_port_names_host_port_and_the_hosts_that_could_not_reach_it(inventory, docker, port, sources):
    with blocked("pf3", port):
        report = run_preflight(inventory, docker=docker)
    number, protocol = port.split("/")
    assert not report.ok
    said = [(f.from_, f.to, f.port, f.detail) for f in report.failures]
    assert {(f.check, f.to, f.port, f.protocol) for f in report.failures} == {("reachable", "pf3", int(number), protocol)}, said
    assert {f.from_ for f in report.failures} == sources
    purpose = next(p.purpose for p in report.ports if p.key == port)
    assert (
        report.failures[0].fix
        == f"open {port} inbound on pf3 from {', '.join(sorted(sources - {CLIENT}) + sorted(sources & {CLIENT}))} ({purpose})"
    )
    assert report.to_dict()["failures"][0]["to"] == "pf3"
    assert probe_containers(inventory, docker) == 0


@pytest.mark.parametrize("port", ["4789/udp", "7946/tcp", "9094/tcp"])
def test_up_changes_no_host_when_preflight_fails(inventory, docker, port):
    with blocked("pf3", port):
        with pytest.raises(PreflightError, match=f"pf3.*{port}|{port}.*pf3"):
            deploy.up(plan(inventory, DeployOptions(topics="t:1:1")), Session.of(inventory, docker=docker))
    assert {dockerapi.engine_info(docker[h]).swarm_state for h in inventory.hosts} == {"inactive"}
    assert all(not docker[h].client.volume.list() for h in inventory.hosts)


def test_port_held_by_another_process_is_named(pf, inventory, docker):
    host = pf.host("pf2")
    squatter = subprocess.Popen(
        ["nsenter", f"--net=/var/run/netns/{host.netns}", "socat", "TCP-LISTEN:9092,reuseaddr,fork", "EXEC:/bin/true"]
    )
    try:
        time.sleep(0.3)
        report = run_preflight(inventory, docker=docker)
    finally:
        squatter.kill()
        squatter.wait()
    (failure,) = report.failures
    assert (failure.check, failure.to, failure.port, failure.protocol) == ("port_free", "pf2", 9092, "tcp")
    assert failure.detail.startswith("port 9092/tcp on pf2 is already in use by another process")
    assert probe_containers(inventory, docker) == 0


def test_swarm_ports_of_a_member_are_noted_not_failed(inventory, docker):
    manager = inventory.host("pf1")
    dockerapi.swarm_init(docker[manager], manager.address)
    try:
        report = run_preflight(inventory, docker=docker)
    finally:
        dockerapi.swarm_leave(docker[manager], force=True)
    assert report.ok, report.failures
    notes = {(c.to, c.port, c.protocol) for c in report.checks if c.check == "port_free" and c.detail == IN_USE_BY_SWARM}
    # 4789/udp is held only once dockerd has created the ingress VXLAN device, a moment after init
    assert notes - {("pf1", 4789, "udp")} == {("pf1", 2377, "tcp"), ("pf1", 7946, "tcp"), ("pf1", 7946, "udp")}
    engine = next(e for e in report.engines if e.host == "pf1")
    assert engine.swarm_state == "active" and engine.swarm_cluster_id


def test_unreachable_engine_is_named_and_the_rest_still_probed(inventory, tmp_path):
    ghost = Host("pf9", f"unix://{tmp_path}/missing.sock", "10.232.0.99", "worker")
    with_ghost = replace(inventory, hosts=inventory.hosts + (ghost,))
    report = run_preflight(with_ghost, docker=DockerHosts.from_inventory(with_ghost))
    (failure,) = report.failures
    assert (failure.check, failure.to) == ("engine", "pf9") and str(tmp_path) in failure.fix
    assert any(c.check == "reachable" and c.status == "ok" for c in report.checks)


def test_probe_containers_are_removed_when_interrupted(inventory, docker, monkeypatch):
    def interrupt(*args, **kwargs):
        assert probe_containers(inventory, docker) == 3  # the listeners are up
        raise KeyboardInterrupt

    monkeypatch.setattr(preflight, "_reachability", interrupt)
    with pytest.raises(KeyboardInterrupt):
        run_preflight(inventory, docker=docker)
    assert probe_containers(inventory, docker) == 0
