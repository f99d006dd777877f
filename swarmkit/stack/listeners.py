"""The listener model (pure): which listeners a broker serves and what it tells clients.

Kafka's split, as in the seeds: an INTERNAL listener that brokers use between themselves over
the swarm's overlay network, an EXTERNAL listener published on every node (``mode: host``) and
advertised with that node's own address, and for KRaft a CONTROLLER listener served by the
controllers.  ``validate`` checks what Kafka checks at start-up, with errors naming the setting.

Advertised hosts are per node and known only inside the container, so the settings are rendered
with placeholders (``{advertised_host}``, ``{internal_host}``) that the entrypoint fills in;
``ListenerPlan.for_node`` fills them in Python (for checks and tests).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from swarmkit.errors import SpecError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
ADVERTISED_HOST = "{advertised_host}"  # this node's address for clients (filled in per node)
INTERNAL_HOST = "{internal_host}"  # this broker's name on the overlay (filled in per node)
NON_ROUTABLE = ("0.0.0.0", "::", "[::]")
LEGAL_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


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

    @classmethod
    def build(
        cls,
        internal_port: int = 9092,
        external_port: int = 9094,
        controller_port: int = 9093,
        external_protocol: str = "PLAINTEXT",
        internal_protocol: str = "PLAINTEXT",
    ) -> ListenerPlan:
        """The usual plan with other ports or protocols (what the CLI's options change)."""
        return cls(
            listeners=(
                Listener("INTERNAL", internal_port, internal_protocol),
                Listener("EXTERNAL", external_port, external_protocol),
                Listener("CONTROLLER", controller_port),
            )
        )

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

    # --- Kafka settings --------------------------------------------------------------------------

    def listeners_setting(self, role: str = "broker") -> str:
        """``listeners`` for a ``broker`` or ``controller`` process."""
        served = self.broker_listeners() if role == "broker" else self.controller_listeners()
        return ",".join(item.bind() for item in served)

    def advertised_listeners(self, advertised_host: str = ADVERTISED_HOST, internal_host: str = INTERNAL_HOST) -> str:
        """``advertised.listeners``: the external listener with this node's address, the others
        with the broker's name on the overlay (placeholders unless hosts are given)."""
        parts = []
        for name in self.advertised:
            item = self.listener(name)
            parts.append(item.advertise(advertised_host if name == self.external else internal_host))
        return ",".join(parts)

    def security_protocol_map(self) -> str:
        """``listener.security.protocol.map`` covering every listener."""
        return ",".join(f"{item.name}:{item.protocol}" for item in self.listeners)

    def inter_broker_listener_name(self) -> str:
        return self.inter_broker

    def controller_listener_names(self) -> str:
        return self.controller or ""

    def broker_settings(self, advertised_host: str = ADVERTISED_HOST, internal_host: str = INTERNAL_HOST) -> dict[str, str]:
        """The listener settings of a broker-only KRaft process, as Kafka property names."""
        return {
            "listeners": self.listeners_setting("broker"),
            "advertised.listeners": self.advertised_listeners(advertised_host, internal_host),
            "listener.security.protocol.map": self.security_protocol_map(),
            "inter.broker.listener.name": self.inter_broker_listener_name(),
            "controller.listener.names": self.controller_listener_names(),
        }

    def controller_settings(self) -> dict[str, str]:
        """The listener settings of a controller-only KRaft process (no advertised.listeners)."""
        return {
            "listeners": self.listeners_setting("controller"),
            "listener.security.protocol.map": self.security_protocol_map(),
            "controller.listener.names": self.controller_listener_names(),
        }

    def for_node(self, advertised_host: str, internal_host: str) -> ListenerPlan:
        """The plan with one node's hosts filled in (so ``validate`` can check them)."""
        filled = tuple(
            replace(
                item, advertised_host=item.advertised_host or (advertised_host if item.name == self.external else internal_host)
            )
            for item in self.listeners
        )
        return replace(self, listeners=filled)

    # --- validation ------------------------------------------------------------------------------

    def validate(self, kraft: bool = True) -> ListenerPlan:
        """Raise ``SpecError`` for what Kafka would refuse at start-up; returns the plan."""
        names: dict[str, Listener] = {}
        ports: dict[int, Listener] = {}
        for item in self.listeners:
            if not LEGAL_NAME.match(item.name or ""):
                raise SpecError(
                    f"listeners: listener name '{item.name}' is not valid",
                    hint="use upper-case letters, digits and '_', starting with a letter (e.g. EXTERNAL)",
                )
            if item.name in names:
                raise SpecError(f"listeners: listener name '{item.name}' is used twice", hint="give each listener its own name")
            if isinstance(item.port, bool) or not isinstance(item.port, int) or not 1 <= item.port <= 65535:
                raise SpecError(
                    f"listeners: port {item.port!r} of {item.name} is not in 1..65535", hint="choose a TCP port from 1 to 65535"
                )
            if item.port in ports:
                raise SpecError(
                    f"listeners: port {item.port} is used by both {ports[item.port].name} and {item.name}",
                    hint="give each listener its own port",
                )
            if item.protocol not in PROTOCOLS:
                raise SpecError(
                    f"listener.security.protocol.map: protocol '{item.protocol}' of {item.name} is unknown",
                    hint=f"use one of {', '.join(PROTOCOLS)}",
                )
            names[item.name] = item
            ports[item.port] = item
        for role, name in (("internal", self.internal), ("external", self.external)):
            if name not in names:
                raise SpecError(f"listeners: the {role} listener '{name}' is not defined", hint=f"add a listener named {name}")
        if self.internal == self.external:
            raise SpecError(
                f"listeners: '{self.internal}' cannot be both the internal and the external listener",
                hint="clients outside the swarm and brokers on the overlay need separate listeners",
            )
        self._validate_advertised(names)
        if self.inter_broker not in names or self.inter_broker == self.controller:
            raise SpecError(
                f"inter.broker.listener.name: '{self.inter_broker}' is not one of the broker's listeners",
                hint=f"use one of {', '.join(item.name for item in self.broker_listeners())}",
            )
        if self.inter_broker not in self.advertised:
            raise SpecError(
                f"inter.broker.listener.name: '{self.inter_broker}' is not advertised",
                hint="brokers reach each other through the advertised address of this listener; add it to advertised.listeners",
            )
        if kraft:
            if not self.controller or self.controller not in names:
                raise SpecError(
                    f"controller.listener.names: the controller listener '{self.controller or ''}' is not defined",
                    hint="KRaft needs a controller listener, e.g. CONTROLLER on port 9093",
                )
        return self

    def _validate_advertised(self, names: dict[str, Listener]) -> None:
        seen: set[str] = set()
        for name in self.advertised:
            if name not in names:
                raise SpecError(
                    f"advertised.listeners: '{name}' is not in listeners",
                    hint=f"advertise only defined listeners ({', '.join(names)})",
                )
            if name == self.controller:
                raise SpecError(
                    f"advertised.listeners: the controller listener '{name}' must not be advertised by a broker",
                    hint="clients never talk to controllers; advertise the internal and external listeners",
                )
            if name in seen:
                raise SpecError(f"advertised.listeners: '{name}' is advertised twice", hint="advertise each listener once")
            seen.add(name)
            host = names[name].advertised_host
            if host is not None and (not host.strip() or host.strip() in NON_ROUTABLE):
                raise SpecError(
                    f"advertised.listeners: {name} advertises the non-routable address '{host}'",
                    hint="advertise an address clients can reach (0.0.0.0 is only valid in listeners)",
                )
        if self.external not in seen:
            raise SpecError(
                f"advertised.listeners: the external listener '{self.external}' is not advertised",
                hint="clients outside the swarm find each broker through it",
            )
