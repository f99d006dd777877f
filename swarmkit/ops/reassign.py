"""Moving partition replicas between brokers with Kafka's own reassignment tool, and waiting for it.

Plans are pure (which replicas go where). confluent-kafka's Admin API has no partition
reassignment, so the move runs ``kafka-reassign-partitions.sh`` inside a broker container (the
official image and swarmkit's both ship it); completion is read from the metadata: every moved
partition holds exactly its new replicas, all of them in sync.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from swarmkit import waits
from swarmkit.errors import BrokerError, DeployError, SpecError
from swarmkit.hosts.dockerapi import Engine
from swarmkit.hosts.inventory import Inventory
from swarmkit.kafka import admin
from swarmkit.kafka.admin import PartitionState
from swarmkit.security import pki
from swarmkit.security.settings import ClientSecurity
from swarmkit.stack.deployed import DeployedStack
from swarmkit.stack.engines import ENGINES, apache
from swarmkit.stack.engines.apache import internal_client_config
from swarmkit.waits import Progress

REASSIGN_TOOL = "/opt/kafka/bin/kafka-reassign-partitions.sh"
PLAN_FILE = "/tmp/swarmkit-reassignment.json"
# The plan reaches the tool as a file; it is passed as an argument, never spliced into the script.
WRITE_AND_RUN = 'printf "%s" "$1" > "$2" && file="$2" tool="$3" && shift 3 && exec "$tool" --reassignment-json-file "$file" "$@"'
POLL_INTERVAL = 1.0


@dataclass(frozen=True)
class Move:
    topic: str
    partition: int
    replicas: tuple[int, ...]  # the new replica list, preferred leader first


def require_replicated_stack(inventory: Inventory, manager: Engine, stack_name: str) -> ClientSecurity | None:
    """How swarmkit's admin reaches the stack by address; moving replicas needs an Apache Kafka stack
    (tansu brokers each keep their own single copy)."""
    stack = DeployedStack.read(manager, stack_name)
    engine = ENGINES.get(stack.engine) if stack else None
    if stack is None or engine is None or not engine.SHARED_CLUSTER:
        raise SpecError(
            f"stack '{stack_name}' is not a deployed Apache Kafka stack",
            hint="moving replicas needs the apache engine: tansu brokers keep no replicas to move",
        )
    return pki.admin_by_address(inventory, stack_name, stack.security)


def tool_connection(internal_port: int, security: ClientSecurity | None) -> list[str]:
    """A Kafka tool in a broker container talks to that broker's internal listener (mutual TLS when secure)."""
    config = ["--command-config", internal_client_config().target] if security else []
    return ["--bootstrap-server", f"localhost:{internal_port}", *config]


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


def plan_balance(
    partitions: Sequence[PartitionState], brokers: Sequence[int], racks: Mapping[int, str] | None = None
) -> list[Move]:
    """Per topic: each partition's replicas first spread over as many zones (``racks``: broker -> zone) as they
    can be, then replicas within one of even over ``brokers`` without losing that spread, then preferred
    leaders (first replicas) within one of even, moving as few replicas as it can; only partitions whose
    replica list changes are returned."""
    racks = {b: zone for b, zone in (racks or {}).items() if zone}
    replica_step = functools.partial(_replica_step, racks=racks)
    moves = []
    for topic in sorted({p.topic for p in partitions}):
        before = {p.partition: p.replicas for p in partitions if p.topic == topic}
        assignment = {number: list(replicas) for number, replicas in before.items()}
        if racks:
            _spread_zones(assignment, brokers, racks)
        while _shift(assignment, brokers, _replica_counts, replica_step):
            pass
        while _shift(assignment, brokers, _leader_counts, _leader_step):
            pass
        moves += [Move(topic, n, tuple(r)) for n, r in sorted(assignment.items()) if tuple(r) != before[n]]
    return moves


Assignment = dict[int, list[int]]  # partition -> replicas, preferred leader first


def _zones(replicas: Sequence[int], racks: Mapping[int, str]) -> int:
    """How many zones the replicas cover (a broker without a zone counts as its own)."""
    return len({racks.get(r, f"#{r}") for r in replicas})


def _spread_zones(assignment: Assignment, brokers: Sequence[int], racks: Mapping[int, str]) -> None:
    """A partition with two replicas in one zone while a zone it lacks has a free broker: the later replica
    of the doubled zone moves to that zone's least loaded broker."""
    load = _replica_counts(assignment)
    for replicas in assignment.values():
        for position in range(len(replicas) - 1, -1, -1):
            held = [racks.get(r) for r in replicas]
            zone = held[position]
            if zone is None or held.count(zone) < 2:
                continue
            free = [b for b in brokers if racks.get(b) and racks[b] not in held and b not in replicas]
            if not free:
                break
            chosen = min(free, key=lambda b: (load[b], b))
            load[replicas[position]] -= 1
            load[chosen] += 1
            replicas[position] = chosen


