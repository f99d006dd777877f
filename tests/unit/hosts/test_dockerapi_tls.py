"""Each host's client carries its own endpoint and TLS files; building them contacts no engine."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import DockerHosts, Engine
from swarmkit.hosts.inventory import Host, Inventory, TlsFiles

TLS = TlsFiles(ca="/certs/ca.pem", cert="/certs/cert.pem", key="/certs/key.pem")
SECURED = Host("a", "tcp://a.example:2376", "10.0.0.1", "manager", tls=TLS)
PLAIN = Host("b", "ssh://ops@b.example", "10.0.0.2", "worker")


def test_tls_material_reaches_the_client_of_that_host_only() -> None:
    docker = DockerHosts.from_inventory(Inventory(hosts=(SECURED, PLAIN)))
    secured = docker[SECURED].client.client_config
    assert (secured.host, secured.tlsverify, str(secured.tlscacert), str(secured.tlscert), str(secured.tlskey)) == (
        "tcp://a.example:2376",
        True,
        "/certs/ca.pem",
        "/certs/cert.pem",
        "/certs/key.pem",
    )
    plain = docker[PLAIN].client.client_config  # the host's socket forwarded over SSH (see test_ssh.py)
    assert str(plain.host).startswith("unix://") and not plain.tlsverify and plain.tlscacert is None
    docker.close()


def test_the_same_endpoint_in_two_inventories_keeps_each_inventorys_tls() -> None:
    """What a client uses depends only on the DockerHosts it came from, never on what was built before."""
    with_tls = DockerHosts.from_inventory(Inventory(hosts=(SECURED,)))
    without = DockerHosts.from_inventory(
        Inventory(hosts=(Host("a", "tcp://a.example:2376", "10.0.0.1", "manager", insecure=True),))
    )
    assert with_tls[SECURED].client.client_config.tlsverify
    assert not without.engines["a"].client.client_config.tlsverify


def test_a_host_of_another_inventory_is_a_clear_error() -> None:
    docker = DockerHosts.from_inventory(Inventory(hosts=(SECURED,)))
    with pytest.raises(EngineError, match="no Docker client for host b") as raised:
        docker[PLAIN]
    assert "same inventory" in raised.value.hint
    moved = Host("a", "tcp://elsewhere.example:2376", "10.0.0.1", "manager", tls=TLS)
    with pytest.raises(EngineError, match="no Docker client for host a"):
        docker[moved]


def test_an_engine_without_tls_is_a_plain_client() -> None:
    engine = Engine.connect("unix:///run/x.sock")
    assert engine.endpoint == "unix:///run/x.sock" and not engine.client.client_config.tlsverify
    assert engine == Engine.connect("unix:///run/x.sock")


def test_the_engine_api_client_verifies_the_engine_with_the_hosts_tls_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    files = {name: tmp_path / f"{name}.pem" for name in ("ca", "cert", "key")}
    for path in files.values():
        path.write_text("not read until a connection is made")
    made: list[dict] = []
    monkeypatch.setattr(docker, "APIClient", lambda **settings: made.append(settings) or object())
    secured = Engine.connect("tcp://a.example:2376", TlsFiles(*(str(files[n]) for n in ("ca", "cert", "key"))))
    plain = Engine.connect("unix:///run/x.sock")
    assert secured.api is secured.api and plain.api is not None and len(made) == 2  # one client per engine, kept
    tls = made[0]["tls"]
    assert made[0]["base_url"] == "tcp://a.example:2376" and made[0]["version"] == "auto"
    assert (tls.verify, tls.ca_cert, tls.cert) == (True, str(files["ca"]), (str(files["cert"]), str(files["key"])))
    assert made[1]["base_url"] == "unix:///run/x.sock" and made[1]["tls"] is False
