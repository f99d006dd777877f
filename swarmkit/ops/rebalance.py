"""`swarmkit rebalance`: after a scale-out, give every broker its share of replicas and leaders.

Per topic, each partition's replicas are first spread over the zones (the brokers' ``broker.rack``), then
end within one of even over the registered brokers without losing that spread, and so do preferred
leaders (each partition's first replica), moving as few replicas as it can (``reassign.plan_balance``);
Kafka's reassignment tool moves them, optionally throttled, and a preferred leader election then
hands leadership to the first replicas. Internal topics (``__consumer_offsets``, ...) move only
when named with ``--topics``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from swarmkit import waits
from swarmkit.errors import SpecError
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.kafka.admin import PartitionState
from swarmkit.ops import reassign
from swarmkit.ops.reassign import Move
from swarmkit.stack.deployed import broker_service

MB = 1_000_000
ELECTION_WAIT_S = 15.0


@dataclass(frozen=True)
class RebalanceOptions:
    stack_name: str = "kafka"
    external_port: int = 9094
    internal_port: int = 9092
    topics: tuple[str, ...] = ()  # empty: every topic but the internal ones
    throttle_mb_s: float = 0.0  # 0: no throttle
    timeout: float = 900.0


@dataclass(frozen=True)
class RebalanceResult:
    moves: tuple[Move, ...]
    election_refused: tuple[str, ...]  # partitions whose preferred leader could not take over yet
    replicas: dict[int, int]  # per broker, over the rebalanced topics
    leaders: dict[int, int]
    total_s: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": not self.election_refused,
            "moved_partitions": [f"{m.topic}-{m.partition}" for m in self.moves],
            "election_refused": list(self.election_refused),
            "replicas_per_broker": self.replicas,
            "leaders_per_broker": self.leaders,
            "total_s": round(self.total_s, 2),
        }


def _chosen(partitions: list[PartitionState], topics: tuple[str, ...]) -> list[PartitionState]:
    known = {p.topic for p in partitions}
    unknown = sorted(set(topics) - known)
    if unknown:
        raise SpecError(f"no topic {', '.join(unknown)} in the cluster", hint=f"topics are: {', '.join(sorted(known))}")
    if topics:
        return [p for p in partitions if p.topic in topics]
    return [p for p in partitions if not p.topic.startswith("__")]


def _elected(kafka: admin.KafkaAdmin, wanted: set[tuple[str, int]]) -> list[PartitionState]:
    """The wanted partitions once metadata shows each led by its first replica (or after ELECTION_WAIT_S):
    the election's answer comes before every broker's metadata has the new leaders."""
    deadline = waits.Deadline(ELECTION_WAIT_S, first=reassign.POLL_INTERVAL)
    while True:
        after = [p for p in kafka.partition_states()[1] if (p.topic, p.partition) in wanted]
        if all(p.leader == p.replicas[0] for p in after) or deadline.passed():
            return after
        deadline.sleep()


def rebalance(session: Session, options: RebalanceOptions) -> RebalanceResult:
    started = time.monotonic()
    inventory, docker, progress = session.inventory, session.docker, session.progress
    if options.throttle_mb_s < 0:
        raise SpecError(f"throttle: {options.throttle_mb_s:g} MB/s", hint="give a positive rate, or leave it out")
    security = reassign.require_replicated_stack(inventory, docker[inventory.first_manager], options.stack_name)
    via = inventory.hosts[0]
    bootstrap = f"{via.address}:{options.external_port}"
    with admin.KafkaAdmin(bootstrap, security) as kafka:
        registered, partitions = kafka.partition_states()
        chosen = _chosen(partitions, options.topics)
        moves = reassign.plan_balance(chosen, registered, kafka.broker_racks())
        service = broker_service(options.stack_name)
        connection = reassign.tool_connection(options.internal_port, security)
        if moves:
            reassign.start(docker[via], service, moves, connection, int(options.throttle_mb_s * MB))
            reassign.wait_done(kafka, moves, options.timeout, progress)
            if options.throttle_mb_s:
                reassign.clear_throttle(docker[via], service, moves, connection)
        progress(0, 1, "electing preferred leaders")
        refused = kafka.elect_preferred_leaders([(p.topic, p.partition) for p in chosen])
        after = _elected(kafka, {(p.topic, p.partition) for p in chosen})
    replicas = {b: sum(b in p.replicas for p in after) for b in registered}
    leaders = {b: sum(p.leader == b for p in after) for b in registered}
    return RebalanceResult(tuple(moves), tuple(refused), replicas, leaders, time.monotonic() - started)
