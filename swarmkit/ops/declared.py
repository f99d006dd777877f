"""The inventory's declared state against the running cluster: what `up` would change (`swarmkit plan`,
read by ``ops.drift``), and the part of it `up` applies live (topic settings through the admin API,
partitions added; client quotas; users and their grants through ``ops.users``).

The comparison is pure (``diff_topics``, ``diff_users``, ``diff_quotas``, ``roll_reasons``, ``zone_moves``); reading
topics and quotas and applying their changes are thin around it. Only what is declared is compared: a topic or a
setting the inventory does not name is left as it is, and nothing is ever deleted, except client quotas: a
declared ``stack.quotas`` is the cluster's whole set, so a client's quota it no longer lists is removed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from swarmkit import waits
from swarmkit.errors import BrokerError
from swarmkit.hosts.dockerapi import SwarmNode
from swarmkit.hosts.inventory import QUOTA_RATES, ZONE_LABEL, DeclaredQuota, Inventory
from swarmkit.kafka import admin, quotas
from swarmkit.security.acls import Grant, describe
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.deployed import host_of
from swarmkit.stack.topics import TopicSpec, creation_configs

SECRET_WORDS = ("PASSWORD", "SECRET", "CREDENTIAL")  # environment values never printed


@dataclass(frozen=True)
class TopicState:
    """One topic as the cluster has it: counts and its effective settings."""

    name: str
    partitions: int
    replicas: int
    configs: Mapping[str, str]


@dataclass(frozen=True)
class SettingChange:
    key: str
    old: str | None  # None: the cluster reports no value
    new: str


@dataclass(frozen=True)
class TopicChange:
    """What `up` does to one declared topic; ``problems`` are differences it cannot make (Kafka forbids them)."""

    topic: str
    action: Literal["create", "alter"]
    settings: tuple[SettingChange, ...] = ()
    partitions: tuple[int, int] | None = None  # (now, declared): partitions to add
    problems: tuple[str, ...] = ()

    def line(self) -> str:
        if self.action == "create":
            return f"create topic {self.topic} ({', '.join(f'{s.key}={s.new}' for s in self.settings) or 'defaults'})"
        parts = [f"{s.key} {s.old if s.old is not None else '(unset)'} -> {s.new}" for s in self.settings]
        if self.partitions:
            parts.append(f"partitions {self.partitions[0]} -> {self.partitions[1]}")
        return f"alter topic {self.topic}: " + "; ".join(parts + [f"cannot: {p}" for p in self.problems])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"line": self.line()}


def _normal(value: str | None) -> str | None:
    return None if value is None else value.replace(" ", "")  # Kafka lists "compact,delete" without spaces


def diff_topic(spec: TopicSpec, state: TopicState | None) -> TopicChange | None:
    """The change that makes ``state`` what ``spec`` declares (None: nothing to do)."""
    wanted = creation_configs(spec)
    if state is None:
        return TopicChange(spec.name, "create", tuple(SettingChange(k, None, v) for k, v in sorted(wanted.items())))
    settings = tuple(
        SettingChange(key, state.configs.get(key), value)
        for key, value in sorted(wanted.items())
        if _normal(state.configs.get(key)) != _normal(value)
    )
    grow = (state.partitions, spec.partitions) if spec.partitions > state.partitions else None
    problems = []
    if spec.partitions < state.partitions:
        problems.append(f"it has {state.partitions} partitions, {spec.partitions} declared (Kafka never removes partitions)")
    if spec.replicas != state.replicas:
        problems.append(
            f"replication {state.replicas}, {spec.replicas} declared (move replicas with kafka-reassign-partitions.sh)"
        )
    if not (settings or grow or problems):
        return None
    return TopicChange(spec.name, "alter", settings, grow, tuple(problems))


def diff_topics(declared: Sequence[TopicSpec], actual: Mapping[str, TopicState]) -> list[TopicChange]:
    """Every declared topic's change, in declaration order; topics the inventory does not name are left out."""
    return [change for spec in declared if (change := diff_topic(spec, actual.get(spec.name))) is not None]


@dataclass(frozen=True)
class UserChange:
    """What `up` does to one declared user: make it (with its grants), or make its grants the declared ones."""

    user: str
    action: Literal["create", "grant"]
    added: tuple[Grant, ...] = ()
    removed: tuple[Grant, ...] = ()

    def line(self) -> str:
        if self.action == "create":
            return f"create user {self.user} ({describe(self.added)})"
        changes = [f"+{g.spec}" for g in self.added] + [f"-{g.spec}" for g in self.removed]
        return f"grants of user {self.user}: {' '.join(changes)}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "user": self.user,
            "action": self.action,
            "added": [g.spec for g in self.added],
            "removed": [g.spec for g in self.removed],
            "line": self.line(),
        }


