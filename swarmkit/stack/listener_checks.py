"""What Kafka refuses at start-up in a listener plan, caught before deploying (pure).

Each error names the Kafka setting at fault and says how to fix it.
"""

from __future__ import annotations

import re

from swarmkit.errors import SpecError
from swarmkit.stack.listeners import PROTOCOLS, SECURITY_MODES, Listener, ListenerPlan

NON_ROUTABLE = ("0.0.0.0", "::", "[::]")
LEGAL_NAME = re.compile(r"[A-Z][A-Z0-9_]*", re.ASCII)


SWARM_TCP_PORTS = (2377, 7946)  # every swarm node's: a listener there would clash with the swarm itself


def validate_plan(plan: ListenerPlan, kraft: bool = True) -> ListenerPlan:
    """Raise ``SpecError`` for what Kafka would refuse at start-up; returns the plan."""
    if plan.security not in SECURITY_MODES:
        raise SpecError(
            f"security: unknown mode '{plan.security}'",
            hint=f"use one of {', '.join(SECURITY_MODES)} (--security, or stack.security in the inventory)",
        )
    names: dict[str, Listener] = {}
    ports: dict[int, Listener] = {}
    for item in plan.listeners:
        _check_listener(item, names, ports)
        names[item.name] = item
        ports[item.port] = item
    _check_roles(plan, names)
    _check_advertised(plan, names)
    _check_inter_broker(plan, names)
    if kraft and (not plan.controller or plan.controller not in names):
        raise SpecError(
            f"controller.listener.names: the controller listener '{plan.controller or ''}' is not defined",
            hint="KRaft needs a controller listener, e.g. CONTROLLER on port 9093",
        )
    return plan


def _check_listener(item: Listener, names: dict[str, Listener], ports: dict[int, Listener]) -> None:
    """One listener on its own, and against those seen before it (names and ports are unique)."""
    if not LEGAL_NAME.fullmatch(item.name or ""):
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
    if item.port in SWARM_TCP_PORTS:
        raise SpecError(
            f"listeners: port {item.port} of {item.name} is Docker Swarm's own (2377 management, 7946 gossip)",
            hint="choose another port (--external-port for clients, --internal-port between brokers)",
        )
    if item.port in ports:
        raise SpecError(
            f"listeners: port {item.port} is used by both {ports[item.port].name} and {item.name}",
            hint="give each listener its own port (--external-port for clients, --internal-port between brokers)",
        )
    if item.protocol not in PROTOCOLS:
        raise SpecError(
            f"listener.security.protocol.map: protocol '{item.protocol}' of {item.name} is unknown",
            hint=f"use one of {', '.join(PROTOCOLS)}",
        )


def _check_roles(plan: ListenerPlan, names: dict[str, Listener]) -> None:
    for role, name in (("internal", plan.internal), ("external", plan.external)):
        if name not in names:
            raise SpecError(f"listeners: the {role} listener '{name}' is not defined", hint=f"add a listener named {name}")
    if plan.internal == plan.external:
        raise SpecError(
            f"listeners: '{plan.internal}' cannot be both the internal and the external listener",
            hint="clients outside the swarm and brokers on the overlay need separate listeners",
        )


def _check_inter_broker(plan: ListenerPlan, names: dict[str, Listener]) -> None:
    if plan.inter_broker not in names or plan.inter_broker == plan.controller:
        raise SpecError(
            f"inter.broker.listener.name: '{plan.inter_broker}' is not one of the broker's listeners",
            hint=f"use one of {', '.join(item.name for item in plan.broker_listeners())}",
        )
    if plan.inter_broker not in plan.advertised:
        raise SpecError(
            f"inter.broker.listener.name: '{plan.inter_broker}' is not advertised",
            hint="brokers reach each other through the advertised address of this listener; add it to advertised.listeners",
        )


def _check_advertised(plan: ListenerPlan, names: dict[str, Listener]) -> None:
    seen: set[str] = set()
    for name in plan.advertised:
        if name not in names:
            raise SpecError(
                f"advertised.listeners: '{name}' is not in listeners",
                hint=f"advertise only defined listeners ({', '.join(names)})",
            )
        if name == plan.controller:
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
    if plan.external not in seen:
        raise SpecError(
            f"advertised.listeners: the external listener '{plan.external}' is not advertised",
            hint="clients outside the swarm find each broker through it",
        )
