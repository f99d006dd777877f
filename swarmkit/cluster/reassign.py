"""Moving partition replicas between brokers with Kafka's own reassignment tool, and waiting for it.

Plans are pure (which replicas go where). confluent-kafka's Admin API has no partition
reassignment, so the move runs ``kafka-reassign-partitions.sh`` inside a broker container (the
official image and swarmkit's both ship it); completion is read from the metadata: every moved
partition holds exactly its new replicas, all of them in sync.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from swarmkit.cluster import kafka
from swarmkit.cluster.deploy import Progress
from swarmkit.cluster.kafka import PartitionState
from swarmkit.errors import BrokerError, DeployError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine

REASSIGN_TOOL = "/opt/kafka/bin/kafka-reassign-partitions.sh"
PLAN_FILE = "/tmp/swarmkit-reassignment.json"
# The plan reaches the tool as a file; it is passed as an argument, never spliced into the script.
WRITE_AND_EXECUTE = 'printf "%s" "$1" > "$2" && exec "$3" --bootstrap-server "$4" --execute --reassignment-json-file "$2"'
POLL_INTERVAL = 1.0


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    replicas: tuple[int, ...]  # the new replica list, preferred leader first


def plan_moves_off(partitions: Sequence[PartitionState], leaving: int, remaining: Sequence[int]) -> list[Move]:
    """Every partition with a replica on ``leaving`` gets, in that replica's place, the remaining broker
    holding the fewest replicas so far (not already a replica); SpecError when none is left."""
    load = Counter({broker: 0 for broker in remaining})
    load.update(r for p in partitions for r in p.replicas if r in load)
    moves = []
    for state in partitions:
        if leaving not in state.replicas:
            continue
        candidates = [b for b in remaining if b not in state.replicas]
        if not candidates:
            raise SpecError(
                f"topic {state.topic} partition {state.partition} has {len(state.replicas)} replicas, "
                f"and only {len(remaining)} broker(s) would remain",
                hint="add a server first, or lower the topic's replication factor",
            )
        chosen = min(candidates, key=lambda b: (load[b], b))
        load[chosen] += 1
        moves.append(Move(state.topic, state.partition, tuple(chosen if r == leaving else r for r in state.replicas)))
    return moves


def plan_document(moves: Sequence[Move]) -> str:
    """The tool's JSON reassignment plan."""
    partitions = [{"topic": m.topic, "partition": m.partition, "replicas": list(m.replicas)} for m in moves]
    return json.dumps({"version": 1, "partitions": partitions}, sort_keys=True)


def start(broker: Engine, service: str, moves: Sequence[Move], internal_port: int) -> None:
    """Hand the plan to Kafka through a broker container on ``broker``; the controller carries it out."""
    command = ["sh", "-c", WRITE_AND_EXECUTE, "sh", plan_document(moves), PLAN_FILE, REASSIGN_TOOL, f"localhost:{internal_port}"]
    dockerapi.exec_in_service(broker, service, command)


def pending(moves: Sequence[Move], partitions: Sequence[PartitionState]) -> list[Move]:
    """The moves not finished yet: replicas other than planned, or a new replica not in sync."""
    now = {(p.topic, p.partition): p for p in partitions}
    return [
        m
        for m in moves
        if (state := now.get((m.topic, m.partition))) is None
        or state.replicas != m.replicas
        or not set(m.replicas) <= set(state.isr)
    ]


def wait_done(bootstrap: str, moves: Sequence[Move], timeout: float, progress: Progress) -> None:
    deadline = time.monotonic() + timeout
    left = list(moves)
    while left:
        try:
            left = pending(left, kafka.partition_states(bootstrap)[1])
        except BrokerError:
            pass  # a metadata hiccup while leaders move: ask again
        progress(len(moves) - len(left), len(moves), f"moving replicas: {len(moves) - len(left)}/{len(moves)} partitions done")
        if left and time.monotonic() > deadline:
            names = ", ".join(f"{m.topic}-{m.partition}" for m in left[:5])
            raise DeployError(
                f"the reassignment did not finish within {timeout:g}s ({len(left)} partitions left: {names})",
                hint="see kafka-reassign-partitions.sh --verify in a broker container; it goes on in the background",
            )
        if left:
            time.sleep(POLL_INTERVAL)
