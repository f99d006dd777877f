"""Each host's clients carry its own endpoint and TLS files (building them contacts no engine); the Engine API client
verifies an engine against the host's CA only."""

from __future__ import annotations

import http.server
import json
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import DockerHosts, Engine, engine_info
from swarmkit.hosts.inventory import Host, Inventory, TlsFiles
from tests.integration.tls_certs import EngineCerts, authority, engine_certs

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
    plain = docker[PLAIN]  # its clients dial the host's socket forwarded over SSH (see test_ssh.py), opened by the first
    assert plain.address.startswith("unix://") and plain.tls is None
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

    class Recorded:
        def __init__(self, **settings: object) -> None:
            made.append(settings)

        def version(self, api_version: bool) -> dict:
            return {"ApiVersion": "1.41"}

    monkeypatch.setattr(docker, "APIClient", Recorded)
    secured = Engine.connect("tcp://a.example:2376", TlsFiles(*(str(files[n]) for n in ("ca", "cert", "key"))))
    plain = Engine.connect("unix:///run/x.sock")
    assert secured.api is secured.api and plain.api is not None and len(made) == 2  # one client per engine, kept
    tls = made[0]["tls"]
    assert made[0]["base_url"] == "tcp://a.example:2376" and secured.api._version == "1.41"
    assert (tls.verify, tls.ca_cert, tls.cert) == (True, str(files["ca"]), (str(files["cert"]), str(files["key"])))
    assert made[1]["base_url"] == "unix:///run/x.sock" and made[1]["tls"] is False


class EngineApiOverTls(http.server.BaseHTTPRequestHandler):
    """The two requests engine_info makes (the API version, then the engine's info), as a dockerd answers them."""

    def do_GET(self) -> None:  # noqa: N802  # the handler's name in http.server
        answer = {"ApiVersion": "1.41"} if self.path == "/version" else {"Name": "sw2", "ServerVersion": "28.2.2"}
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        """Quiet."""


@pytest.fixture
def tls_engine(tmp_path: Path) -> Iterator[tuple[str, EngineCerts]]:
    """An Engine API on 127.0.0.1 behind TLS that requires a client certificate from its CA, as dockerd --tlsverify."""
    certs = engine_certs(tmp_path / "certs", "127.0.0.1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), EngineApiOverTls)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certs.server.ca)
    context.load_cert_chain(certs.server.cert, certs.server.key)
    context.verify_mode = ssl.CERT_REQUIRED
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"tcp://127.0.0.1:{server.server_address[1]}", certs
    server.shutdown()


def test_an_engine_behind_tls_answers_a_client_with_the_hosts_files(
    tls_engine: tuple[str, EngineCerts], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A CA bundle named in the environment (as CI machines and corporate laptops do) does not replace the host's CA."""
    endpoint, certs = tls_engine
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(authority(tmp_path, "system").cert_path))
    assert engine_info(Engine.connect(endpoint, certs.client)).hostname == "sw2"


def test_a_wrong_ca_is_one_clear_error_naming_the_tls_files(tls_engine: tuple[str, EngineCerts], tmp_path: Path) -> None:
    endpoint, certs = tls_engine
    stranger = authority(tmp_path, "stranger")  # did not sign the engine's certificate
    wrong = TlsFiles(ca=str(stranger.cert_path), cert=certs.client.cert, key=certs.client.key)
    with pytest.raises(
        EngineError, match=f"the Docker engine at {endpoint} does not answer: .*certificate verify failed"
    ) as raised:
        engine_info(Engine.connect(endpoint, wrong))
    assert raised.value.hint.startswith("check this host's tls: files in the inventory")
