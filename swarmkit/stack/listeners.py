"""The listener model (pure): which listeners a broker serves and what it tells clients.

Kafka's split, as in the seeds: an INTERNAL listener that brokers use between themselves over
the swarm's overlay network, an EXTERNAL listener published on every node (``mode: host``) and
advertised with that node's own address, and for KRaft a CONTROLLER listener served by the
controllers.  The Kafka properties a plan becomes live in ``kafka_settings``; what Kafka refuses
at start-up is checked in ``listener_checks``, with errors naming the setting.

Advertised hosts are per node and known only inside the container, so the settings are rendered
with placeholders (``{advertised_host}``, ``{internal_host}``) that the entrypoint fills in;
``ListenerPlan.for_node`` fills them in Python (for checks and tests).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# --security: the protocol of (EXTERNAL, INTERNAL, CONTROLLER).  Inside the swarm always mutual TLS with
# the cluster CA's internal certificate: a KRaft controller listener cannot use SCRAM (its credentials
# live in the metadata the controllers serve), and a certificate needs no credential store at all.
SECURITY_MODES = {
    "plaintext": ("PLAINTEXT", "PLAINTEXT", "PLAINTEXT"),
    "ssl": ("SSL", "SSL", "SSL"),
    "sasl_ssl": ("SASL_SSL", "SSL", "SSL"),
}
ADVERTISED_HOST = "{advertised_host}"  # this node's address for clients (filled in per node)
INTERNAL_HOST = "{internal_host}"  # this broker's name on the overlay (filled in per node)


@dataclass(frozen=True)
class Listener:
    name: str
    port: int
    protocol: str = "PLAINTEXT"
    advertised_host: str | None = None  # None: this node's host, filled in per node

    def bind(self) -> str:
        """``NAME://:port`` — an empty host binds every interface (as the official image's examples)."""
        return f"{self.name}://:{self.port}"

    def advertise(self, host: str) -> str:
        host = self.advertised_host or host
        if ":" in host and not host.startswith("["):
            host = f"[{host}]"  # an IPv6 address
        return f"{self.name}://{host}:{self.port}"


def _default_listeners() -> tuple[Listener, ...]:
    return (Listener("INTERNAL", 9092), Listener("EXTERNAL", 9094), Listener("CONTROLLER", 9093))


@dataclass(frozen=True)
class ListenerPlan:
    """Every listener of the cluster, and which one plays which part.

    ``listeners`` holds the internal, external and (KRaft) controller listeners; ``internal``,
    ``external`` and ``controller`` name them.  ``advertised`` names the listeners a broker
    advertises (Kafka requires a subset of the broker's listeners).
    """

    listeners: tuple[Listener, ...] = field(default_factory=_default_listeners)
    internal: str = "INTERNAL"
    external: str = "EXTERNAL"
    controller: str | None = "CONTROLLER"
    inter_broker: str = "INTERNAL"
    advertised: tuple[str, ...] = ("INTERNAL", "EXTERNAL")
    security: str = "plaintext"  # a key of SECURITY_MODES: the one place the plan learns it

    @classmethod
    def build(
        cls,
        internal_port: int = 9092,
        external_port: int = 9094,
        controller_port: int = 9093,
        security: str = "plaintext",
        external_protocol: str | None = None,
        internal_protocol: str | None = None,
    ) -> ListenerPlan:
        """The usual plan with other ports or a security mode (what the CLI's options change); a
        protocol given on its own overrides the mode's (Python API only).

        An unknown mode keeps plaintext protocols; ``validate_plan`` names it."""
        external, internal, controller = SECURITY_MODES.get(security, SECURITY_MODES["plaintext"])
        external, internal = external_protocol or external, internal_protocol or internal
        return cls(
            listeners=(
                Listener("INTERNAL", internal_port, internal),
                Listener("EXTERNAL", external_port, external),
                Listener("CONTROLLER", controller_port, controller),
            ),
            security=security,
        )

    def with_security(self, security: str) -> ListenerPlan:
        """This plan's ports in another security mode (the plan as ``build`` makes it)."""
        if security == self.security:
            return self
        controller = self.controller_listener
        return ListenerPlan.build(
            internal_port=self.internal_listener.port,
            external_port=self.external_listener.port,
            controller_port=controller.port if controller else 9093,
            security=security,
        )

    @property
    def secure(self) -> bool:
        """TLS everywhere (``ssl`` or ``sasl_ssl``): certificates and secrets are needed."""
        return self.security != "plaintext"

    @property
    def sasl(self) -> bool:
        return self.security == "sasl_ssl"

    # --- lookups -------------------------------------------------------------------------------

    def listener(self, name: str) -> Listener:
        for candidate in self.listeners:
            if candidate.name == name:
                return candidate
        raise KeyError(name)

    @property
    def internal_listener(self) -> Listener:
        return self.listener(self.internal)

    @property
    def external_listener(self) -> Listener:
        return self.listener(self.external)

    @property
    def controller_listener(self) -> Listener | None:
        return self.listener(self.controller) if self.controller else None

    def broker_listeners(self) -> tuple[Listener, ...]:
        """What a broker-only process serves: every listener but the controller's."""
        return tuple(item for item in self.listeners if item.name != self.controller)

    def controller_listeners(self) -> tuple[Listener, ...]:
        """What a controller-only process serves."""
        return tuple(item for item in self.listeners if item.name == self.controller)

    def for_node(self, advertised_host: str, internal_host: str) -> ListenerPlan:
        """The plan with one node's hosts filled in (so ``validate`` can check them)."""
        filled = tuple(
            replace(
                item, advertised_host=item.advertised_host or (advertised_host if item.name == self.external else internal_host)
            )
            for item in self.listeners
        )
        return replace(self, listeners=filled)
