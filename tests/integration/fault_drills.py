"""One fault drill on a sandbox cluster, under an idempotent acks=all producer: inject, ask `verify` from the
client's side, hold, heal, wait for every partition to be back at full ISR, then count what was lost or
duplicated.  Used by tests/integration/cluster/test_drills.py (asserting) and benchmarks/drills.py (tabulating).
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

from confluent_kafka import KafkaException

from swarmkit import waits
from swarmkit.errors import SwarmkitError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, TaskState, TaskStatus
from swarmkit.hosts.inventory import Inventory
from swarmkit.kafka.admin import ensure_topics, partition_states
from swarmkit.kafka.quorum import describe_quorum
from swarmkit.ops.controllers import controller_not_ready
from swarmkit.sandbox import faults
from swarmkit.stack.topics import TopicSpec
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, read_everything

ROOT = Path(__file__).resolve().parents[2]
SWARMKIT = str(ROOT / ".venv" / "bin" / "swarmkit")
PARTITIONS = 6
NAMED_AS = {"partition": "partition", "slow": "slow-link", "disk-full": "disk-full"}
IN_SYNC_WITHIN = 120.0
SETTLED_WITHIN = 180.0  # heal to the swarm having replaced the tasks of a host it marked down (about a minute seen)
WANTED_RUNNING = (TaskStatus.RUNNING, TaskStatus.READY)  # READY: a replacement waiting out its restart delay
READ_ATTEMPTS = 5
MANAGERS_WITHIN = 60.0  # how long the drill waits for one of the swarm's managers to answer
# Docker's 5 s heartbeat marks a host silent for 10-15 s down, and a down host's tasks (every Kafka task is pinned to
# its host) are replaced once it returns: a broker and controller restarted a minute after a short partition.  The
# drills' swarm heartbeats every 45 s, so a host is marked down after 90-135 s of silence (docs/drills.md).
HEARTBEAT_S = 45
# The producer gives a request in flight to a partitioned leader up after 7 s, not librdkafka's 60 s: an idempotent
# producer settles it before it writes to the new leader, so this bounds the partitions the lost host led; above the
# brokers' 6 s session, so a request waiting for a lost follower is answered once it is fenced (docs/drills.md).
CLIENT: dict[str, object] = {"socket.timeout.ms": 7_000}
T = TypeVar("T")


@dataclass
class DrillResult:
    fault: str
    node: str
    acknowledged: int = 0
    lost: int = 0
    duplicated: int = 0
    longest_pause_s: float = 0.0  # the longest time any partition went without an acknowledgement
    longest_pause_window: tuple[float, float] = (0.0, 0.0)  # when it began and ended, seconds after the fault began
    healed_after_s: float = 0.0  # when heal began, seconds after the fault began
    verify_s: float = 0.0
    verify_exit: int = -1
    named: bool = False  # verify's faults named this node and this fault
    faults_seen: list[dict] = field(default_factory=list)
    in_sync_s: float = -1.0  # heal to every partition back at full ISR (-1: not within IN_SYNC_WITHIN)
    settled_s: float = -1.0  # heal to no task left for the swarm to start or stop (-1: not within SETTLED_WITHIN)
    quorum_s: float = -1.0  # heal to every controller caught up with the quorum's leader (-1: not within IN_SYNC_WITHIN)
    restarted: list[str] = field(default_factory=list)  # services whose task on some node was replaced
    errors: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def bootstrap(inventory: Inventory) -> str:
    return ",".join(f"{host.name}:9094" for host in inventory.hosts)


def quorum_leader_host(inventory: Inventory) -> str:
    """The host of the active controller (controller ids are 9000 + the manager's position)."""
    leader = describe_quorum(inventory.hosts[0].name, 9094, 10.0).leader
    return inventory.managers[leader - 9001].name


def tolerate_partitions(inventory: Inventory) -> None:
    """The swarm's heartbeat period set to HEARTBEAT_S on the leader of the moment, before every drill.  Docker's
    leader applies a period to its count of missed heartbeats only when the period changes (a manager that becomes
    leader later reads the setting but counts with Docker's 5 s: moby/swarmkit's dispatcher, read 2026-11-27), so the
    period is changed by a second and back."""
    for seconds in (HEARTBEAT_S + 1, HEARTBEAT_S):
        on_a_manager(inventory, lambda manager, period=seconds: dockerapi.swarm_heartbeat(manager, period))


def running_tasks(inventory: Inventory, stack: str = "kafka") -> dict[str, set[str]]:
    """Each service's task ids the swarm wants running (a node the swarm marks down has its tasks' desired state set
    to shutdown at once, though they are replaced only when it returns)."""
    return {
        service: {t.id for t in tasks if t.desired_state == TaskStatus.RUNNING}
        for service, tasks in task_states(inventory, stack).items()
    }


def unsettled(inventory: Inventory, stack: str = "kafka") -> list[str]:
    """Tasks the swarm has still to start or stop: a host back from a partition long enough for the swarm to mark it
    down has its tasks stopped and replaced up to a minute or more after heal."""
    return [
        f"{task.name}: {task.state}, wanted {task.desired_state}"
        for tasks in task_states(inventory, stack).values()
        for task in tasks
        if (task.desired_state in WANTED_RUNNING) != (task.state == TaskStatus.RUNNING)
    ]


def task_states(inventory: Inventory, stack: str = "kafka") -> dict[str, tuple[TaskState, ...]]:
    """Every task of each service."""
    return on_a_manager(inventory, lambda manager: _tasks_seen_by(manager, stack))


def on_a_manager(inventory: Inventory, action: Callable[[dockerapi.Engine], T]) -> T:
    """``action`` on the first manager that answers (one just healed may not know the swarm's leader for a minute or
    more, and the others may be electing one: asked again after a pause, for up to MANAGERS_WITHIN seconds)."""
    docker, deadline, pause = DockerHosts.from_inventory(inventory), time.monotonic() + MANAGERS_WITHIN, waits.Pause()
    while True:
        for host in inventory.managers:
            try:
                return action(docker[host])
            except SwarmkitError as error:
                failure = error
        assert time.monotonic() < deadline, f"no manager answers: {failure.message}"
        pause.sleep()


def _tasks_seen_by(manager: dockerapi.Engine, stack: str) -> dict[str, tuple[TaskState, ...]]:
    found = {}
    for service in dockerapi.stack_services(manager, stack):
        state = dockerapi.service_state(manager, service)
        found[service] = state.tasks if state else ()
    return found


def out_of_sync(inventory: Inventory) -> int:
    """Partitions whose ISR is short of their replicas in any broker's view, each broker asked alone: a broker just
    healed from a partition answers from its stale metadata (every ISR full, itself still leading) until it has
    caught up with the controllers (every partition, when a broker does not answer)."""
    short = 0
    for host in inventory.hosts:
        try:
            _, states = partition_states(f"{host.name}:9094", 10.0)
        except Exception:  # noqa: BLE001 - a broker that does not answer yet is simply not in sync
            return PARTITIONS
        short = max(short, sum(1 for p in states if set(p.isr) != set(p.replicas)))
    return short


def quorum_behind(inventory: Inventory, since_ms: int) -> str:
    """What keeps the controllers from following one leader, every follower caught up with its log end since
    ``since_ms`` ("" when nothing; the sandbox's hosts share this machine's clock): a voter that came back from a cut
    may still wait out a connection begun during it, and a second host lost then costs the quorum its majority
    (docs/drills.md, run AC)."""
    try:
        state = describe_quorum(inventory.hosts[0].name, 9094, 10.0)
    except SwarmkitError as error:
        return error.message
    return ", ".join(dict.fromkeys(why for v in state.voters if (why := controller_not_ready(state, v.node_id, since_ms))))


def wait_in_sync(inventory: Inventory, within: float) -> float:
    """Seconds until every partition is at full ISR; -1 when not within ``within``."""
    return seconds_until_none(lambda: out_of_sync(inventory), within)[0]


def seconds_until_none(look: Callable[[], object], within: float) -> tuple[float, object]:
    """Seconds until ``look()`` finds nothing (-1 when not within ``within``), and what its first look found."""
    started, pause, first = time.monotonic(), waits.Pause(), None
    while found := look():
        first = first or found
        if time.monotonic() - started > within:
            print(f"still after {within:g} s: {found}")
            return -1.0, first
        pause.sleep()
    return time.monotonic() - started, first


def pause_window(producer: CountingProducer, injected: float) -> tuple[float, float]:
    """When the longest pause of any partition began and ended, in seconds after the fault was injected."""
    if not producer.longest_pause:
        return (0.0, 0.0)
    worst = max(producer.longest_pause, key=lambda partition: producer.longest_pause[partition])
    ended = producer.longest_pause_end[worst] - injected
    return (round(ended - producer.longest_pause[worst], 1), round(ended, 1))


def inject(name: str, kind: str, node: str) -> faults.Fault:
    if kind == "partition":
        return faults.partition(name, node)
    if kind == "slow":
        return faults.slow(name, node, "1mbit")
    return faults.disk_full(name, node)


def verify_json(inventory: Inventory) -> tuple[float, int, list[dict]]:
    """`swarmkit verify --timeout 30 --json` as a user runs it: (seconds, exit code, the faults it named)."""
    started = time.monotonic()
    done = subprocess.run(
        [SWARMKIT, "verify", "-i", str(inventory.path), "--timeout", "30", "--json"], capture_output=True, text=True, timeout=120
    )
    took = time.monotonic() - started
    print(f"verify: exit {done.returncode} after {took:.1f} s\n{done.stdout[-3000:]}{done.stderr[-2000:]}")
    try:
        named = json.loads(done.stdout).get("faults", [])
    except ValueError:
        named = []
    return took, done.returncode, named


def read_back(inventory: Inventory, topic: str) -> Counter[int]:
    """Every record of the topic; a consumer whose first broker has not caught up with the metadata yet (just
    healed) is asked again after a pause."""
    pause = waits.Pause()
    for _ in range(READ_ATTEMPTS - 1):
        try:
            return read_everything(bootstrap(inventory), topic, PARTITIONS)
        except KafkaException as error:
            print(f"reading {topic} back: {error}; again")
            pause.sleep()
    return read_everything(bootstrap(inventory), topic, PARTITIONS)


def drill(
    inventory: Inventory, name: str, kind: str, node: str, hold_s: float, topic: str, client: dict[str, object] | None = None
) -> DrillResult:
    """The whole drill; ``hold_s``: the fault lasts at least this long (verify and some writes happen inside it);
    ``client``: the producer's settings over kafka_traffic's (e.g. a shorter request.timeout.ms)."""
    result = DrillResult(kind, node)
    tolerate_partitions(inventory)
    assert ensure_topics(inventory.hosts[0].name + ":9094", [TopicSpec(topic, PARTITIONS, 3)])[0].ok
    wait_in_sync(inventory, IN_SYNC_WITHIN)
    before = running_tasks(inventory)
    producer = CountingProducer(bootstrap(inventory), topic, config=client or {}).start()
    try:
        producer.acked_after(1000, timeout=120)
        producer.longest_pause.clear()
        producer.longest_pause_end.clear()
        injected = time.monotonic()
        print(inject(name, kind, node).detail)
        try:
            result.verify_s, result.verify_exit, result.faults_seen = verify_json(inventory)
            result.named = any(f["node"] == node and f["kind"] == NAMED_AS[kind] for f in result.faults_seen)
            producer.acked_after(300, timeout=120)  # writes go on with the fault in place
            waits.hold(max(0.0, injected + hold_s - time.monotonic()))
        finally:
            result.healed_after_s = round(time.monotonic() - injected, 1)
            print(faults.heal(name, node))
        healed, healed_ms = time.monotonic(), int(time.time() * 1000)
        result.in_sync_s = wait_in_sync(inventory, IN_SYNC_WITHIN)
        quorum_s, _ = seconds_until_none(lambda: quorum_behind(inventory, healed_ms), IN_SYNC_WITHIN)
        result.quorum_s = quorum_s if quorum_s < 0 else round(time.monotonic() - healed, 1)
        # the swarm's own consequences belong to this drill too: tasks it replaces after heal, then their catching up
        settled, pending = seconds_until_none(lambda: unsettled(inventory), SETTLED_WITHIN)
        result.settled_s = settled if settled < 0 else round(time.monotonic() - healed, 1)
        if pending:
            wait_in_sync(inventory, IN_SYNC_WITHIN)
        producer.acked_after(300, timeout=60)
    finally:
        producer.stop()
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_back(inventory, topic))
    result.acknowledged, result.lost, result.duplicated = len(producer.acknowledged), len(lost), len(duplicated)
    result.longest_pause_s = max(producer.longest_pause.values(), default=0.0)
    result.longest_pause_window = pause_window(producer, injected)
    result.errors = sorted(set(producer.errors))[:5]
    after = running_tasks(inventory)
    result.restarted = sorted(service for service, tasks in before.items() if after.get(service) != tasks)
    print(f"drill {kind} on {node}: {result.to_dict()}")
    return result
