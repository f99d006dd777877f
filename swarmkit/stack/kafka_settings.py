"""A listener plan as Kafka properties (pure): what a broker or controller process is told.

Hosts default to the placeholders the entrypoint fills in per node; tests and checks pass real ones.
"""

from __future__ import annotations

from enum import StrEnum

from swarmkit.security.settings import (
    ADMIN_USER,
    CA_TARGET,
    INTERNAL_NAME,
    INTERNAL_TARGET,
    MECHANISM,
    SCRAM_LOGIN,
    secret_path,
)
from swarmkit.stack.listeners import ADVERTISED_HOST, INTERNAL_HOST, ListenerPlan

AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


class KafkaRole(StrEnum):
    """What a KRaft process is (``process.roles``): the stacks run each role in its own process."""

    BROKER = "broker"
    CONTROLLER = "controller"


def listeners_setting(plan: ListenerPlan, role: KafkaRole = KafkaRole.BROKER) -> str:
    """``listeners`` for a ``broker`` or ``controller`` process."""
    served = plan.broker_listeners() if role == KafkaRole.BROKER else plan.controller_listeners()
    return ",".join(item.bind() for item in served)


def advertised_listeners(plan: ListenerPlan, advertised_host: str = ADVERTISED_HOST, internal_host: str = INTERNAL_HOST) -> str:
    """``advertised.listeners``: the external listener with this node's address, the others with
    the broker's name on the overlay."""
    return ",".join(
        plan.listener(name).advertise(advertised_host if name == plan.external else internal_host) for name in plan.advertised
    )


def security_protocol_map(plan: ListenerPlan) -> str:
    """``listener.security.protocol.map`` covering every listener."""
    return ",".join(f"{item.name}:{item.protocol}" for item in plan.listeners)


def broker_settings(
    plan: ListenerPlan, advertised_host: str = ADVERTISED_HOST, internal_host: str = INTERNAL_HOST
) -> dict[str, str]:
    """The listener settings of a broker-only KRaft process."""
    return {
        "listeners": listeners_setting(plan, KafkaRole.BROKER),
        "advertised.listeners": advertised_listeners(plan, advertised_host, internal_host),
        "listener.security.protocol.map": security_protocol_map(plan),
        "inter.broker.listener.name": plan.inter_broker,
        "controller.listener.names": plan.controller or "",
    }


def controller_settings(plan: ListenerPlan) -> dict[str, str]:
    """The listener settings of a controller-only KRaft process (no advertised.listeners)."""
    return {
        "listeners": listeners_setting(plan, KafkaRole.CONTROLLER),
        "listener.security.protocol.map": security_protocol_map(plan),
        "controller.listener.names": plan.controller or "",
    }


def security_settings(plan: ListenerPlan, role: KafkaRole = KafkaRole.BROKER) -> dict[str, str]:
    """TLS and SASL settings of a ``broker`` or ``controller`` process (none in plaintext).

    Inside the swarm every connection is mutual TLS with the internal certificate; peers are task
    and service names on the overlay that no certificate can list in advance, so host names are
    not checked there (``ssl.endpoint.identification.algorithm`` empty: it only applies to this
    process as a client) and the cluster CA's signature is what admits a peer.  The external
    listener presents the broker's own certificate (its keystore is chosen per broker by the
    entrypoint) and asks clients for SCRAM (``sasl_ssl``) or for a certificate (``ssl``)."""
    if not plan.secure:
        return {}
    settings = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": secret_path(INTERNAL_TARGET),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": secret_path(CA_TARGET),
        "ssl.client.auth": "required",
        "ssl.endpoint.identification.algorithm": "",
    }
    settings |= authorizer_settings(plan)
    if role != KafkaRole.BROKER:
        return settings
    external = f"listener.name.{plan.external.lower()}"
    settings[f"{external}.ssl.client.auth"] = "none" if plan.sasl else "required"
    if plan.sasl:
        settings[f"{external}.sasl.enabled.mechanisms"] = MECHANISM
        settings[f"{external}.{MECHANISM.lower()}.sasl.jaas.config"] = SCRAM_LOGIN
    return settings


def authorizer_settings(plan: ListenerPlan) -> dict[str, str]:
    """``sasl_ssl``: Kafka's ACL authorizer on brokers and controllers, so a client user may do only what it
    was granted (``swarmkit users add --allow``); swarmkit's admin and the internal certificate that brokers
    and controllers present to each other are super users.  ``ssl`` mode keeps every certified client's rights."""
    if not plan.sasl:
        return {}
    return {"authorizer.class.name": AUTHORIZER, "super.users": f"User:{ADMIN_USER};User:CN={INTERNAL_NAME}"}


def broker_keystore_setting(plan: ListenerPlan) -> str:
    """The external listener's keystore property; its value names ``{broker_id}``, filled per broker."""
    return f"listener.name.{plan.external.lower()}.ssl.keystore.location"
