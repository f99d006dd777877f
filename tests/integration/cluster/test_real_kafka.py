"""A replicated Apache Kafka cluster on a real 3-host sandbox (three managers, one KRaft controller each),
and the Spark verify job on it.

The tests run in order on one cluster: the cluster itself, verify bounded with a paused controller, a
client that follows advertised addresses to every leader, the seeds' failure on a second stack that
advertises names nobody resolves; then Spark: the streaming mode restarted from its checkpoint, `spark
up` refusing bad input, `verify --spark` on the swarm's own Spark cluster (`swarmkit spark up|down`) with
tasks on every node, every partition checked through its leader and the run's page drawn, `verify
--every` scraped by Prometheus; then a scale-out, `verify --spark` (local mode) through the new broker,
the new broker given its share by rebalance, and last the new node retired again; replicas move under
acks=all traffic.  A node lost and brought back under acks=all traffic is test_day2's (with the alerts
it raises).  One sandbox and one `up` for all of it: each is minutes of a 2-core machine.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer

from swarmkit.checks import diagnose
from swarmkit.checks.diagnose import BrokerCheck
from swarmkit.checks.verify import BrokerVerdict, VerifyOptions, VerifyReport, verify
from swarmkit.errors import BrokerError, SpecError, SwarmkitError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import ClusterMetadata, broker_metadata, ensure_topics, partition_states
from swarmkit.ops.deploy import deploy, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.ops.rebalance import RebalanceOptions, rebalance
from swarmkit.ops.retire import retire
from swarmkit.sandbox.state import Sandbox
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.topics import TopicSpec
from swarmkit.traffic import spark as sparkjob
from swarmkit.traffic import spark_cluster
from swarmkit.traffic.spark_streaming import StreamOptions, run_streaming_job
from swarmkit.waits import Pause
from tests.integration import spark_checks
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, producer_config, read_everything
from tests.integration.sandboxes import module_sandbox, swarm_state

pytestmark = pytest.mark.integration

NAME = "rk"
ROOT = Path(__file__).resolve().parents[3]
STREAM_TOPIC = "stream"
TOPICS = f"orders:6:3,{STREAM_TOPIC}:3:3"
BROKERS = ["rk1:9094", "rk2:9094", "rk3:9094"]
NODES = {"rk1", "rk2", "rk3"}
SPARK_STACK = spark_cluster.stack_name("kafka")
SWARMKIT = str(Path(sys.executable).with_name("swarmkit"))
rk = module_sandbox(NAME, 3, "10.238.0.0/24", engine="apache", managers=3)


def wait_until(condition: Callable[[], object], timeout: float, what: str | Callable[[], str]) -> object:
    """``what`` may be a callable, read at the timeout, that says what the last pass was missing."""
    deadline = time.monotonic() + timeout
    while True:
        result = condition()
        if result:
            return result
        assert time.monotonic() < deadline, (
            f"timed out after {timeout:.0f} s waiting for {what if isinstance(what, str) else what()}"
        )
        time.sleep(1)


@pytest.fixture(scope="module")
def cluster(rk: Sandbox) -> Iterator[Inventory]:
    inventory = load_inventory(rk.inventory_path)
    result = up(plan(inventory, DeployOptions(topics=TOPICS)), Session.of(inventory))
    assert result.ok, result.deploy.problems
    try:
        yield inventory
    finally:
        with contextlib.suppress(SwarmkitError):
            spark_cluster.spark_down(Session.of(inventory))


def verified(inventory: Inventory, **options: object) -> VerifyReport:
    return verify(Session.of(inventory), VerifyOptions(**options))


class EveryBrokerSeen:
    """Passes of a check until each of the three brokers has answered in one of them: under load a
    broker is fenced for a moment now and then, missing from the metadata of that pass only."""

    def __init__(self, look: Callable[[], dict[str, BrokerCheck]], looking_for: str) -> None:
        self.look, self.looking_for = look, looking_for
        self.seen: dict[str, BrokerCheck] = {}
        self.last: dict[str, BrokerCheck] = {}

    def __call__(self) -> list[BrokerCheck] | None:
        self.last = self.look()
        self.seen.update({key: check for key, check in self.last.items() if check.advertised})
        return [self.seen[key] for key in sorted(self.seen)] if len(self.seen) == 3 else None

    def missing(self) -> str:
        unseen = {key: check.detail for key, check in self.last.items() if key not in self.seen}
        return f"{self.looking_for}; answered so far: {sorted(self.seen) or 'none'}; last pass: {unseen}"


def verify_answers(inventory: Inventory, **options: object) -> Callable[[], dict[str, BrokerCheck]]:
    return lambda: {b.node: b for b in verified(inventory, **options).brokers}


def diagnose_lists(bootstrap: str) -> Callable[[], dict[str, BrokerCheck]]:
    return lambda: {b.advertised: b for b in diagnose.diagnose(bootstrap).brokers}


def broker_containers(inventory: Inventory) -> dict[str, str]:
    state = dockerapi.service_state(DockerHosts.from_inventory(inventory)[inventory.first_manager], "kafka_broker")
    assert state is not None
    return {t.node_id: t.container_id for t in state.tasks if t.state == "running"}


def test_one_kraft_cluster_with_every_broker_advertising_its_own_node(cluster: Inventory) -> None:
    metadata = broker_metadata("rk1:9094")
    assert {(b.node_id, b.endpoint) for b in metadata.brokers} == {(1, "rk1:9094"), (2, "rk2:9094"), (3, "rk3:9094")}
    report = verified(cluster)
    assert report.ok, report.to_dict()
    health = report.cluster
    assert health is not None
    assert health.quorum.leader in (9001, 9002, 9003)
    assert sorted(v.node_id for v in health.quorum.voters) == [9001, 9002, 9003]
    assert not health.under_replicated and not health.offline
    _, partitions = partition_states("rk2:9094")
    orders = [p for p in partitions if p.topic == "orders"]
    assert len(orders) == 6 and all(len(p.replicas) == 3 and p.min_isr == 2 for p in orders)
    assert {b.broker_id for b in health.brokers if b.leaders} == {1, 2, 3}


def test_verify_is_bounded_and_names_a_paused_controller(cluster: Inventory, rk: Sandbox) -> None:
    """The quorum's leader frozen (`docker pause`): verify still returns, fails, and says which controller."""
    leader = verified(cluster).cluster.quorum.leader  # type: ignore[union-attr]
    host = rk.hosts[leader - 9001]  # controller-i runs on the i-th manager
    docker = host.docker.client
    (container,) = docker.container.list(filters=[("label", f"com.docker.swarm.service.name=kafka_controller-{leader - 9000}")])
    docker.container.pause(container)
    try:
        done = subprocess.run(
            [SWARMKIT, "verify", "-i", rk.inventory_path, "--timeout", "20", "--json"],
            capture_output=True,
            text=True,
            timeout=40,  # the acceptance bound: a paused controller must not hold verify
            stdin=subprocess.DEVNULL,
        )
    finally:
        docker.container.unpause(container)
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False
    said = report["cluster"]["problems"] if report["cluster"] else [report["cluster_error"]]  # no broker checked in time
    assert any(f"controller {leader} (" in line and "paused" in line for line in said), said
    assert "checking every broker from here" in done.stderr  # progress reached a stderr that is no terminal
    wait_until(lambda: verified(cluster).ok, 240, "the cluster to be healthy again once the controller runs")


