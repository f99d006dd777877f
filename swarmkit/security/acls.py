"""What a client user may do on a sasl_ssl cluster: ``--allow`` specs parsed into grants (pure).

A spec is ``TYPE:NAME:OPERATION[,OPERATION...]``: ``topic:orders:read,write``, ``group:billing:read``.
A NAME ending in ``*`` is a prefix (``topic:orders-*`` covers ``orders-eu`` and ``orders-us``); ``*`` alone
is every resource of that type.  Each grant becomes one Kafka ACL (allow, from any host) for ``User:NAME``;
anything not granted is refused by the brokers' authorizer, swarmkit's own users being super users.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from swarmkit.errors import SpecError

TOPIC_OPERATIONS = ("read", "write", "create", "delete", "alter", "describe", "describe-configs", "alter-configs", "all")
OPERATIONS = {"topic": TOPIC_OPERATIONS, "group": ("read", "describe", "delete", "all")}
RESOURCE_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}", re.ASCII)  # Kafka's legal topic characters, for groups too
WILDCARD = "*"
EXAMPLE = "topic:orders:read,write (or topic:orders-*:read for a prefix, group:billing:read)"


@dataclass(frozen=True, order=True)
class Grant:
    """One allowed operation on one resource, or on every resource whose name starts with ``name``."""

    resource: str  # topic | group
    name: str  # the literal name, the prefix, or "*"
    prefixed: bool
    operation: str  # one of OPERATIONS[resource]

    @property
    def spec(self) -> str:
        return f"{self.resource}:{self.name}{WILDCARD if self.prefixed else ''}:{self.operation}"


def _bad(spec: str, problem: str) -> SpecError:
    return SpecError(f"--allow {spec!r}: {problem}", hint=f"write TYPE:NAME:OPERATIONS, e.g. {EXAMPLE}")


def _name(spec: str, text: str) -> tuple[str, bool]:
    """(name, prefixed) of the NAME part."""
    if text == WILDCARD:
        return text, False
    prefixed = text.endswith(WILDCARD)
    name = text[:-1] if prefixed else text
    if not RESOURCE_NAME.fullmatch(name):
        raise _bad(spec, f"{text!r} is not a name: use letters, digits, '.', '_' and '-', with an optional '*' at the end")
    return name, prefixed


def parse_allow(spec: str) -> tuple[Grant, ...]:
    """The grants of one ``--allow`` spec; SpecError naming what is wrong with it."""
    parts = spec.strip().split(":")
    if len(parts) != 3:
        raise _bad(spec, f"has {len(parts)} part(s) separated by ':', not 3")
    resource, text, operations = (part.strip() for part in parts)
    if resource.lower() not in OPERATIONS:
        raise _bad(spec, f"resource type {resource!r} is not one of {', '.join(OPERATIONS)}")
    allowed = OPERATIONS[resource.lower()]
    name, prefixed = _name(spec, text)
    wanted = [operation.strip().lower() for operation in operations.split(",")]
    unknown = [operation for operation in wanted if operation not in allowed]
    if unknown or not wanted:
        raise _bad(spec, f"operation(s) {', '.join(map(repr, unknown))} not among {', '.join(allowed)} for a {resource}")
    return tuple(Grant(resource.lower(), name, prefixed, operation) for operation in dict.fromkeys(wanted))


def parse_grants(specs: Iterable[str]) -> tuple[Grant, ...]:
    """Every spec's grants, each once, sorted."""
    return tuple(sorted({grant for spec in specs for grant in parse_allow(spec)}))


def describe(grants: Iterable[Grant]) -> str:
    """The grants as specs again, one per resource: ``topic:orders:read,write group:billing:read``."""
    operations: dict[str, list[str]] = {}
    for grant in sorted(grants):
        operations.setdefault(grant.spec.rsplit(":", 1)[0], []).append(grant.operation)
    return " ".join(f"{resource}:{','.join(ops)}" for resource, ops in operations.items()) or "(no grants)"
