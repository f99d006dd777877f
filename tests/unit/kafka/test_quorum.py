"""DescribeQuorum on the wire: a fake broker on a local socket answers as Kafka does (plain, and after a SCRAM login)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import socket
import struct
import threading

import pytest

from swarmkit.checks import health
from swarmkit.errors import BrokerError
from swarmkit.kafka import quorum
from swarmkit.security.settings import ClientSecurity

NOW = 1_800_000_000_000
SALT, ITERATIONS, PASSWORD = b"salt-of-the-test", 4096, "s3cret"


def _compact(items: list[bytes]) -> bytes:
    return bytes([len(items) + 1]) + b"".join(items)


def _replica(node_id: int, end: int, caught_up: int) -> bytes:
    return struct.pack(">iqqq", node_id, end, caught_up, caught_up) + b"\x00"


def describe_response(error: int = 0) -> bytes:
    """A DescribeQuorum v1 body: leader 9001, voter 9003 a minute behind, one observer."""
    voters = [_replica(9002, 4211, NOW - 400), _replica(9001, 4211, NOW), _replica(9003, 3900, NOW - 60_000)]
    partition = struct.pack(">ihiiq", 0, error, 9001, 7, 4211) + _compact(voters) + _compact([_replica(1, 4211, NOW)]) + b"\x00"
    topic = bytes([len(quorum.METADATA_TOPIC) + 1]) + quorum.METADATA_TOPIC.encode() + _compact([partition]) + b"\x00"
    return struct.pack(">h", 0) + _compact([topic]) + b"\x00"


def _read_request(conn: socket.socket) -> tuple[int, int, bytes]:
    (size,) = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))
    data = conn.recv(size, socket.MSG_WAITALL)
    api_key, _version, correlation, client_len = struct.unpack_from(">hhih", data)
    return api_key, correlation, data[10 + client_len :]


def _answer(conn: socket.socket, correlation: int, body: bytes, flexible: bool) -> None:
    payload = struct.pack(">i", correlation) + (b"\x00" if flexible else b"") + body
    conn.sendall(struct.pack(">i", len(payload)) + payload)


def _scram_server(conn: socket.socket) -> bool:
    """The broker's side of SCRAM-SHA-512: checks the client's proof, signs the exchange."""
    _, correlation, _ = _read_request(conn)
    _answer(conn, correlation, struct.pack(">h", 0) + struct.pack(">i", 1) + struct.pack(">h", 13) + b"SCRAM-SHA-512", False)
    _, correlation, body = _read_request(conn)
    first_bare = body[4:].decode()[3:]
    nonce = dict(f.split("=", 1) for f in first_bare.split(","))["r"] + "server"
    server_first = f"r={nonce},s={base64.b64encode(SALT).decode()},i={ITERATIONS}"
    _answer(conn, correlation, struct.pack(">hh", 0, -1) + struct.pack(">i", len(server_first)) + server_first.encode(), False)
    _, correlation, body = _read_request(conn)
    final = body[4:].decode()
    without_proof, proof = final.rsplit(",p=", 1)
    salted = hashlib.pbkdf2_hmac("sha512", PASSWORD.encode(), SALT, ITERATIONS)
    message = f"{first_bare},{server_first},{without_proof}".encode()
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    signature = hmac.digest(hashlib.sha512(client_key).digest(), message, "sha512")
    if base64.b64decode(proof) != bytes(a ^ b for a, b in zip(client_key, signature)):
        _answer(conn, correlation, struct.pack(">hh", 58, 7) + b"refused" + struct.pack(">i", 0), False)
        return False
    server_final = "v=" + base64.b64encode(hmac.digest(hmac.digest(salted, b"Server Key", "sha512"), message, "sha512")).decode()
    _answer(conn, correlation, struct.pack(">hh", 0, -1) + struct.pack(">i", len(server_final)) + server_final.encode(), False)
    return True


def fake_broker(login: bool, error: int = 0) -> int:
    """A one-connection broker on localhost; returns its port."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        conn, _ = server.accept()
        with conn, server:
            if login and not _scram_server(conn):
                return
            api_key, correlation, _ = _read_request(conn)
            assert api_key == quorum.DESCRIBE_QUORUM
            _answer(conn, correlation, describe_response(error), True)

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def test_a_described_quorum_reads_as_the_tool_prints_it() -> None:
    state = quorum.describe_quorum("127.0.0.1", fake_broker(login=False), 5.0)
    members = health.quorum_from_state(state, NOW)
    assert members.leader == 9001
    assert [(v.node_id, v.status) for v in members.voters] == [(9001, "Leader"), (9002, "Follower"), (9003, "Follower")]
    assert [(o.node_id, o.status, o.lag) for o in members.observers] == [(1, "Observer", 0)]
    assert [(v.node_id, v.lag, v.caught_up_ms_ago) for v in members.lagging] == [(9003, 311, 60_000)]


def test_a_scram_login_comes_first_and_checks_the_broker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quorum, "_tls", lambda sock, host, security: sock)  # the login, not TLS, is under test
    security = ClientSecurity("SASL_SSL", ca_pem="", username="admin", password=PASSWORD)
    assert quorum.describe_quorum("127.0.0.1", fake_broker(login=True), 5.0, security).leader == 9001
    wrong = ClientSecurity("SASL_SSL", ca_pem="", username="admin", password="not-it")
    with pytest.raises(BrokerError, match="login failed: refused"):
        quorum.describe_quorum("127.0.0.1", fake_broker(login=True), 5.0, wrong)


def test_a_refused_description_and_a_closed_port_are_broker_errors() -> None:
    with pytest.raises(BrokerError, match="CLUSTER_AUTHORIZATION_FAILED"):
        quorum.describe_quorum("127.0.0.1", fake_broker(login=False, error=31), 5.0)
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(BrokerError, match="no quorum description from 127.0.0.1"):
        quorum.describe_quorum("127.0.0.1", port, 1.0)