def test_a_client_given_one_broker_follows_the_metadata_to_every_leader(cluster: Inventory) -> None:
    assert ensure_topics("rk1:9094", [TopicSpec("reach", 6, 3)])[0].ok

    def leaders() -> dict[int, int]:  # rk1 learns of the new topic from the controllers a moment later
        found = {p.partition: p.leader for p in partition_states("rk1:9094")[1] if p.topic == "reach" and p.leader >= 0}
        return found if len(found) == 6 else {}

    placed = wait_until(leaders, 30, "every partition of the new topic to have a leader in rk1's metadata")
    assert set(placed.values()) == {1, 2, 3}, "the test needs leaders on every broker"  # type: ignore[union-attr]
    delivered: list[int] = []
    producer = Producer(producer_config("rk1:9094"))
    for number in range(600):
        producer.produce(
            "reach", str(number).encode(), partition=number % 6, on_delivery=lambda e, m: e or delivered.append(m.partition())
        )
    assert producer.flush(30) == 0
    assert sorted(set(delivered)) == list(range(6)) and len(delivered) == 600
    found = read_everything("rk1:9094", "reach", 6)
    assert sorted(found) == list(range(600)) and set(found.values()) == {1}


def metadata_from(bootstrap: str) -> Callable[[], ClusterMetadata | None]:
    def ask() -> ClusterMetadata | None:
        try:
            return broker_metadata(bootstrap)
        except BrokerError:
            return None

    return ask


