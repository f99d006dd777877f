"""Client quotas (KIP-546): DescribeClientQuotas and AlterClientQuotas, sent through kafka-python.

Neither librdkafka (so confluent-kafka's AdminClient) nor kafka-python's KafkaAdminClient offers these two
requests in the installed versions, but kafka-python has both messages (``kafka.protocol.admin``) and the
client its admin client is built on (``KafkaNetClient``) sends any request to a broker, which forwards an
alteration to the active controller. A quota's client is its entity: ``(("user", NAME),)``,
``(("client-id", ID),)`` or both pairs; only named entities are read (Kafka's default entities and IP
quotas are not swarmkit's). Failures raise ``BrokerError``.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import Iterator, Mapping
from typing import Any

import kafka.errors as kafka_errors
import kafka.net.compat as kafka_net
import kafka.protocol.admin as kafka_protocol

from swarmkit.errors import BrokerError
from swarmkit.kafka.quorum import client_settings
from swarmkit.security.settings import ClientSecurity

Entity = tuple[tuple[str, str], ...]  # (entity type, name) pairs, user first
ENTITY_TYPES = ("user", "client-id")


def entity_of(pairs: list[tuple[str, str | None]]) -> Entity | None:
    """Pure: the entity of a response's pairs, in swarmkit's order; None for one that is not swarmkit's (a
    default entity, an IP quota)."""
    if not pairs or any(kind not in ENTITY_TYPES or name is None for kind, name in pairs):
        return None
    return tuple(sorted(((kind, name) for kind, name in pairs if name is not None), key=lambda p: ENTITY_TYPES.index(p[0])))


def quotas_from(answer: Mapping[str, Any]) -> dict[Entity, dict[str, float]]:
    """Pure: a DescribeClientQuotas answer (kafka-python's dict of it) as each named client's rates."""
    if answer.get("error_code"):
        raise BrokerError(f"describing client quotas failed: {answer.get('error_message') or answer['error_code']}")
    found = {}
    for entry in answer.get("entries") or ():
        entity = entity_of([(e["entity_type"], e["entity_name"]) for e in entry["entity"]])
        if entity is not None:
            found[entity] = {v["key"]: float(v["value"]) for v in entry["values"]}
    return found


def alteration(changes: Mapping[Entity, Mapping[str, float | None]]) -> list[Any]:
    """The AlterClientQuotas entries of ``changes``: each client's rates set, or removed where the value is None."""
    request = kafka_protocol.AlterClientQuotasRequest
    return [
        request.EntryData(
            entity=[request.EntryData.EntityData(entity_type=kind, entity_name=name) for kind, name in entity],
            ops=[request.EntryData.OpData(key=key, value=value or 0.0, remove=value is None) for key, value in rates.items()],
        )
        for entity, rates in changes.items()
    ]


@contextlib.contextmanager
def _exchange(bootstrap: str, timeout: float, security: ClientSecurity | None) -> Iterator[Any]:
    """Sends one request to a broker of the cluster and returns its answer, within about ``timeout`` seconds."""
    milliseconds = max(1, int(timeout * 1000))
    with client_settings(security) as settings:
        client = kafka_net.KafkaNetClient(
            bootstrap_servers=bootstrap, client_id="swarmkit", request_timeout_ms=milliseconds, **settings
        )
        try:
            client.check_version(timeout_ms=milliseconds)
            node = client.least_loaded_node(bootstrap_fallback=True)
            yield lambda request: client.send_and_receive(node, request, timeout_ms=milliseconds)
        except (kafka_errors.KafkaError, OSError, ssl.SSLError) as error:
            raise BrokerError(
                f"client quotas through {bootstrap}: {error or type(error).__name__}",
                hint="check that the brokers run; run it again",
            ) from None
        finally:
            client.close()


def describe_quotas(bootstrap: str, timeout: float, security: ClientSecurity | None = None) -> dict[Entity, dict[str, float]]:
    """Every named client's quotas the cluster holds."""
    with _exchange(bootstrap, timeout, security) as send:
        answer = send(kafka_protocol.DescribeClientQuotasRequest(components=[], strict=False))
    return quotas_from(answer.to_dict())


def alter_quotas(
    bootstrap: str, changes: Mapping[Entity, Mapping[str, float | None]], timeout: float, security: ClientSecurity | None = None
) -> None:
    """Set (a value) or remove (None) each client's rates; the brokers apply them live. BrokerError naming each
    refusal."""
    if not changes:
        return
    with _exchange(bootstrap, timeout, security) as send:
        answer = send(kafka_protocol.AlterClientQuotasRequest(entries=alteration(changes), validate_only=False)).to_dict()
    refused = [
        f"{'/'.join(e['entity_name'] or '' for e in entry['entity'])}: {entry['error_message'] or entry['error_code']}"
        for entry in answer["entries"]
        if entry["error_code"]
    ]
    if refused:
        raise BrokerError(f"the brokers refused client quotas: {'; '.join(refused)}", hint="fix stack.quotas and run up again")
