"""The KRaft quorum as a broker describes it: one DescribeQuorum request on Kafka's wire protocol.

librdkafka has no DescribeQuorum, and Kafka's own ``kafka-metadata-quorum.sh`` costs a JVM start in
a controller container (about a second on a quiet machine, tens of seconds on a busy one). A broker
forwards the request to the active controller, so one TCP exchange from here gives the leader and
every voter's and observer's log end offset and last caught-up time, in the same client security
as the metadata probes (TLS, mutual TLS, SCRAM over TLS). Failures raise ``BrokerError``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
import tempfile
from dataclasses import dataclass

from swarmkit.errors import BrokerError
from swarmkit.security.settings import MECHANISM, ClientSecurity

METADATA_TOPIC = "__cluster_metadata"
DESCRIBE_QUORUM, DESCRIBE_QUORUM_VERSION = 55, 1  # v1: flexible, with the replicas' fetch and caught-up times
SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36  # both at version 1 (classic encoding)
CLIENT_ID = b"swarmkit"


@dataclass(frozen=True)
class Replica:
    node_id: int
    log_end_offset: int
    last_caught_up_ms: int  # -1: never


@dataclass(frozen=True)
class QuorumState:
    leader: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]


# --- encoding -------------------------------------------------------------------------------


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def _header(api_key: int, version: int, correlation: int, flexible: bool) -> bytes:
    head = struct.pack(">hhih", api_key, version, correlation, len(CLIENT_ID)) + CLIENT_ID
    return head + (b"\x00" if flexible else b"")  # a flexible request header ends with its (empty) tagged fields


def _request_body() -> bytes:
    """Partition 0 of the metadata topic: the one quorum."""
    topic = _uvarint(len(METADATA_TOPIC) + 1) + METADATA_TOPIC.encode()
    partitions = _uvarint(2) + struct.pack(">i", 0) + b"\x00"
    return _uvarint(2) + topic + partitions + b"\x00" + b"\x00"


class _Reader:
    """Reads one response body, field by field."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def raw(self, size: int) -> bytes:
        self.at += size
        return self.data[self.at - size : self.at]

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.raw(self.uvarint())

    def compact_count(self) -> int:
        return max(0, self.uvarint() - 1)


def _replicas(reader: _Reader) -> tuple[Replica, ...]:
    found = []
    for _ in range(reader.compact_count()):
        node_id, end = reader.take(">i"), reader.take(">q")
        reader.take(">q")  # last fetch
        found.append(Replica(node_id, end, reader.take(">q")))
        reader.skip_tags()
    return tuple(found)


def parse_describe_quorum(body: bytes) -> QuorumState:
    """A DescribeQuorum v1 response body (after the correlation id and header tags)."""
    reader = _Reader(body)
    _check(reader.take(">h"), "the request")
    states = []
    for _ in range(reader.compact_count()):
        reader.raw(reader.compact_count())  # the topic's name
        for _ in range(reader.compact_count()):
            reader.take(">i")  # the partition
            _check(reader.take(">h"), "the metadata partition")
            leader, _epoch, high_watermark = reader.take(">i"), reader.take(">i"), reader.take(">q")
            states.append(QuorumState(leader, high_watermark, _replicas(reader), _replicas(reader)))
            reader.skip_tags()
        reader.skip_tags()
    if not states:
        raise BrokerError("the quorum description named no metadata partition")
    return states[0]


ERRORS = {
    6: "NOT_LEADER_OR_FOLLOWER",
    31: "CLUSTER_AUTHORIZATION_FAILED",
    35: "UNSUPPORTED_VERSION",
    58: "SASL_AUTHENTICATION_FAILED",
}


def _check(code: int, what: str) -> None:
    if code:
        raise BrokerError(f"the quorum description failed for {what}: error {code} ({ERRORS.get(code, 'see Kafka error codes')})")


# --- one connection -------------------------------------------------------------------------