def test_an_unresolvable_advertised_name_is_named_for_every_broker(cluster: Inventory, rk: Sandbox) -> None:
    """The seeds' failure: the bootstrap answers, then each broker advertises a cloud-internal name (like an EC2
    private DNS name) that resolves nowhere; clients fail, and verify and diagnose name every broker."""
    options = DeployOptions(
        advertise="command",
        hostname_command="echo $SWARMKIT_NODE_HOSTNAME.compute.internal",
        stack_name="bad",
        listeners=ListenerPlan.build(external_port=9194),
    )
    advertised = ["rk1.compute.internal:9194", "rk2.compute.internal:9194", "rk3.compute.internal:9194"]
    try:
        assert deploy(plan(cluster, options), Session.of(cluster)).ok
        metadata = wait_until(metadata_from("rk1:9194"), 120, "rk1:9194 to answer")  # bootstrap works...
        assert isinstance(metadata, ClusterMetadata)
        assert sorted(b.endpoint for b in metadata.brokers) == advertised
        failures: list[str] = []
        producer = Producer(producer_config("rk1:9194", **{"message.timeout.ms": 6000}))
        producer.produce("bad-topic", b"x", on_delivery=lambda error, _: failures.append(str(error)))
        producer.flush(15)
        producer.close()  # its threads would go on dialing rk1:9194 for the rest of the module
        assert failures and failures[0] != "None"  # ...and producing fails
        answered = EveryBrokerSeen(verify_answers(cluster, stack_name="bad", external_port=9194), "each bad broker to answer")
        verdicts = wait_until(answered, 180, answered.missing)
        assert isinstance(verdicts, list)
        for broker in verdicts:
            assert isinstance(broker, BrokerVerdict) and not broker.ok
            assert broker.advertised == f"{broker.node}.compute.internal:9194" and not broker.resolves
            assert "does not resolve" in broker.detail and "HOSTNAME_COMMAND" in broker.fix
        listed = EveryBrokerSeen(diagnose_lists("rk1:9194"), "rk1:9194 to list each bad broker")
        diagnosed = wait_until(listed, 180, listed.missing)
        assert isinstance(diagnosed, list)
        assert [b.advertised for b in diagnosed if not b.resolves and b.fix] == advertised
        assert all("internal" in b.cause.lower() for b in diagnosed), [b.cause for b in diagnosed]
    except BaseException:
        print(f"the side stack when the test failed:\n{swarm_state(rk)}")
        raise
    finally:
        dockerapi.remove_stack(DockerHosts.from_inventory(cluster)[cluster.first_manager], "bad")


def test_a_spark_query_restarted_from_its_checkpoint_sees_every_record_exactly_once(cluster: Inventory, tmp_path: Path) -> None:
    # The job needs a partition led by every broker; the module's earlier faults (a paused controller, a second
    # cluster on the same hosts) can leave leadership moved on a busy machine: handed back as an operator would.
    handed = rebalance(Session.of(cluster), RebalanceOptions(topics=(STREAM_TOPIC,)))
    assert not handed.election_refused and sorted(handed.leaders.values()) == [1, 1, 1], handed
    options = StreamOptions(seconds=12, rate=2000, restart_after=4, checkpoint=tmp_path / "checkpoint")
    report = run_streaming_job(BROKERS, STREAM_TOPIC, options, report_path=tmp_path / "report.json")
    assert report.ok, report.failures
    assert report.restarts == 1 and len(report.per_query) == 2 and all(report.per_query), report.per_query
    assert report.produced == report.acked == report.distinct == report.consumed > 0
    assert report.missing == report.duplicates == 0 and report.checksum_ok
    assert report.latency_max_ms >= report.latency_p99_ms >= report.latency_p50_ms > 0
    assert report.records_per_s > 0 and report.batches >= 2
    assert (tmp_path / "checkpoint" / "query" / "commits").is_dir()


