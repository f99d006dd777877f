"""The KRaft quorum as a broker describes it: one DescribeQuorum request through kafka-python.

librdkafka has no DescribeQuorum, and Kafka's own ``kafka-metadata-quorum.sh`` costs a JVM start in a
controller container (about a second on a quiet machine, tens of seconds on a busy one). A broker forwards
the request to the active controller, so one exchange from here gives the leader and every voter's and
observer's log end offset and last caught-up time, in the same client security as the metadata probes
(TLS, mutual TLS, SCRAM over TLS). Failures raise ``BrokerError``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from swarmkit.errors import BrokerError
from swarmkit.security.settings import MECHANISM, ClientSecurity

METADATA_TOPIC = "__cluster_metadata"


@dataclass(frozen=True)
class Replica:
    node_id: int
    log_end_offset: int
    last_caught_up_ms: int  # -1: never
    directory_id: str = ""  # Kafka's base64url form; "" before KIP-853 (a static quorum)


@dataclass(frozen=True)
class QuorumState:
    leader: int
    high_watermark: int
    voters: tuple[Replica, ...]
    observers: tuple[Replica, ...]


def kafka_uuid(value: object) -> str:
    """A uuid as Kafka prints it (base64url, no padding); "" for none."""
    if value is None or value == "":
        return ""
    raw = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    return base64.urlsafe_b64encode(raw.bytes).decode("ascii").rstrip("=")


def _replicas(states: list[Mapping[str, Any]]) -> tuple[Replica, ...]:
    return tuple(
        Replica(
            s["replica_id"], s["log_end_offset"], s.get("last_caught_up_timestamp", -1), kafka_uuid(s.get("replica_directory_id"))
        )
        for s in states
    )


def quorum_state_from(answer: Mapping[str, Any]) -> QuorumState:
    """Pure: the metadata partition of a DescribeQuorum answer (kafka-python's dict of the response)."""
    partitions = [p for t in answer.get("topics", ()) if t.get("topic_name") == METADATA_TOPIC for p in t["partitions"]]
    if not partitions:
        raise BrokerError("the quorum description named no metadata partition")
    partition = partitions[0]
    if partition.get("error"):
        raise BrokerError(f"the quorum description failed for the metadata partition: {partition['error']}")
    voters, observers = _replicas(partition["current_voters"]), _replicas(partition["observers"])
    return QuorumState(partition["leader_id"], partition["high_watermark"], voters, observers)


@contextlib.contextmanager
def client_settings(security: ClientSecurity | None) -> Iterator[dict[str, Any]]:
    """kafka-python's security settings; a client certificate lives in a private file while the client runs
    (ssl loads one from files only)."""
    if security is None:
        yield {"security_protocol": "PLAINTEXT"}
        return
    context = ssl.create_default_context(cadata=security.ca_pem)
    context.check_hostname = security.verify_hostname
    settings: dict[str, Any] = {"security_protocol": security.protocol, "ssl_context": context}
    if security.protocol == "SASL_SSL":
        settings |= {"sasl_mechanism": MECHANISM, "sasl_plain_username": security.username}
        settings["sasl_plain_password"] = security.password
    with tempfile.TemporaryDirectory(prefix="swarmkit-tls-") as scratch:
        if security.client is not None:
            pem = os.path.join(scratch, "client.pem")
            with open(os.open(pem, os.O_WRONLY | os.O_CREAT, 0o600), "w") as out:
                out.write(security.client.cert_pem + security.client.key_pem)
            context.load_cert_chain(pem)
        yield settings


def _failures() -> tuple[type[Exception], ...]:
    """What a request through kafka-python raises when it gets no answer (an ``except`` evaluates it only when
    something was raised)."""
    from kafka.errors import KafkaError

    return (KafkaError, OSError, ssl.SSLError)


@contextlib.contextmanager
def _admin(host: str, port: int, timeout: float, security: ClientSecurity | None) -> Iterator[Any]:
    """A kafka-python admin client of the broker at host:port, bounded by ``timeout``; closed afterwards.  The
    library (a quarter of a second of imports) is imported here, when a command first asks, not when a command's
    module is loaded: one that never reads the quorum never pays for it."""
    from kafka.admin import KafkaAdminClient

    milliseconds = max(1, int(timeout * 1000))
    with client_settings(security) as settings:
        client = KafkaAdminClient(
            bootstrap_servers=f"{host}:{port}",
            client_id="swarmkit",
            request_timeout_ms=milliseconds,
            bootstrap_timeout_ms=milliseconds,
            **settings,
        )
        try:
            yield client
        finally:
            client.close()


def describe_quorum(host: str, port: int, timeout: float, security: ClientSecurity | None = None) -> QuorumState:
    """Ask the broker at host:port to describe the KRaft quorum, within about ``timeout`` seconds."""
    try:
        with _admin(host, port, timeout, security) as client:
            answer = client.describe_metadata_quorum()
    except _failures() as error:
        raise BrokerError(f"no quorum description from {host}:{port}: {error or type(error).__name__}") from None
    return quorum_state_from(answer)


# --- finalized features (KIP-584): metadata.version and the others a release brings -----------------


@dataclass(frozen=True)
class Features:
    """What one broker says: each feature's finalized level (the cluster's) and the range this broker's software
    supports (its own)."""

    finalized: dict[str, int]
    supported: dict[str, tuple[int, int]]

    @property
    def metadata_level(self) -> int:
        return self.finalized.get(METADATA_VERSION, 0)


METADATA_VERSION = "metadata.version"


def features_from(answer: Mapping[str, Mapping[str, Any]]) -> Features:
    """Pure: kafka-python's describe_features answer ({feature: {'supported': (min, max), 'finalized': (min, max)}})."""
    finalized = {name: int(entry["finalized"][1]) for name, entry in answer.items() if entry.get("finalized")}
    supported = {
        name: (int(entry["supported"][0]), int(entry["supported"][1])) for name, entry in answer.items() if entry.get("supported")
    }
    return Features(finalized, supported)


def describe_features(host: str, port: int, timeout: float, security: ClientSecurity | None = None) -> Features:
    """The finalized feature levels and the answering broker's supported ranges (ApiVersions, as
    ``kafka-features.sh describe`` reads them)."""
    try:
        with _admin(host, port, timeout, security) as client:
            answer = client.describe_features()
    except _failures() as error:
        raise BrokerError(f"no feature levels from {host}:{port}: {error or type(error).__name__}") from None
    return features_from(answer)


def update_features(
    host: str, port: int, levels: Mapping[str, int], timeout: float, security: ClientSecurity | None = None
) -> None:
    """Raise each feature to its level (UpdateFeatures to the active controller, as ``kafka-features.sh upgrade``
    does); the controller refuses a level some broker or controller does not support.  BrokerError naming each
    refusal."""
    try:
        with _admin(host, port, timeout, security) as client:
            results = client.update_features(dict(levels), timeout_ms=max(1, int(timeout * 1000)))
    except _failures() as error:
        raise BrokerError(
            f"raising {', '.join(f'{k} to {v}' for k, v in levels.items())} through {host}:{port} failed: {error or type(error).__name__}",
            hint="every broker and controller must run the new version; see `swarmkit status`, then run it again",
        ) from None
    refused = [f"{name}: {result}" for name, result in results.items() if result != "OK"]
    if refused:
        raise BrokerError(f"the controller refused: {'; '.join(refused)}", hint="see `swarmkit status`; run it again once fixed")
