"""Kafka upgrades on one replicated cluster (3 hosts, three managers: 3 brokers + 3 controllers) on 4.3.1,
with a topic at RF 3 / min ISR 2 and one idempotent acks=all producer running from the first test to the last.

In order: `upgrade --version 4.4.0 --no-finalize` interrupted (SIGINT, as Ctrl-C) once the controllers are
on 4.4.0, the cluster serving with mixed versions; a downgrade back to 4.3.1 (allowed: nothing finalized);
`plan` on an inventory naming 4.4.0 lists the upgrade and the finalize; `upgrade --version 4.4.0` to the
end: every node on 4.4.0, metadata.version raised, leadership spread within one of even, the quorum never
without a leader for longer than an election; `up` with the inventory naming 4.4.0 afterwards keeps the quorum
led (a controller whose spec the stack deploy changes restarts alone); a downgrade then refused (exit 2, nothing changed), `plan`
on the inventory naming 4.4.0 finds nothing and on the one naming 4.3.1 is refused; nothing acknowledged
was lost or duplicated.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from swarmkit.errors import CHANGES_PENDING, BrokerError
from swarmkit.hosts.dockerapi import service_state, task_spec
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import partition_states
from swarmkit.kafka.quorum import describe_quorum
from swarmkit.ops import upgrade
from swarmkit.ops.controllers import running_container
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox.state import Sandbox
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, read_everything
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

NAME = "ug"
TOPIC = "orders"
PARTITIONS = 6
ROOT = Path(__file__).resolve().parents[3]
SWARMKIT = str(ROOT / ".venv" / "bin" / "swarmkit")
ELECTION_S = 1.0  # controller.quorum.election.timeout.ms, Kafka's default
POLL_S = 0.25
ug = module_sandbox(NAME, 3, "10.250.0.0/24", engine="apache", managers=3, kafka_version="4.3.1")


@pytest.fixture(scope="module")
def cluster(ug: Sandbox) -> Inventory:
    inventory = load_inventory(ug.inventory_path)
    assert inventory.stack.kafka_version == "4.3.1"
    topics = f"{TOPIC}:{PARTITIONS}:3:min.insync.replicas=2"
    assert up(plan(inventory, DeployOptions(topics=topics)), Session.of(inventory)).ok
    return inventory


@pytest.fixture(scope="module")
def producer(cluster: Inventory) -> Iterator[CountingProducer]:
    bootstrap = ",".join(f"{h.address}:9094" for h in cluster.hosts)
    running = CountingProducer(bootstrap, TOPIC, rate_per_s=200).start()
    running.acked_after(200, 120)
    yield running
    running.stop()


class LeaderWatch:
    """Looks at the quorum every POLL_S s from a thread: the longest stretch seen without a leader."""

    def __init__(self, inventory: Inventory) -> None:
        self.addresses = [h.address for h in inventory.hosts]
        self.longest = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _leader(self) -> int | None:
        for address in self.addresses:
            try:
                return describe_quorum(address, 9094, 2.0).leader
            except BrokerError:
                continue
        return None  # no broker answered: says nothing about the quorum

    def _run(self) -> None:
        since = None
        while not self._stop.wait(POLL_S):
            leader = self._leader()
            if leader is not None and leader < 0:
                since = since or time.monotonic()
                self.longest = max(self.longest, time.monotonic() - since)
            elif leader is not None:
                since = None

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(10)
        return self.longest


def run(*command: object, timeout: float = 900) -> subprocess.CompletedProcess:
    args = [str(part) for part in command]
    started = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    print(f"$ {' '.join(args)}: exit {done.returncode} after {time.monotonic() - started:.1f} s\n{done.stdout}{done.stderr}")
    return done


def versions(inventory: Inventory) -> upgrade.ClusterVersions:
    return upgrade.read_versions(Session.of(inventory), "kafka", 9094)


def by_role(current: upgrade.ClusterVersions) -> dict[str, set[str]]:
    return {role: {n.version for n in current.nodes if n.role == role} for role in ("controller", "broker")}


def with_version(inventory: Inventory, version: str, path: Path) -> Path:
    document = yaml.safe_load(Path(inventory.path).read_text())
    document["stack"]["kafka_version"] = version
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def interrupt_after_controllers(inventory: Inventory) -> tuple[int, str]:
    """`upgrade --no-finalize`, sent SIGINT once the third controller is back; (exit code, its stderr)."""
    args = [SWARMKIT, "upgrade", "-i", inventory.path, "--version", "4.4.0", "--no-finalize"]
    process = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert process.stderr is not None
    lines = []
    for line in process.stderr:
        lines.append(line)
        if sum("back and caught up" in seen for seen in lines) == 3:
            process.send_signal(signal.SIGINT)
            break
    lines += process.stderr.readlines()
    code = process.wait(120)
    print("".join(lines))
    return code, "".join(lines)


def test_an_upgrade_interrupted_after_the_controllers_then_a_downgrade(cluster: Inventory, producer: CountingProducer) -> None:
    assert by_role(versions(cluster)) == {"controller": {"4.3.1"}, "broker": {"4.3.1"}}
    watch = LeaderWatch(cluster)
    code, stderr = interrupt_after_controllers(cluster)
    assert code == 130, stderr
    assert [line for line in stderr.splitlines() if "controller-" in line and "->" in line], "one progress line per node"
    mixed = versions(cluster)
    assert by_role(mixed)["controller"] == {"4.4.0"}
    assert mixed.metadata_level == 30
    producer.acked_after(200, 120)  # serving with mixed versions
    back = run(SWARMKIT, "upgrade", "-i", cluster.path, "--version", "4.3.1")
    assert back.returncode == 0
    assert by_role(versions(cluster)) == {"controller": {"4.3.1"}, "broker": {"4.3.1"}}
    leaderless = watch.stop()
    print(f"longest stretch without a quorum leader: {leaderless:.2f} s")
    assert leaderless <= ELECTION_S + POLL_S


def test_plan_names_the_upgrade_and_the_finalize(cluster: Inventory, tmp_path_factory: pytest.TempPathFactory) -> None:
    newer = with_version(cluster, "4.4.0", tmp_path_factory.mktemp("ug") / "newer.yaml")
    done = run(SWARMKIT, "plan", "-i", newer)
    assert done.returncode == CHANGES_PENDING
    assert "upgrade 4.3.1 -> 4.4.0 (6 node(s), one at a time)" in done.stdout
    assert "then finalize metadata.version 4.3-IV0 (30) -> 4.4-IV2 (33)" in done.stdout


def test_the_upgrade_to_the_end(cluster: Inventory, producer: CountingProducer) -> None:
    watch = LeaderWatch(cluster)
    done = run(SWARMKIT, "upgrade", "-i", cluster.path, "--version", "4.4.0")
    leaderless = watch.stop()
    print(f"longest stretch without a quorum leader: {leaderless:.2f} s")
    assert done.returncode == 0
    assert "finalized metadata.version: 4.3-IV0 (30) -> 4.4-IV2 (33)" in done.stdout
    after = versions(cluster)
    assert by_role(after) == {"controller": {"4.4.0"}, "broker": {"4.4.0"}}
    assert after.metadata_level == 33
    assert leaderless <= ELECTION_S + POLL_S
    _, partitions = partition_states(f"{cluster.hosts[0].address}:9094")
    led = [p.leader for p in partitions if p.topic == TOPIC]
    counts = [led.count(broker) for broker in (1, 2, 3)]
    assert max(counts) - min(counts) <= 1, f"leaders per broker: {counts}"
    producer.acked_after(200, 120)


def containers(inventory: Inventory) -> dict[str, str]:
    """Each controller's and broker's running container."""
    manager = Session.of(inventory).docker[inventory.first_manager]
    found = {f"controller-{i}": running_container(manager, f"kafka_controller-{i}") for i in (1, 2, 3)}
    state = service_state(manager, "kafka_broker")
    assert state is not None
    return found | {t.container_id: t.container_id for t in state.tasks if t.state == t.desired_state == "running"}


def differences(before: object, after: object, path: str = "") -> list[str]:
    """Where two JSON documents differ (printed: what the stack deploy changed in a controller's spec)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return [
            d for key in sorted(set(before) | set(after)) for d in differences(before.get(key), after.get(key), f"{path}.{key}")
        ]
    return [] if before == after else [f"{path}: {json.dumps(before)[:200]} -> {json.dumps(after)[:200]}"]