def _replica_step(assignment: Assignment, high: int, low: int, racks: Mapping[int, str] | None = None) -> bool:
    """Give one of ``high``'s replicas (a follower's if it can) to ``low``, never narrowing a partition's zones."""
    zones = racks or {}

    def keeps_spread(replicas: list[int]) -> bool:
        return _zones([low if r == high else r for r in replicas], zones) >= _zones(replicas, zones)

    candidates = sorted(
        (replicas.index(high) == 0, number)
        for number, replicas in assignment.items()
        if high in replicas and low not in replicas and keeps_spread(replicas)
    )
    if not candidates:
        return False
    replicas = assignment[candidates[0][1]]
    replicas[replicas.index(high)] = low
    return True


def _leader_step(assignment: Assignment, high: int, low: int) -> bool:
    """Make ``low`` the preferred leader of a partition ``high`` leads and ``low`` holds."""
    number = next((n for n, replicas in sorted(assignment.items()) if replicas[0] == high and low in replicas), None)
    if number is None:
        return False
    replicas = assignment[number]
    at = replicas.index(low)
    replicas[0], replicas[at] = low, high
    return True


def _replica_counts(assignment: Assignment) -> Counter[int]:
    return Counter(r for replicas in assignment.values() for r in replicas)


def _leader_counts(assignment: Assignment) -> Counter[int]:
    return Counter(replicas[0] for replicas in assignment.values())


def _shift(
    assignment: Assignment,
    brokers: Sequence[int],
    count: Callable[[Assignment], Counter[int]],
    step: Callable[[Assignment, int, int], bool],
) -> bool:
    """One step from the most to the least loaded pair more than one apart that ``step`` can serve."""
    counted = count(assignment)
    order = sorted(brokers, key=lambda b: (counted[b], b))
    for high in reversed(order):
        for low in order:
            if counted[high] - counted[low] > 1 and step(assignment, high, low):
                return True
    return False


def plan_document(moves: Sequence[Move]) -> str:
    """The tool's JSON reassignment plan."""
    partitions = [{"topic": m.topic, "partition": m.partition, "replicas": list(m.replicas)} for m in moves]
    return json.dumps({"version": 1, "partitions": partitions}, sort_keys=True)


def _run_tool(broker: Engine, service: str, moves: Sequence[Move], connection: Sequence[str], *arguments: str) -> None:
    plan = plan_document(moves)
    apache.run_tool(broker, service, ["sh", "-c", WRITE_AND_RUN, "sh", plan, PLAN_FILE, REASSIGN_TOOL, *connection, *arguments])


def start(broker: Engine, service: str, moves: Sequence[Move], connection: Sequence[str], throttle_bytes: int = 0) -> None:
    """Hand the plan to Kafka through a broker container on ``broker`` (``connection``: ``tool_connection``);
    the controller carries it out. ``throttle_bytes``: a cap (bytes/s) on the moving replicas' traffic."""
    throttle = ["--throttle", str(throttle_bytes)] if throttle_bytes else []
    _run_tool(broker, service, moves, connection, "--execute", *throttle)


def clear_throttle(broker: Engine, service: str, moves: Sequence[Move], connection: Sequence[str]) -> None:
    """``--verify`` of a finished plan removes the throttles its ``--execute`` set."""
    _run_tool(broker, service, moves, connection, "--verify")


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


def wait_done(kafka: admin.KafkaAdmin, moves: Sequence[Move], timeout: float, progress: Progress) -> None:
    """Until every move is done, read through one client; a failed read while leaders move is said and read again."""
    deadline = waits.Deadline(timeout, first=POLL_INTERVAL)
    left = list(moves)
    while left:
        unread = ""
        try:
            left = pending(left, kafka.partition_states()[1])
        except BrokerError as error:
            unread = f" (reading the partitions failed, reading again: {error.message})"
        done = f"{len(moves) - len(left)}/{len(moves)} partitions done{unread}"
        progress(len(moves) - len(left), len(moves), f"moving replicas: {done}")
        if left and deadline.passed():
            names = ", ".join(f"{m.topic}-{m.partition}" for m in left[:5])
            raise DeployError(
                f"the reassignment did not finish within {timeout:g}s ({len(left)} partitions left: {names})",
                hint="see kafka-reassign-partitions.sh --verify in a broker container; it goes on in the background",
            )
        if left:
            deadline.sleep()
