"""Topic specs in the seed's ``KAFKA_CREATE_TOPICS`` format, parsed and checked before any deploy.

Format: comma-separated ``name:partitions:replicas[:key=value...]``.  As in the seed's image, a
bare fourth field is the cleanup policy (``logs:3:3:compact`` means ``cleanup.policy=compact``).
A comma-separated policy value (``cleanup.policy=compact,delete``) is accepted: a comma-separated
piece without a ``:`` cannot start a new spec (a spec has at least two colons), so it continues
the value of the previous spec's last setting.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from swarmkit import names, numbers
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Inventory

FORMAT = "name:partitions:replicas[:key=value...]"
CLEANUP_POLICIES = ("delete", "compact", "compact,delete")
MAX_REPLICAS = 32767  # Kafka stores the replication factor as a 16-bit signed integer
MIN_ISR = "min.insync.replicas"
DEFAULT_MIN_ISR = 2  # for 3+ replicas: an acks=all write survives one broker lost, and waits for two copies
# Kafka's topic settings whose type is plain enough to check here (others are left to the broker)
WHOLE_NUMBER_SETTINGS = frozenset(
    {
        "retention.ms", "retention.bytes", "segment.ms", "segment.bytes", "segment.jitter.ms", "segment.index.bytes",
        "max.message.bytes", "delete.retention.ms", "min.compaction.lag.ms", "max.compaction.lag.ms",
        "flush.messages", "flush.ms", "file.delete.delay.ms", "index.interval.bytes", "local.retention.ms",
        "local.retention.bytes", "message.timestamp.before.max.ms", "message.timestamp.after.max.ms",
    }
)  # fmt: skip
# Every topic-level setting of Kafka 4.x (a key outside these is refused before anything is deployed: the broker
# would refuse it only at topic creation, after the cluster is up); message.downconversion.enable is 3.x's
TOPIC_SETTINGS = frozenset(
    {
        "cleanup.policy", "compression.type", "compression.gzip.level", "compression.lz4.level",
        "compression.zstd.level", "delete.retention.ms", "file.delete.delay.ms", "flush.messages", "flush.ms",
        "follower.replication.throttled.replicas", "index.interval.bytes", "leader.replication.throttled.replicas",
        "local.retention.bytes", "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
        "message.downconversion.enable", "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
        "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms", MIN_ISR, "preallocate",
        "remote.copy.lag.bytes", "remote.copy.lag.ms", "remote.log.copy.disable", "remote.log.delete.on.disable",
        "remote.storage.enable", "retention.bytes", "retention.ms", "segment.bytes", "segment.index.bytes",
        "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
    }
)  # fmt: skip
CHOICE_SETTINGS = {
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
    "unclean.leader.election.enable": ("true", "false"),
    "preallocate": ("true", "false"),
}


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int
    replicas: int
    configs: tuple[tuple[str, str], ...] = ()

    def to_spec_string(self) -> str:
        """The spec as ``parse_topic_specs`` reads it (``name:p:r[:key=value...]``)."""
        fields = [self.name, str(self.partitions), str(self.replicas)]
        fields += [f"{key}={value}" for key, value in self.configs]
        return ":".join(fields)

    @property
    def config_dict(self) -> dict[str, str]:
        return dict(self.configs)


def declared_topics(inventory: Inventory) -> list[TopicSpec]:
    """The topics the inventory's ``stack:`` block declares, as specs to check and ensure."""
    return [TopicSpec(t.name, t.partitions, t.replicas, t.configs) for t in inventory.stack.topics]


def format_topic_specs(specs: Iterable[TopicSpec]) -> str:
    """The inverse of ``parse_topic_specs``."""
    return ",".join(spec.to_spec_string() for spec in specs)


def _split_specs(text: str) -> list[str]:
    pieces: list[str] = []
    for raw in text.split(","):
        piece = raw.strip()
        if not piece:
            continue
        if ":" not in piece and pieces and "=" in pieces[-1].rsplit(":", 1)[-1]:
            pieces[-1] = f"{pieces[-1]},{piece}"  # e.g. cleanup.policy=compact,delete
        else:
            pieces.append(piece)
    return pieces


def _count(spec: str, field: str, value: str) -> int:
    try:
        return numbers.whole(value.strip())
    except SpecError:
        raise SpecError(
            f"topic spec '{spec}': {field} '{value}' is not a whole number (ASCII digits, at most {numbers.INT32_MAX})",
            hint=f"write each topic as {FORMAT}, e.g. orders:3:1",
        ) from None


def _configs(spec: str, extras: list[str]) -> tuple[tuple[str, str], ...]:
    configs: list[tuple[str, str]] = []
    for position, extra in enumerate(extras):
        extra = extra.strip()
        if "=" in extra:
            key, value = (part.strip() for part in extra.split("=", 1))
        elif position == 0 and extra:
            key, value = "cleanup.policy", extra  # the seed's bare 4th field
        else:
            raise SpecError(
                f"topic spec '{spec}': setting '{extra}' is not key=value",
                hint=f"write each topic as {FORMAT}; only the 4th field may be a bare cleanup policy",
            )
        if not key or not names.SETTING_KEY.fullmatch(key) or not value:
            raise SpecError(
                f"topic spec '{spec}': setting '{extra}' needs a key and a value",
                hint="write topic settings as key=value, e.g. retention.ms=86400000",
            )
        if key in dict(configs):
            raise SpecError(f"topic spec '{spec}': setting '{key}' is given twice", hint="give each setting once")
        configs.append((key, names.text(value, f"topic spec {names.shown(spec)}: setting {key}")))
    return tuple(configs)