class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.correlation = sock, 0

    def call(self, api_key: int, version: int, body: bytes, flexible: bool) -> bytes:
        """Send one request, return its response body (the header's correlation id and tags read)."""
        self.correlation += 1
        request = _header(api_key, version, self.correlation, flexible) + body
        self.sock.sendall(struct.pack(">i", len(request)) + request)
        reader = _Reader(self._exactly(struct.unpack(">i", self._exactly(4))[0]))
        if reader.take(">i") != self.correlation:
            raise BrokerError("the broker answered another request (correlation id mismatch)")
        if flexible:
            reader.skip_tags()
        return reader.data[reader.at :]

    def _exactly(self, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise BrokerError("the broker closed the connection before answering")
            data += chunk
        return data


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def _tls(sock: socket.socket, host: str, security: ClientSecurity) -> socket.socket:
    context = ssl.create_default_context(cadata=security.ca_pem)
    context.check_hostname = security.verify_hostname
    if security.client is not None:  # ssl loads a client certificate from files only
        with tempfile.TemporaryDirectory(prefix="swarmkit-tls-") as scratch:
            pem = os.path.join(scratch, "client.pem")
            with open(os.open(pem, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
                out.write(security.client.cert_pem + security.client.key_pem)
            context.load_cert_chain(pem)
    return context.wrap_socket(sock, server_hostname=host)


def _scram_login(connection: _Connection, username: str, password: str) -> None:
    """SCRAM-SHA-512 (RFC 5802) through SaslHandshake and SaslAuthenticate; the server's signature is checked."""
    reader = _Reader(connection.call(SASL_HANDSHAKE, 1, _string(MECHANISM), False))
    _check(reader.take(">h"), f"the {MECHANISM} handshake")
    nonce = base64.b64encode(os.urandom(24)).decode()
    first_bare = f"n={username.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
    server_first = _authenticate(connection, f"n,,{first_bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    if not fields.get("r", "").startswith(nonce):
        raise BrokerError("the broker's SCRAM answer does not continue this login")
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), base64.b64decode(fields["s"]), int(fields["i"]))
    final_bare = f"c=biws,r={fields['r']}"
    message = f"{first_bare},{server_first},{final_bare}".encode()
    client_key = hmac.digest(salted, b"Client Key", "sha512")
    signature = hmac.digest(hashlib.sha512(client_key).digest(), message, "sha512")
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature))).decode()
    server_final = _authenticate(connection, f"{final_bare},p={proof}".encode()).decode()
    expected = hmac.digest(hmac.digest(salted, b"Server Key", "sha512"), message, "sha512")
    if server_final != f"v={base64.b64encode(expected).decode()}":
        raise BrokerError("the broker's SCRAM signature is wrong: this is not the cluster's broker")


def _authenticate(connection: _Connection, token: bytes) -> bytes:
    reader = _Reader(connection.call(SASL_AUTHENTICATE, 1, struct.pack(">i", len(token)) + token, False))
    code, size = reader.take(">h"), reader.take(">h")
    said = reader.raw(size).decode() if size > 0 else ""
    if code:
        raise BrokerError(f"the {MECHANISM} login failed: {said or ERRORS.get(code, code)}")
    return reader.raw(reader.take(">i"))


def describe_quorum(host: str, port: int, timeout: float, security: ClientSecurity | None = None) -> QuorumState:
    """Ask the broker at host:port to describe the KRaft quorum; every socket step bounded by ``timeout``."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as raw:
            sock = _tls(raw, host, security) if security else raw
            connection = _Connection(sock)
            if security and security.protocol == "SASL_SSL":
                _scram_login(connection, security.username, security.password)
            body = connection.call(DESCRIBE_QUORUM, DESCRIBE_QUORUM_VERSION, _request_body(), True)
    except (OSError, ssl.SSLError, struct.error, IndexError, ValueError) as error:
        raise BrokerError(f"no quorum description from {host}:{port}: {error or type(error).__name__}") from None
    return parse_describe_quorum(body)