def cli(*args: str, timeout: float = 900) -> dict:
    done = subprocess.run([SWARMKIT, *args, "--json"], capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"swarmkit {' '.join(args)}: {done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return json.loads(done.stdout)


def spark_services(inventory: Inventory) -> list[str]:
    return dockerapi.stack_services(DockerHosts.from_inventory(inventory)[inventory.first_manager], SPARK_STACK)


def test_spark_up_refuses_bad_input_and_changes_nothing(cluster: Inventory, rk: Sandbox) -> None:
    with pytest.raises(spark_cluster.SparkClusterError, match="not a manager"):
        spark_cluster.spark_up(Session.of(cluster), master_host="nosuch")
    with pytest.raises(spark_cluster.SparkClusterError, match="is missing on") as missing:
        spark_cluster.spark_up(Session.of(cluster), image=f"{rk.registry}/swarmkit/spark:no-such-tag")
    assert missing.value.hint
    with spark_checks.listening(rk.hosts[0], spark_cluster.MASTER_PORT):
        with pytest.raises(spark_cluster.SparkClusterError, match=r"port 7077/tcp on rk1 .* already in use"):
            spark_cluster.spark_up(Session.of(cluster))
    assert spark_services(cluster) == []


def test_the_verify_job_runs_on_the_swarms_spark_with_executors_on_every_node(
    cluster: Inventory, rk: Sandbox, tmp_path: Path
) -> None:
    started = time.monotonic()
    deployed = cli("spark", "up", "-i", rk.inventory_path)
    up_s = time.monotonic() - started
    assert deployed["master_url"] == "spark://rk1:7077" and set(deployed["workers"]) == NODES
    status = sparkjob.master_status("rk1")
    assert status is not None and {w["host"] for w in status["workers"] if w["state"] == "ALIVE"} == NODES

    report_path = tmp_path / "report.json"  # beside the page
    verified = cli("verify", "-i", rk.inventory_path, "--spark", "--master", deployed["master_url"], "--records", "5000",
                   "--report", str(report_path.with_suffix(".html")))  # fmt: skip
    assert verified["ok"], verified
    assert "per-broker throughput and latency" in report_path.with_suffix(".html").read_text()
    report = json.loads(report_path.read_text())
    assert report["master"] == "spark://rk1:7077"
    assert all(b["ok"] and b["consumed"] == 5000 for b in report["brokers"]), report["brokers"]
    spark_checks.every_partition_checked_through_its_leader(sparkjob.SparkReport.from_dict(report, 0.0, ""), BROKERS[0])
    spark_checks.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page = shutil.copy(report_path.with_suffix(".html"), spark_checks.ARTIFACTS / "verify-spark.html")
    spark_checks.page_shows_every_chart(Path(page), NODES)
    tasks = spark_checks.task_hosts(sparkjob.event_log_dir(report_path))
    assert set(tasks) == NODES, f"tasks ran on {dict(tasks)}"
    finished = sparkjob.master_status("rk1") or {}
    assert any(app["name"] == "swarmkit-verify" for app in finished.get("completedapps", []))
    print(f"\nspark up {up_s:.1f} s; job {report['elapsed_s']} s, {report['records_per_s']} records/s; tasks {dict(tasks)}")

    removed = cli("spark", "down", "-i", rk.inventory_path)
    assert sorted(removed["removed"]) == [f"{SPARK_STACK}_master", f"{SPARK_STACK}_worker"]
    assert spark_services(cluster) == []
    assert sparkjob.master_status("rk1") is None


def test_verify_every_serves_its_verdicts_to_prometheus_on_the_swarm(cluster: Inventory, rk: Sandbox) -> None:
    """The loop on this machine, Prometheus on rk1 scraping it through the node's route to the sandbox gateway."""
    port, series = spark_checks.free_port(), spark_checks.prometheus_series
    loop = subprocess.Popen(
        [SWARMKIT, "verify", "-i", rk.inventory_path, "--every", "10", "--rounds", "12",
         "--metrics-port", str(port), "--metrics-address", rk.gateway],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        target = f"{rk.gateway}:{port}"
        server = cli("metrics", "up", "-i", rk.inventory_path, "--verify-target", target, "--scrape-interval", "5")
        deadline, pause, seen = time.monotonic() + 90, Pause(), {}
        while seen != dict.fromkeys(NODES, 1.0) and time.monotonic() < deadline:
            pause.sleep()
            seen = series(server["url"], 'swarmkit_verify_broker_reachable{job="swarmkit-verify"}')
        assert seen == dict.fromkeys(NODES, 1.0), f"reachability series in Prometheus: {seen}"
        assert series(server["url"], "swarmkit_verify_broker_advertised_match") == dict.fromkeys(NODES, 1.0)
        latency = series(server["url"], "swarmkit_verify_broker_metadata_latency_seconds")
        assert set(latency) == NODES and all(0 < s < 10 for s in latency.values()), latency
        assert series(server["url"], "swarmkit_verify_ok") == {"": 1.0}
    finally:
        loop.send_signal(signal.SIGINT)  # as Ctrl-C: the loop stops between or within a round
        _, said = loop.communicate(timeout=60)
        cli("metrics", "down", "-i", rk.inventory_path, "--purge")
    assert "round 1: ok" in said, said[-2000:]


def runbook(name: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    script = ROOT / "scripts" / "runbooks" / name
    return subprocess.run(["bash", str(script), *arguments], capture_output=True, text=True, timeout=900)


def test_scale_out_starts_one_new_broker_and_restarts_none(cluster: Inventory, rk: Sandbox) -> None:
    before = broker_containers(cluster)
    run = runbook("scale-out.sh", rk.inventory_path, "--add-node", "--sandbox", NAME, "--", "--topics", TOPICS)
    print(f"\n{run.stdout}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r"broker id +4 on rk4 +new id", run.stdout)
    grown = load_inventory(rk.inventory_path)
    after = broker_containers(grown)
    assert {node: container for node, container in after.items() if node in before} == before
    assert len(after) == 4
    report = wait_until(lambda: (r := verified(grown)).ok and r, 60, "the new broker to be verified")
    assert isinstance(report, VerifyReport) and report.cluster is not None
    share = next(b for b in report.cluster.brokers if b.broker_id == 4)
    assert share.registered and share.node == "rk4" and share.replicas == 0
    assert any(note.startswith("broker 4 (rk4) holds no partitions yet") for note in report.cluster.notes)


def test_after_scale_out_verify_spark_sends_traffic_through_the_new_broker(rk: Sandbox) -> None:
    """The scratch topic made for 3 brokers (by the run on the swarm's Spark) has no leader on a 4th: verify makes it
    again for 4."""
    grown = load_inventory(rk.inventory_path)
    report = verify(Session.of(grown), VerifyOptions(spark=True, spark_records=5000))
    assert report.ok, report.to_dict()
    assert report.spark is not None and sorted(b.broker for b in report.spark.brokers) == [*BROKERS, "rk4:9094"]
    assert all(b.consumed == 5000 and b.partitions for b in report.spark.brokers)


def test_rebalance_gives_the_new_broker_its_share_under_acks_all_traffic(rk: Sandbox) -> None:
    producer = CountingProducer("rk1:9094,rk2:9094", "orders").start()
    try:
        producer.acked_after(2000, timeout=60)
        run = runbook("rebalance.sh", rk.inventory_path, "--", "--topics", "orders", "--throttle", "50")
        producer.acked_after(1000, timeout=60)
    finally:
        producer.stop()
    print(f"\n{run.stdout}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "verified: every broker is usable from here" in run.stdout
    reported = re.search(r"broker 4: (\d+) replicas, leads (\d+)", run.stdout)
    assert reported and int(reported[1]) >= 1 and int(reported[2]) >= 1, run.stdout  # rebalance's own report, not stale metadata
    orders = [p for p in partition_states("rk1:9094")[1] if p.topic == "orders"]
    replicas = Counter(r for p in orders for r in p.replicas)
    leaders = Counter(p.leader for p in orders)
    assert set(replicas) == {1, 2, 3, 4} and max(replicas.values()) - min(replicas.values()) <= 1
    assert set(leaders) == {1, 2, 3, 4} and max(leaders.values()) - min(leaders.values()) <= 1
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything("rk1:9094", "orders", 6))
    assert (lost, duplicated) == ([], []), f"{len(lost)} lost, {len(duplicated)} duplicated"


def test_retiring_a_manager_is_refused_before_anything_changes(rk: Sandbox) -> None:
    grown = load_inventory(rk.inventory_path)
    before = broker_containers(grown)
    with pytest.raises(SpecError, match="rk1 is a manager"):
        retire(Session.of(grown), "rk1")
    assert broker_containers(grown) == before


def test_retiring_a_node_moves_its_replicas_and_loses_no_acknowledged_record(rk: Sandbox) -> None:
    grown = load_inventory(rk.inventory_path)
    assert ensure_topics("rk1:9094", [TopicSpec("moving", 8, 3)])[0].ok  # created on 4 brokers: rk4 holds replicas
    producer = CountingProducer("rk1:9094,rk2:9094", "moving").start()
    try:
        producer.acked_after(2000, timeout=60)
        run = runbook("remove-node.sh", rk.inventory_path, "rk4")
        producer.acked_after(1000, timeout=60)
    finally:
        producer.stop()
    print(f"\n{run.stdout}")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "broker 4 on rk4:" in run.stdout and "unregistered, left the swarm" in run.stdout
    assert "verified: every broker is usable from here" in run.stdout
    registered, partitions = partition_states("rk1:9094")
    assert registered == (1, 2, 3)
    assert not [p for p in partitions if 4 in p.replicas or set(p.isr) != set(p.replicas)]
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything("rk1:9094", "moving", 8))
    assert (lost, duplicated) == ([], []), f"{len(lost)} lost, {len(duplicated)} duplicated"
    manager = DockerHosts.from_inventory(grown)[grown.first_manager]
    assert "rk4" not in {node.hostname for node in dockerapi.swarm_nodes(manager)}
    three = Inventory(tuple(h for h in grown.hosts if h.name != "rk4"), stack=grown.stack, path=grown.path)
    assert wait_until(lambda: verified(three).ok, 60, "the three remaining brokers to verify")