def creation_configs(spec: TopicSpec) -> dict[str, str]:
    """The topic settings to create with: ``min.insync.replicas`` 2 for 3+ replicas unless the spec sets it."""
    configs = spec.config_dict
    if spec.replicas >= 3:
        configs.setdefault(MIN_ISR, str(DEFAULT_MIN_ISR))
    return configs


def _check_min_isr(spec: TopicSpec, label: str) -> None:
    value = spec.config_dict.get(MIN_ISR)
    if value is None:
        return
    if not numbers.WHOLE.fullmatch(value) or not 1 <= int(value) <= spec.replicas:
        raise SpecError(
            f"{label}: {MIN_ISR}={value} cannot be met with {spec.replicas} replica(s)",
            hint=f"use a whole number from 1 to {spec.replicas} (acks=all writes would be refused forever)",
        )


def _check_setting_types(spec: TopicSpec, label: str) -> None:
    """A wrong type would pass every check here and fail only at creation, after the cluster is up."""
    for key, value in spec.configs:
        if key not in TOPIC_SETTINGS:
            near = difflib.get_close_matches(key, TOPIC_SETTINGS, n=1)
            raise SpecError(
                f"{label}: '{key}' is not a topic setting Kafka knows",
                hint=f"did you mean {near[0]}?" if near else "see Kafka's topic-level configs, e.g. retention.ms, cleanup.policy",
            )
        if key in WHOLE_NUMBER_SETTINGS and not numbers.WHOLE.fullmatch(value):
            raise SpecError(
                f"{label}: {key}={value} is not a whole number",
                hint=f"give {key} as an integer (e.g. retention.ms=86400000; -1 means no limit where Kafka allows it)",
            )
        if key in CHOICE_SETTINGS and value not in CHOICE_SETTINGS[key]:
            raise SpecError(
                f"{label}: {key}={value} is not one Kafka knows", hint=f"use one of {', '.join(CHOICE_SETTINGS[key])}"
            )


def parse_topic_specs(text: str) -> list[TopicSpec]:
    """Parse ``name:partitions:replicas[:key=value...]`` specs separated by commas (syntax only).

    Numbers and names are checked by ``validate_topic_specs``; here a spec must merely have the
    right shape.  Blank text gives no topics.
    """
    specs: list[TopicSpec] = []
    pieces = _split_specs(text or "")
    if not pieces and (text or "").strip():
        raise SpecError(f"topic specs '{text}' name no topic", hint=f"write each topic as {FORMAT}, e.g. orders:3:1")
    for piece in pieces:
        fields = piece.split(":")
        if len(fields) < 3:
            raise SpecError(
                f"topic spec '{piece}': expected {FORMAT}",
                hint="give partitions and replicas, e.g. orders:3:1; separate topics with commas",
            )
        name = fields[0].strip()
        partitions = _count(piece, "partitions", fields[1])
        replicas = _count(piece, "replicas", fields[2])
        specs.append(TopicSpec(name, partitions, replicas, _configs(piece, fields[3:])))
    return specs


def _check_name(spec: TopicSpec) -> None:
    names.topic_name(spec.name, f"topic spec {names.shown(spec.to_spec_string())}: topic name")


def validate_topic_specs(specs: Iterable[TopicSpec], broker_count: int | None) -> list[TopicSpec]:
    """Check specs the way Kafka would when creating them; returns them as a list.

    ``broker_count`` is the number of brokers one topic can be replicated over (``None`` when it is
    not known yet: the replicas-versus-brokers check is then skipped).
    """
    specs = list(specs)
    seen: dict[str, TopicSpec] = {}
    collisions: dict[str, TopicSpec] = {}
    for spec in specs:
        label = f"topic spec '{spec.to_spec_string()}'"
        _check_name(spec)
        if spec.partitions < 1:
            raise SpecError(f"{label}: partitions must be at least 1, not {spec.partitions}", hint="give 1 or more partitions")
        if spec.replicas < 1:
            raise SpecError(f"{label}: replicas must be at least 1, not {spec.replicas}", hint="give 1 or more replicas")
        if spec.replicas > MAX_REPLICAS:
            raise SpecError(f"{label}: replicas {spec.replicas} is too large", hint=f"Kafka allows at most {MAX_REPLICAS}")
        if broker_count is not None and spec.replicas > broker_count:
            raise SpecError(
                f"{label}: {spec.replicas} replicas but only {broker_count} broker(s) to hold them",
                hint=f"use at most {broker_count} replicas for '{spec.name}', or add servers to the inventory",
            )
        _check_min_isr(spec, label)
        _check_setting_types(spec, label)
        policy = spec.config_dict.get("cleanup.policy")
        if policy is not None and policy.replace(" ", "") not in CLEANUP_POLICIES:
            raise SpecError(
                f"{label}: cleanup.policy '{policy}' is not one Kafka knows",
                hint="use delete, compact or compact,delete",
            )
        if spec.name in seen:
            raise SpecError(
                f"{label}: topic '{spec.name}' is specified twice",
                hint=f"keep one spec for '{spec.name}' (the other is '{seen[spec.name].to_spec_string()}')",
            )
        seen[spec.name] = spec
        folded = spec.name.replace(".", "_")
        if folded in collisions:
            raise SpecError(
                f"{label}: topic '{spec.name}' collides with '{collisions[folded].name}'",
                hint="Kafka treats '.' and '_' alike in metric names and refuses such pairs; rename one",
            )
        collisions[folded] = spec
    return specs