def test_up_with_the_new_release_declared_keeps_the_quorum_led(
    cluster: Inventory, producer: CountingProducer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    newer = with_version(cluster, "4.4.0", tmp_path_factory.mktemp("ug") / "newer.yaml")
    manager = Session.of(cluster).docker[cluster.first_manager]
    specs = {i: task_spec(manager, f"kafka_controller-{i}") for i in (1, 2, 3)}
    before = containers(cluster)
    watch = LeaderWatch(cluster)
    done = run(SWARMKIT, "up", "-i", newer, "--skip-preflight")
    leaderless = watch.stop()
    after = containers(cluster)
    for i, spec in specs.items():
        print(f"controller-{i}'s spec, changed by up: {differences(spec, task_spec(manager, f'kafka_controller-{i}'))}")
    print(
        f"longest stretch without a quorum leader: {leaderless:.2f} s; restarted: {sorted(k for k in before if after.get(k) != before[k])}"
    )
    assert done.returncode == 0
    assert leaderless <= ELECTION_S + POLL_S  # a controller the deploy changes restarts alone, never all three at once
    assert by_role(versions(cluster)) == {"controller": {"4.4.0"}, "broker": {"4.4.0"}}
    assert run(SWARMKIT, "plan", "-i", newer).returncode == 0
    producer.acked_after(200, 120)


def test_status_and_verify_name_each_node_release_and_the_finalized_level(cluster: Inventory) -> None:
    shown = json.loads(run(SWARMKIT, "status", "-i", cluster.path, "--json").stdout)
    assert {b["kafka_version"] for b in shown["brokers"]} == {"4.4.0"}
    assert {version for _, version in shown["controller_versions"]} == {"4.4.0"}
    assert shown["metadata_version"] == "4.4-IV2 (33)"
    verified = json.loads(run(SWARMKIT, "verify", "-i", cluster.path, "--json").stdout)
    assert verified["kafka"]["metadata_version"] == "4.4-IV2 (33)"
    assert sorted(verified["kafka"]["nodes"]) == [[f"broker {i}", "4.4.0"] for i in (1, 2, 3)] + [
        [f"controller {i}", "4.4.0"] for i in (9001, 9002, 9003)
    ]


def test_a_downgrade_after_the_finalize_is_refused(cluster: Inventory, tmp_path_factory: pytest.TempPathFactory) -> None:
    before = versions(cluster)
    done = run(SWARMKIT, "upgrade", "-i", cluster.path, "--version", "4.3.1")
    assert done.returncode == 2
    assert "4.4-IV2 (33)" in done.stderr + done.stdout
    assert versions(cluster) == before
    newer = with_version(cluster, "4.4.0", tmp_path_factory.mktemp("ug") / "newer.yaml")
    assert "no changes" in run(SWARMKIT, "plan", "-i", newer).stdout
    refused = run(SWARMKIT, "plan", "-i", cluster.path)  # the inventory still names 4.3.1
    assert refused.returncode == 2 and "4.4-IV2 (33)" in refused.stderr + refused.stdout


def test_nothing_acknowledged_was_lost_or_duplicated(cluster: Inventory, producer: CountingProducer) -> None:
    producer.stop()
    bootstrap = ",".join(f"{h.address}:9094" for h in cluster.hosts)
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything(bootstrap, TOPIC, PARTITIONS))
    print(f"{len(producer.acknowledged)} acknowledged, {len(producer.errors)} errors: {producer.errors[:3]}")
    assert (lost, duplicated) == ([], [])