def diff_users(declared: Mapping[str, Sequence[Grant]], actual: Mapping[str, Sequence[Grant]]) -> list[UserChange]:
    """Each declared user's change, in declaration order: made when missing, else its grants made exactly the
    declared ones. Users the inventory does not name are left as they are."""
    changes = []
    for user, grants in declared.items():
        if user not in actual:
            changes.append(UserChange(user, "create", tuple(sorted(grants))))
            continue
        added, removed = sorted(set(grants) - set(actual[user])), sorted(set(actual[user]) - set(grants))
        if added or removed:
            changes.append(UserChange(user, "grant", tuple(added), tuple(removed)))
    return changes


def _rate(value: float | None, unset: str) -> str:
    if value is None:
        return unset
    return str(int(value)) if value.is_integer() else str(value)


@dataclass(frozen=True)
class QuotaChange:
    """What `up` does to one client's quotas: each rate set (``new``) or removed (``new`` None)."""

    entity: quotas.Entity
    rates: tuple[tuple[str, float | None, float | None], ...]  # (key, now, declared); None: unset

    @property
    def client(self) -> str:
        return " and ".join(f"{kind} {name}" for kind, name in self.entity)

    def line(self) -> str:
        changes = [f"{key} {_rate(old, '(unset)')} -> {_rate(new, '(removed)')}" for key, old, new in self.rates]
        return f"quotas of {self.client}: " + "; ".join(changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "entity": dict(self.entity),
            "rates": [{"key": key, "old": old, "new": new} for key, old, new in self.rates],
            "line": self.line(),
        }


def _rate_changes(wanted: Mapping[str, float], have: Mapping[str, float]) -> tuple[tuple[str, float | None, float | None], ...]:
    return tuple((key, have.get(key), wanted.get(key)) for key in QUOTA_RATES if have.get(key) != wanted.get(key))


def diff_quotas(
    declared: Sequence[DeclaredQuota] | None, actual: Mapping[quotas.Entity, Mapping[str, float]]
) -> list[QuotaChange]:
    """The changes that make the cluster's client quotas the declared ones: the declared clients first, in order,
    then the clients whose quotas the inventory no longer lists (removed). ``None``: nothing declared, nothing
    compared. Only the three rates swarmkit declares are compared; other quota keys are left alone."""
    if declared is None:
        return []
    wanted = {quota.entity: dict(quota.rates) for quota in declared}
    clients = list(wanted) + [entity for entity in actual if entity not in wanted]
    changes = (QuotaChange(entity, _rate_changes(wanted.get(entity, {}), actual.get(entity, {}))) for entity in clients)
    return [change for change in changes if change.rates]


def _shown(key: str, value: str | None) -> str:
    if value is None:
        return "(unset)"
    return "(hidden)" if any(word in key.upper() for word in SECRET_WORDS) else value


def roll_reasons(
    rendered_env: Mapping[str, str], rendered_image: str, deployed_env: Mapping[str, str], deployed_image: str
) -> list[str]:
    """Why the broker service's spec would change (every broker then restarts, one at a time)."""
    reasons = [f"image {deployed_image} -> {rendered_image}"] if rendered_image != deployed_image else []
    for key in sorted(set(rendered_env) | set(deployed_env)):
        old, new = deployed_env.get(key), rendered_env.get(key)
        if old != new:
            reasons.append(f"{key} {_shown(key, old)} -> {_shown(key, new)}")
    return reasons


def zone_moves(inventory: Inventory, nodes: Sequence[SwarmNode]) -> list[str]:
    """Hosts whose declared zone differs from their swarm node's: `up` rewrites the identity, the broker restarts."""
    zones = inventory.zones
    found = []
    for node in nodes:
        host = host_of(node)
        if host and any(h.name == host for h in inventory.hosts):
            old, new = node.labels.get(ZONE_LABEL, ""), zones.get(host, "")
            if old != new:
                found.append(f"broker on {host}: zone {old or '(none)'} -> {new or '(none)'}")
    return found


@dataclass(frozen=True)
class Changes:
    """What `up` would change: topics, and the brokers it would restart and why."""

    stack: str
    deployed: bool  # False: nothing deployed yet; `up` deploys the whole stack
    topics: tuple[TopicChange, ...]
    rolls: tuple[str, ...]  # reasons every broker restarts (a rolling update of the broker service)
    restarts: tuple[str, ...]  # single brokers restarting (their identity changes)
    users: tuple[UserChange, ...] = ()
    upgrade: tuple[str, ...] = ()  # the Kafka release the inventory names: the upgrade and the finalize
    quotas: tuple[QuotaChange, ...] = ()

    @property
    def pending(self) -> bool:
        found = self.topics or self.rolls or self.restarts or self.users or self.upgrade or self.quotas
        return not self.deployed or bool(found)

    def lines(self) -> list[str]:
        if not self.pending:
            return ["no changes"]
        found = [] if self.deployed else [f"deploy stack {self.stack} (not deployed yet)"]
        found += list(self.upgrade)
        found += [change.line() for change in self.topics]
        found += [change.line() for change in self.users]
        found += [change.line() for change in self.quotas]
        found += [f"roll every broker: {reason}" for reason in self.rolls]
        return found + [f"restart {restart}" for restart in self.restarts]

    def to_dict(self) -> dict[str, Any]:
        return {
            "pending": self.pending,
            "stack": self.stack,
            "deployed": self.deployed,
            "topics": [change.to_dict() for change in self.topics],
            "rolls": list(self.rolls),
            "restarts": list(self.restarts),
            "users": [change.to_dict() for change in self.users],
            "upgrade": list(self.upgrade),
            "quotas": [change.to_dict() for change in self.quotas],
            "lines": self.lines(),
        }


# --- reading the cluster and applying ------------------------------------------------------------


def topic_states(kafka: admin.KafkaAdmin, names: Sequence[str]) -> dict[str, TopicState]:
    """The named topics that exist, with their effective settings."""
    present = [t for t in kafka.metadata().topics if t.name in names]
    configs = kafka.topic_configs([t.name for t in present])
    return {t.name: TopicState(t.name, t.partition_count, t.replication_factor, configs.get(t.name, {})) for t in present}


def user_states(kafka: admin.KafkaAdmin, names: Sequence[str]) -> dict[str, tuple[Grant, ...]]:
    """The named users the cluster has, with their grants."""
    present = set(kafka.scram_users())
    return {name: kafka.user_grants(name) for name in names if name in present}


def _await_partitions(kafka: admin.KafkaAdmin, counts: Mapping[str, int]) -> None:
    """Until the metadata lists the added partitions (the controller answers before every broker knows)."""
    timeout = kafka.timeout
    deadline = waits.Deadline(timeout, first=0.2, longest=1.0)
    while True:
        topics = {t.name: t.partition_count for t in kafka.metadata().topics}
        if all(topics.get(name, 0) >= count for name, count in counts.items()):
            return
        if deadline.passed():
            raise BrokerError(f"added partitions not listed after {timeout:g} s: {dict(counts)}", hint="run up again")
        deadline.sleep()


def apply_topic_changes(kafka: admin.KafkaAdmin, changes: Sequence[TopicChange]) -> list[str]:
    """Set changed settings and add partitions on existing topics, live; returns what was done."""
    altered = [c for c in changes if c.action == "alter"]
    settings = {c.topic: {s.key: s.new for s in c.settings} for c in altered if c.settings}
    counts = {c.topic: c.partitions[1] for c in altered if c.partitions}
    kafka.alter_topic_configs(settings)
    kafka.add_partitions(counts)
    if counts:
        _await_partitions(kafka, counts)
    return [c.line() for c in altered if c.settings or c.partitions]


def reconcile(
    bootstrap: str, specs: Sequence[TopicSpec], security: ClientSecurity | None, timeout: float = admin.DEFAULT_TIMEOUT
) -> list[str]:
    """`up`'s live step for existing topics: the declared settings and partition counts, no broker restarted."""
    with admin.KafkaAdmin(bootstrap, security, timeout) as kafka:
        states = topic_states(kafka, [s.name for s in specs])
        return apply_topic_changes(kafka, diff_topics([s for s in specs if s.name in states], states))


def reconcile_quotas(
    bootstrap: str, declared: Sequence[DeclaredQuota], security: ClientSecurity | None, timeout: float
) -> list[str]:
    """`up`'s live step for ``stack.quotas``: the cluster's client quotas made the declared ones (the brokers
    apply them at once, none restarts); returns what was done."""
    changes = diff_quotas(declared, quotas.describe_quotas(bootstrap, timeout, security))
    quotas.alter_quotas(bootstrap, {c.entity: {key: new for key, _, new in c.rates} for c in changes}, timeout, security)
    return [change.line() for change in changes]
