"""Day-2 operations on a replicated Apache Kafka cluster (3 hosts, three managers), through the runbooks.

In order on one cluster: `status` reads it; its controllers are a dynamic KRaft quorum (KIP-853) kept on the
managers; bad input to roll/down/status changes nothing; `metrics up`
scrapes every broker and controller on the overlay while their metrics port answers nobody outside it, an
engine stopped under an acks=all producer (verify names that node alone) raises the broker-down and
under-replicated alerts, which clear once it is back, its broker with the same id and data and no
acknowledged record lost or duplicated (the node-loss drill of real Kafka, watched by Prometheus),
`metrics down --purge` leaves nothing behind; a full `roll` (a changed broker setting) under an acks=all
producer loses and duplicates nothing, replaces every broker container and leaves the controllers alone;
`down` then `up` brings the same cluster back (same broker ids and cluster id, every record); a node
added is scraped by the running Prometheus; `up` refuses an inventory that swaps a manager for it, naming
`replace-node`, which then gives a dead manager's controller to it under an acks=all producer (nothing lost
or duplicated); `down --purge-data` removes the volumes and the kept labels.
"""

from __future__ import annotations

import base64
import http.client
import json
import secrets
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, Producer

from swarmkit import waits
from swarmkit.checks.status import status
from swarmkit.checks.verify import VerifyOptions, VerifyReport, verify
from swarmkit.errors import BrokerError, SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, SwarmNode
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import broker_metadata, ensure_topics, partition_states
from swarmkit.kafka.quorum import QuorumState, describe_quorum
from swarmkit.ops.deploy import deploy, guard_controllers, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.ops.replace import replace_node
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox.state import Sandbox
from swarmkit.stack.compose import KAFKA_UID
from swarmkit.stack.controllers import ControllerSet, directory_id
from swarmkit.stack.metrics import AGENT_PORT, NODE_PORT
from swarmkit.stack.topics import TopicSpec
from swarmkit.swarm import bootstrap as swarm
from swarmkit.swarm import identity
from tests.integration import alert_receiver
from tests.integration.alert_receiver import Receiver
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, producer_config, read_everything
from tests.integration.sandboxes import in_host, module_sandbox

pytestmark = pytest.mark.integration

NAME = "d2"
TOPICS = "orders:6:3"
ROOT = Path(__file__).resolve().parents[3]
RUNBOOKS = ROOT / "scripts" / "runbooks"
SWARMKIT = str(ROOT / ".venv" / "bin" / "swarmkit")
d2 = module_sandbox(NAME, 3, "10.239.0.0/24", engine="apache", managers=3)
EVERY_TARGET = {"kafka-broker": 3, "kafka-controller": 3}
FIRING_WITHIN = 60 + 15  # raised within 60 s, firing one `for: 15s` later
SCRAPE_EVERY = "5"  # seconds (and rule evaluations, target lookups): each wait for Prometheus is a third of the default's


SMALL_DISK = "d21"  # its broker's data volume is a file system of its own, small enough to fill
SMALL_DISK_MB = 256
VERIFY_PORT = 9466  # the verify loop of the lag test, on the bridge's address


@pytest.fixture(scope="module")
def small_disk(d2: Sandbox, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """d21's volume kafka_data on a 256 MB ext4 of its own (a loop device), made before `up`, which adopts it as
    it adopts the identity volume (same name, the stack's label): the disk alert's threshold can be passed."""
    image = tmp_path_factory.mktemp("disk") / "d21-data.img"
    subprocess.run(["truncate", "-s", f"{SMALL_DISK_MB}M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-m", "0", "-E", "root_owner=1000:1000", str(image)], check=True)  # appuser's
    subprocess.run(["debugfs", "-w", "-R", "rmdir lost+found", str(image)], check=True, capture_output=True)  # not a log
    device = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True, check=True).stdout
    endpoint = d2.host(SMALL_DISK).endpoint
    options = ["--opt", "type=ext4", "--opt", f"device={device.strip()}", "--label", "com.docker.stack.namespace=kafka"]
    assert run("docker", "-H", endpoint, "volume", "create", *options, "kafka_data").returncode == 0
    yield device.strip()
    subprocess.run(["losetup", "-d", device.strip()], check=False)  # still mounted: detached once the sandbox is gone


@pytest.fixture(scope="module")
def cluster(d2: Sandbox, small_disk: str) -> Inventory:
    inventory = load_inventory(d2.inventory_path)
    assert up(plan(inventory, DeployOptions(topics=TOPICS)), Session.of(inventory)).ok
    return inventory


@pytest.fixture(scope="module")
def receiver(d2: Sandbox) -> Iterator[Receiver]:
    """Alertmanager's webhook, served here on the bridge's address."""
    started = alert_receiver.start(d2.gateway)
    yield started
    started.stop()


@pytest.fixture(scope="module")
def secret_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A webhook token and an SMTP password, each in a file the inventory names."""
    directory = tmp_path_factory.mktemp("secrets")
    found = {}
    for name in ("token", "password"):
        found[name] = directory / name
        found[name].write_text(f"swarmkit-{name}-{secrets.token_hex(12)}\n")
    return found


@pytest.fixture(scope="module")
def alerting(d2: Sandbox, receiver: Receiver, secret_files: dict[str, Path]) -> dict:
    """The inventory's metrics block: the test's webhook with a token, an e-mail receiver whose server does not
    answer (it counts as failed), the intervals shortened (group_wait 1 s, group_interval 5 s), lag over 1 min."""
    return {
        "alerts": {
            "webhook": {"url": receiver.url, "token_file": str(secret_files["token"])},
            "email": {
                "to": "oncall@example.invalid",
                "from": "kafka@example.invalid",
                "smarthost": f"{d2.gateway}:9",  # nothing listens there: delivery fails, and says so
                "username": "kafka",
                "password_file": str(secret_files["password"]),
                "require_tls": False,
            },
            "group_wait": 1,
            "group_interval": 5,
            "repeat_interval": 3600,
        },
        "lag_minutes": 1,
    }


def with_metrics(inventory: Inventory, alerting: dict) -> str:
    """A copy of the inventory with the metrics block, beside it."""
    document = yaml.safe_load(Path(inventory.path or "").read_text())
    path = Path(inventory.path or "").with_name("with-metrics.yaml")
    path.write_text(yaml.safe_dump({**document, "metrics": alerting}, sort_keys=False))
    return str(path)


def run(*command: object, timeout: float = 300) -> subprocess.CompletedProcess:
    args = [str(part) for part in command]
    started = time.monotonic()
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    took = time.monotonic() - started
    print(f"$ {' '.join(args)}: exit {done.returncode} after {took:.1f} s\n{done.stdout}{done.stderr}")
    return done


def containers(inventory: Inventory, service: str, stack: str = "kafka") -> dict[str, str]:
    """Running container of a service per swarm node."""
    state = dockerapi.service_state(DockerHosts.from_inventory(inventory)[inventory.first_manager], f"{stack}_{service}")
    assert state is not None
    return {t.node_id: t.container_id for t in state.tasks if t.state == "running"}


def stack_left(inventory: Inventory, label: str) -> dict[str, int]:
    docker = DockerHosts.from_inventory(inventory)
    return {h.name: dockerapi.labelled_containers(docker[h], label) for h in inventory.hosts}


def test_status_shows_nodes_brokers_controllers_and_topics(cluster: Inventory) -> None:
    started = time.monotonic()
    report = status(Session.of(cluster))
    print(f"status read in {time.monotonic() - started:.2f} s")
    assert report.ok, report.kafka_error
    assert [(n.host, n.role, n.availability, n.broker_id) for n in report.nodes] == [
        ("d21", "manager", "active", 1),
        ("d22", "manager", "active", 2),
        ("d23", "manager", "active", 3),
    ]
    assert {(b.broker_id, b.advertised, b.registered, b.task) for b in report.brokers} == {
        (i, f"d2{i}:9094", True, "running") for i in (1, 2, 3)
    }
    assert report.quorum is not None and report.quorum.leader in (9001, 9002, 9003)
    orders = next(t for t in report.topics if t.topic == "orders")
    assert (orders.partitions, orders.replication_factor, orders.under_replicated, orders.offline) == (6, 3, 0, 0)
    done = run(RUNBOOKS / "status.sh", cluster.path)
    assert done.returncode == 0 and "HEALTHY" in done.stdout


def manager_nodes(inventory: Inventory) -> list[SwarmNode]:
    return dockerapi.swarm_nodes(DockerHosts.from_inventory(inventory)[inventory.first_manager])


def quorum_of(bootstrap: str) -> QuorumState:
    """The quorum as the broker describes it, asked again for up to a minute: right after a voter change the
    request can time out while the controllers settle (CI: 10 s without an answer after replace-node)."""
    host, port = bootstrap.split(":")

    def look() -> QuorumState | waits.NotYet:
        try:
            return describe_quorum(host, int(port), 10.0)
        except BrokerError as error:
            return waits.NotYet(error.message)

    return waits.until(look, 60, fail=lambda why: AssertionError(f"no quorum description within 60 s: {why}"))


def test_a_new_cluster_has_a_dynamic_quorum_kept_on_the_managers(cluster: Inventory) -> None:
    """Voters formatted with directory ids derived from the cluster id; the set kept on the managers (KIP-853)."""
    state = quorum_of("d21:9094")
    cluster_id = identity.kept_cluster_id(manager_nodes(cluster), "kafka")
    assert cluster_id
    assert sorted((v.node_id, v.directory_id) for v in state.voters) == [
        (node_id, directory_id(cluster_id, node_id)) for node_id in (9001, 9002, 9003)
    ]
    assert sorted(o.node_id for o in state.observers) == [1, 2, 3]  # the brokers
    assert identity.kept_controllers(manager_nodes(cluster), "kafka") == ControllerSet.first(["d21", "d22", "d23"])


def test_bad_input_is_refused_and_changes_nothing(cluster: Inventory) -> None:
    before = containers(cluster, "broker")
    refusals = [
        (["roll", "--set", "listeners=PLAINTEXT://:1"], 2, "set by swarmkit"),
        (["roll", "--set", "node.id=7"], 2, "set by swarmkit"),
        (["roll", "--image", "Not An Image"], 2, "not a valid image reference"),
        (["roll", "--node", "nowhere"], 2, "not in the inventory"),
        (["roll", "--stack", "nope"], 1, "not deployed"),
        (["down", "--purge-data"], 2, "--yes"),
        (["down", "--stack", "nope"], 1, "not deployed"),
        (["status", "--stack", "nope"], 1, "not deployed"),
    ]
    for args, code, message in refusals:
        done = run(SWARMKIT, args[0], "-i", cluster.path, *args[1:])
        assert done.returncode == code and message in done.stderr, args
    assert containers(cluster, "broker") == before


def prometheus(url: str, path: str, **query: str) -> list:
    """The ``data`` of one Prometheus API call: a query's result, the alerts, or the rule groups."""
    with urllib.request.urlopen(f"{url}api/v1/{path}?{urllib.parse.urlencode(query)}", timeout=5) as response:
        data = json.loads(response.read())["data"]
    return next(data[key] for key in ("result", "alerts", "groups") if key in data)


def wait_for(what: str, check, timeout: float, every: float = 2.0):
    deadline = time.monotonic() + timeout
    while not (found := check()):
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(every)
    return found


def answered(look):
    """``look()``, or False while a broker answers that it cannot reach the controllers (Kafka's "Timed out waiting
    for controller" while the quorum forms again after a host's return): a wait goes on through it."""
    try:
        return look()
    except BrokerError:
        return False


def metrics_up(inventory: Inventory, alerting: dict, gateway: str) -> str:
    """`metrics up` with the test's receivers, and the lag test's verify loop as a target (down until it runs)."""
    target = f"{gateway}:{VERIFY_PORT}"
    args = ["-i", with_metrics(inventory, alerting), "--scrape-interval", SCRAPE_EVERY, "--verify-target", target, "--json"]
    done = run(SWARMKIT, "metrics", "up", *args, timeout=600)
    assert done.returncode == 0
    server = json.loads(done.stdout)
    assert server["receivers"] == [f"webhook {alerting['alerts']['webhook']['url']}", "email oncall@example.invalid"]
    return server["url"]


@pytest.fixture(scope="module")
def metrics_url(d2: Sandbox, cluster: Inventory, alerting: dict) -> str:
    return metrics_up(cluster, alerting, d2.gateway)


def scraped(url: str) -> dict[str, int]:
    """How many targets of each Kafka job answer scrapes now."""
    jobs: dict[str, int] = {}
    for series in prometheus(url, "query", query='up{job=~"kafka-.*"} == 1'):
        jobs[series["metric"]["job"]] = jobs.get(series["metric"]["job"], 0) + 1
    return jobs


def test_metrics_up_scrapes_every_broker_and_controller(cluster: Inventory, metrics_url: str) -> None:
    started = time.monotonic()
    wait_for("3 brokers and 3 controllers scraped", lambda: scraped(metrics_url) == EVERY_TARGET, 180)
    print(f"every target up {time.monotonic() - started:.1f} s after metrics up")
    brokers = prometheus(metrics_url, "query", query="kafka_server_replicamanager_partitioncount")
    assert len(brokers) == 3 and all(s["metric"]["service"] == "kafka_broker" for s in brokers)
    ids = prometheus(metrics_url, "query", query="kafka_server_app_info_start_time_ms")
    assert sorted(int(s["metric"]["node_id"]) for s in ids) == [1, 2, 3, 9001, 9002, 9003]
    active = prometheus(
        metrics_url, "query", query='sum(kafka_controller_kafkacontroller_activecontrollercount{job="kafka-controller"})'
    )
    assert active[0]["value"][1] == "1"
    rules = {rule["name"] for group in prometheus(metrics_url, "rules") for rule in group["rules"]}
    assert {
        "KafkaBrokerDown",
        "KafkaUnderReplicatedPartitions",
        "KafkaNodeDown",
        "KafkaDiskFilling",
        "ConsumerLagGrowing",
    } <= rules
    wait_for("a node exporter on every node", lambda: node_names(metrics_url) == ["d21", "d22", "d23"], 60)
    wait_for("every broker's log directory size", lambda: len(sized(metrics_url)) == 3, 30)  # a rule: an evaluation later


def sized(url: str) -> list:
    return prometheus(url, "query", query="kafka_log_dir_size_bytes > 0")


def node_names(url: str) -> list[str]:
    return sorted(s["metric"]["nodename"] for s in prometheus(url, "query", query='node_uname_info{job="node"}'))


def test_the_agent_is_no_content_of_the_broker_image(cluster: Inventory, metrics_url: str) -> None:
    """The sandbox's broker image has the official image's files only: every series above came through the agent
    that deploy copied into each node's volume, named in the JVM's KAFKA_OPTS but not in the container's."""
    manager = DockerHosts.from_inventory(cluster)[cluster.first_manager]
    probe = "test -e /opt/prometheus/jmx_prometheus_javaagent.jar && echo image; test -r /opt/swarmkit/metrics/jmx_prometheus_javaagent.jar && echo volume; echo opts=$KAFKA_OPTS"
    for service in ("kafka_broker", "kafka_controller-1"):
        assert dockerapi.exec_in_service(manager, service, ["/bin/sh", "-c", probe]).split() == ["volume", "opts="], service
    environ = ["/bin/sh", "-c", "tr '\\0' ' ' </proc/1/environ"]  # readable by the JVM's own user only
    jvm = dockerapi.exec_in_service(manager, "kafka_broker", environ, user=KAFKA_UID)
    assert "KAFKA_OPTS=-javaagent:/opt/swarmkit/metrics/jmx_prometheus_javaagent.jar=9404:" in jvm


CONNECTS = """
import json, socket, sys
def connects(address, port):
    try:
        socket.create_connection((address, int(port)), timeout=2).close()
        return True
    except OSError:
        return False
print(json.dumps([target for target in sys.argv[1:] if connects(*target.split(":"))]))
"""


def published_ports(inventory: Inventory) -> set[int]:
    """Every port any service of the swarm publishes (ingress or host mode)."""
    manager = inventory.first_manager.endpoint
    services = run("docker", "-H", manager, "service", "ls", "--quiet").stdout.split()
    inspected = run("docker", "-H", manager, "service", "inspect", "--format", "{{json .Endpoint.Ports}}", *services).stdout
    return {
        port["PublishedPort"] for line in inspected.splitlines() for port in json.loads(line) or () if "PublishedPort" in port
    }


def exports_kafka_metrics(address: str, port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{address}:{port}/metrics", timeout=3) as response:
            return b"kafka_server_" in response.read()
    except (OSError, http.client.HTTPException):  # a Kafka listener answers no HTTP
        return False


def test_the_metrics_port_answers_on_the_overlay_only(d2: Sandbox, cluster: Inventory, metrics_url: str) -> None:
    """Plaintext or secure, the stack publishes the same ports: 9404 is never one (tests/unit/stack/test_metrics.py)."""
    published = published_ports(cluster)
    assert published == {9094, 9090, 9093} and AGENT_PORT not in published and NODE_PORT not in published
    targets = [f"{host.address}:{port}" for host in cluster.hosts for port in (AGENT_PORT, NODE_PORT)]
    for address in [host.address for host in cluster.hosts]:
        for port in (AGENT_PORT, *published):
            assert not exports_kafka_metrics(address, port), f"{address}:{port} serves Kafka's metrics"
    assert json.loads(subprocess.run([sys.executable, "-c", CONNECTS, *targets], capture_output=True, text=True).stdout) == []
    for host in d2.hosts:  # inside each host's own network namespace, where a host-mode port would answer
        done = in_host(host, sys.executable, "-c", CONNECTS, *targets)
        assert json.loads(done.stdout) == [], f"from {host.name}: {done.stdout}{done.stderr}"
    assert scraped(metrics_url) == EVERY_TARGET, "Prometheus no longer reaches them on the overlay"


FILLER = "/var/lib/kafka/data/swarmkit-test-filler"  # a plain file: Kafka loads only directories as logs


def fill_disk(inventory: Inventory, fraction: float) -> None:
    """Grow the filler in d21's log directory until its file system is ``fraction`` full."""
    engine = DockerHosts.from_inventory(inventory)[inventory.host(SMALL_DISK)]
    df = dockerapi.exec_in_service(engine, "kafka_broker", ["df", "-Pk", "/var/lib/kafka/data"]).splitlines()[-1].split()
    size_kib, free_kib = int(df[1]), int(df[3])
    mib = int((free_kib - size_kib * (1 - fraction)) / 1024)
    dd = ["dd", "if=/dev/zero", f"of={FILLER}", "bs=1M", f"count={mib}", "conv=fsync"]
    dockerapi.exec_in_service(engine, "kafka_broker", dd)


def verify_loop(inventory: Inventory, gateway: str, page: Path) -> subprocess.Popen:
    """`verify --every 5` serving its verdicts (consumer lag among them) where Prometheus scrapes them."""
    args = ["verify", "-i", inventory.path, "--every", "5", "--metrics-port", str(VERIFY_PORT)]
    args += ["--metrics-address", gateway, "--report", str(page)]
    return subprocess.Popen([SWARMKIT, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def stopped_group(bootstrap: str, topic: str, group: str) -> None:
    """A consumer of ``group`` that reads what is there, commits, and stops consuming (its lag grows from here)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    try:
        wait_for("the group's first records", lambda: consumer.poll(1.0) is not None, 60, every=0)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def test_a_filling_disk_and_a_consumer_group_that_stops_raise_their_alerts(
    d2: Sandbox, cluster: Inventory, metrics_url: str, receiver: Receiver, tmp_path: Path
) -> None:
    """d21's log directory past 80 % of its file system: KafkaDiskFilling names d21, and resolves once freed; a
    group that stops consuming while a producer writes: ConsumerLagGrowing names the group after a minute of growth
    (the verify loop exports the lag). Both at once, so the suite waits once; `status`, the report page and
    `metrics status` show what fires, the lag and the disk, and where each alert was sent."""
    assert ensure_topics("d21:9094", [TopicSpec("lagged", 3, 3)])[0].ok
    producer = CountingProducer("d21:9094,d22:9094,d23:9094", "lagged", rate_per_s=20).start()
    page = tmp_path / "verify.html"
    loop = verify_loop(cluster, d2.gateway, page)
    try:
        producer.acked_after(20, timeout=60)
        stopped_group("d21:9094", "lagged", "lagtest")
        started = time.monotonic()
        fill_disk(cluster, 0.85)
        filled, alert = receiver.wait("KafkaDiskFilling", "firing", started, 90, nodename=SMALL_DISK)
        print(f"webhook: disk alert {filled:.1f} s after the fill: {alert['annotations']['summary']}")
        disks = {d.node: d for d in status(Session.of(cluster)).disks}
        assert disks[SMALL_DISK].used_fraction > 0.8 and disks["d22"].used_fraction < 0.8
        statuses_while_firing(cluster, receiver)
        freed = time.monotonic()
        dockerapi.exec_in_service(DockerHosts.from_inventory(cluster)[cluster.host(SMALL_DISK)], "kafka_broker", ["rm", FILLER])
        cleared, _ = receiver.wait("KafkaDiskFilling", "resolved", freed, 60, nodename=SMALL_DISK)
        lagging, alert = receiver.wait("ConsumerLagGrowing", "firing", started, 150, group="lagtest", topic="lagged")
        print(f"webhook: disk alert resolved {cleared:.1f} s after freeing, lag alert {lagging:.1f} s after the group stopped")
    finally:
        loop.terminate()
        producer.stop()
        print(f"verify loop: {loop.communicate(timeout=30)[1][-2000:]}")
    lags = {(g.group, g.topic): g.lag for g in status(Session.of(cluster)).lag}
    assert lags[("lagtest", "lagged")] > 0
    text = page.read_text()
    assert "lagtest" in text and "consumer lag" in text and "log directory" in text


def statuses_while_firing(cluster: Inventory, receiver: Receiver) -> None:
    """`metrics status` while the disk alert fires: exit 1, the alert sent to the webhook and the e-mail address,
    the webhook's deliveries counted, every one with the token."""
    done = run(SWARMKIT, "metrics", "status", "-i", cluster.path, "--json")
    assert done.returncode == 1
    found = json.loads(done.stdout)
    disk = next(a for a in found["alerts"] if a["name"] == "KafkaDiskFilling")
    assert disk["state"] == "firing" and sorted(disk["receivers"]) == ["email", "webhook"]
    sent = {d["integration"]: d for d in found["deliveries"]}
    assert sent["webhook"]["sent"] >= 1 and sent["webhook"]["failed"] == 0
    assert found["targets"]["node"] == [3, 3] and found["targets"]["kafka-broker"] == [3, 3]
    assert all(n.authorization == f"Bearer {receiver_token(cluster)}" for n in receiver.received)


def receiver_token(cluster: Inventory) -> str:
    """The webhook token, read from the file the metrics inventory names."""
    document = yaml.safe_load(Path(cluster.path or "").with_name("with-metrics.yaml").read_text())
    return Path(document["metrics"]["alerts"]["webhook"]["token_file"]).read_text().strip()


def test_no_secret_in_rendered_files_service_inspect_logs_or_the_report(
    cluster: Inventory, metrics_url: str, secret_files: dict[str, Path], tmp_path: Path
) -> None:
    """The webhook token and the SMTP password reach Alertmanager as swarm secrets only: not in the stack's
    configs (the rendered files), any service's inspect output, the servers' logs, or what the commands print."""
    hidden = [path.read_text().strip() for path in secret_files.values()]
    manager = cluster.first_manager.endpoint
    services = run("docker", "-H", manager, "service", "ls", "--quiet").stdout.split()
    seen = [run("docker", "-H", manager, "service", "inspect", *services).stdout]
    configs = run(
        "docker", "-H", manager, "config", "ls", "--quiet", "--filter", "label=com.docker.stack.namespace=kafka-metrics"
    )
    for config in configs.stdout.split():
        data = json.loads(run("docker", "-H", manager, "config", "inspect", config).stdout)[0]["Spec"]["Data"]
        seen.append(base64.b64decode(data).decode())
    assert any("credentials_file: /run/secrets/webhook-token" in text for text in seen)
    for service in ("kafka-metrics_alertmanager", "kafka-metrics_prometheus"):
        logs = run("docker", "-H", manager, "service", "logs", "--raw", service)
        seen.append(logs.stdout + logs.stderr)
    seen += [run(SWARMKIT, "metrics", "status", "-i", cluster.path).stdout]
    report = tmp_path / "verify.html"
    run(SWARMKIT, "verify", "-i", cluster.path, "--report", report)
    seen.append(report.read_text())
    for secret in hidden:
        assert not [text for text in seen if secret in text]


RAISED = ("KafkaBrokerDown", "KafkaUnderReplicatedPartitions")


def alert_states(url: str) -> dict[str, str]:
    """The state (pending, firing) of each active alert raised by a lost broker."""
    return {a["labels"]["alertname"]: a["state"] for a in prometheus(url, "alerts") if a["labels"]["alertname"] in RAISED}


def meta_properties(inventory: Inventory, host: str) -> dict[str, str]:
    text = dockerapi.exec_in_service(
        DockerHosts.from_inventory(inventory)[inventory.host(host)],
        "kafka_broker",
        ["cat", "/var/lib/kafka/data/meta.properties"],
    )
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line and not line.startswith("#"))


def verified(inventory: Inventory) -> VerifyReport:
    return verify(Session.of(inventory), VerifyOptions())


def lost_engine_is_named(cluster: Inventory) -> None:
    """What verify says while d23's engine is gone: that broker alone fails, unregistered; partitions under-replicated."""
    report = verified(cluster)
    assert not report.ok
    assert [b.node for b in report.brokers if not b.ok] == ["d23"]
    assert report.cluster is not None
    assert any(p.startswith("broker 3 (d23) is not registered") for p in report.cluster.problems)
    assert any(name.startswith("lost-") for name in report.cluster.under_replicated)


def alerts_fire(url: str, started: float) -> None:
    wait_for("both alerts pending or firing", lambda: set(alert_states(url)) == set(RAISED), started + 60 - time.monotonic(), 1.0)
    raised = time.monotonic() - started
    wait_for(
        "both alerts firing", lambda: set(alert_states(url).values()) == {"firing"}, started + FIRING_WITHIN - time.monotonic()
    )
    print(f"alerts: raised {raised:.1f} s, firing {time.monotonic() - started:.1f} s after the engine stopped")


def test_a_stopped_engine_loses_no_acknowledged_record_and_raises_the_alerts(
    cluster: Inventory, metrics_url: str, receiver: Receiver
) -> None:
    """d23's dockerd killed (its broker, its controller and a swarm manager go with it) under an acks=all producer,
    then started again: writes go on, verify names d23, the broker-down and under-replicated alerts fire and clear,
    the webhook is told that node d23 is down within 90 s and that it is back within 90 s of its return,
    and broker 3 comes back with its id and data, nothing acknowledged lost or duplicated."""
    assert ensure_topics("d21:9094", [TopicSpec("lost", 6, 3)])[0].ok  # not "acks": the roll's producer counts from 0 too
    identity_before = meta_properties(cluster, "d23")
    producer = CountingProducer("d21:9094,d22:9094", "lost").start()
    try:
        producer.acked_after(2000, timeout=60)
        started = time.monotonic()
        sandbox.stop_engine(NAME, "d23")
        try:
            producer.acked_after(2000, timeout=90)  # writes go on with two brokers in sync
            lost_engine_is_named(cluster)
            alerts_fire(metrics_url, started)
            fired, alert = receiver.wait("KafkaNodeDown", "firing", started, 90, nodename="d23")
            print(f"webhook: KafkaNodeDown d23 firing {fired:.1f} s after the engine stopped: {alert['annotations']}")
        finally:
            sandbox.start_engine(NAME, "d23")
        back = time.monotonic()
        resolved, _ = receiver.wait("KafkaNodeDown", "resolved", back, 90, nodename="d23")
        print(f"webhook: KafkaNodeDown d23 resolved {resolved:.1f} s after start-engine")
        wait_for("broker 3 registered again", lambda: answered(lambda: 3 in partition_states("d21:9094")[0]), 180)
        wait_for("every partition in sync again", lambda: verified(cluster).ok, 180)
        wait_for("both alerts cleared", lambda: not alert_states(metrics_url), 300)
        print(f"in sync and alerts cleared {time.monotonic() - back:.1f} s after start-engine")
        producer.acked_after(1000, timeout=60)
    finally:
        producer.stop()
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything("d21:9094", "lost", 6))
    assert len(producer.acknowledged) >= 5000
    assert (lost, duplicated) == ([], []), f"{len(lost)} lost, {len(duplicated)} duplicated"
    identity_after = meta_properties(cluster, "d23")
    assert identity_after["node.id"] == "3"
    assert identity_after["directory.id"] == identity_before["directory.id"], "broker 3 came back without its data"


def test_metrics_down_with_purge_leaves_nothing_behind(cluster: Inventory, metrics_url: str) -> None:
    done = run(SWARMKIT, "metrics", "down", "-i", cluster.path, "--purge", "--json")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert sorted(report["removed"]) == ["kafka-metrics_alertmanager", "kafka-metrics_prometheus"]
    assert sorted(report["volumes"]) == ["kafka-metrics_alerts", "kafka-metrics_data"]
    manager = DockerHosts.from_inventory(cluster)[cluster.first_manager]
    assert dockerapi.stack_services(manager, "kafka-metrics") == []
    assert dockerapi.stack_leftovers(manager, "kafka-metrics") == []
    assert stack_left(cluster, "com.docker.stack.namespace=kafka-metrics") == {"d21": 0, "d22": 0, "d23": 0}
    assert dockerapi.remove_labelled_volumes(manager, "com.docker.stack.namespace=kafka-metrics") == []


def created_after_a_return(spec: TopicSpec, timeout: float = 120.0) -> None:
    """The topic created through d21, asked again for ``timeout``: right after a host's return, a creation has timed
    out waiting for its controller for longer than one ``ensure_topics`` tries (CI, twice; its detail now says what
    the client's metadata named controller)."""
    deadline = time.monotonic() + timeout
    while (result := ensure_topics("d21:9094", [spec])[0]).detail.startswith("Timed out") and time.monotonic() < deadline:
        print(f"topic {spec.name}: {result.detail}")
    assert result.ok, f"topic {spec.name} not created within {timeout:g} s: {result.detail}"


def test_a_full_roll_under_acks_all_loses_and_duplicates_nothing(cluster: Inventory) -> None:
    created_after_a_return(TopicSpec("acks", 6, 3))
    brokers, controllers = containers(cluster, "broker"), [containers(cluster, f"controller-{i}") for i in (1, 2, 3)]
    producer = CountingProducer("d21:9094,d22:9094,d23:9094", "acks", rate_per_s=200).start()
    try:
        producer.acked_after(500, timeout=120)
        done = run(RUNBOOKS / "roll.sh", cluster.path, "--", "--set", "log.retention.hours=100", timeout=1200)
        assert done.returncode == 0 and "rolled in" in done.stdout
        producer.acked_after(500, timeout=120)
    finally:
        producer.stop()
    found = read_everything("d21:9094", "acks", 6)
    lost, duplicated = lost_and_duplicated(producer.acknowledged, found)
    print(
        f"roll: {producer.sent} produced, {len(producer.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated"
    )
    assert (lost, duplicated) == ([], [])
    after = containers(cluster, "broker")
    assert set(after) == set(brokers) and all(after[node] != brokers[node] for node in brokers), "a broker was not replaced"
    assert [containers(cluster, f"controller-{i}") for i in (1, 2, 3)] == controllers, "a controller was restarted"


def test_a_broker_that_does_not_come_back_stops_the_roll_and_the_rest_keep_serving(cluster: Inventory) -> None:
    before = containers(cluster, "broker")
    # a broker given this setting never starts: --timeout only says how long the roll waits before it says so
    done = run(SWARMKIT, "roll", "-i", cluster.path, "--set", "num.network.threads=many", "--timeout", "15", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    (failed,) = report["brokers"]
    assert not failed["ok"] and len(report["not_rolled"]) == 2 and report["held"]
    assert f"the broker on {failed['node']} did not come back" in done.stderr
    after = containers(cluster, "broker")
    assert sum(after.get(node) == container for node, container in before.items()) == 2
    assert "docker service rollback kafka_broker" in report["hint"]
    manager = cluster.first_manager.endpoint
    assert run("docker", "-H", manager, "service", "rollback", "--detach", "kafka_broker").returncode == 0
    deadline = time.monotonic() + 300
    while run(RUNBOOKS / "status.sh", cluster.path).returncode != 0:
        assert time.monotonic() < deadline, "the cluster did not heal after the rollback"
        time.sleep(5)


def test_down_then_up_brings_the_same_cluster_back_with_its_data(cluster: Inventory) -> None:
    assert ensure_topics("d21:9094", [TopicSpec("kept", 3, 3)])[0].ok
    producer = Producer(producer_config("d21:9094"))
    for number in range(1000):
        producer.produce("kept", str(number).encode())
    assert producer.flush(60) == 0
    before = broker_metadata("d21:9094")
    done = run(RUNBOOKS / "down.sh", cluster.path)
    assert done.returncode == 0 and "kept:" in done.stdout
    assert stack_left(cluster, "com.docker.stack.namespace=kafka") == {"d21": 0, "d22": 0, "d23": 0}
    started = time.monotonic()
    assert up(plan(cluster, DeployOptions(topics=TOPICS)), Session.of(cluster)).ok
    print(f"up after down: {time.monotonic() - started:.1f} s")
    after = broker_metadata("d21:9094")
    assert after.cluster_id == before.cluster_id
    assert [(b.node_id, b.endpoint) for b in after.brokers] == [(b.node_id, b.endpoint) for b in before.brokers]
    found = read_everything("d21:9094", "kept", 3)
    assert sorted(found) == list(range(1000)) and set(found.values()) == {1}


def prometheus_started(url: str) -> str:
    """When Prometheus's process started, once it has scraped itself (a moment after the targets)."""

    def started() -> str | None:
        found = prometheus(url, "query", query='process_start_time_seconds{job="prometheus"}')
        return found[0]["value"][1] if found else None

    return wait_for("Prometheus's own series", started, 60)


def test_a_scaled_out_broker_is_scraped_without_restarting_prometheus(d2: Sandbox, cluster: Inventory, alerting: dict) -> None:
    url = metrics_up(cluster, alerting, d2.gateway)
    wait_for("3 brokers and 3 controllers scraped", lambda: scraped(url) == EVERY_TARGET, 180)
    server, started = containers(cluster, "prometheus", stack="kafka-metrics"), prometheus_started(url)
    sandbox.add_node(NAME)
    grown = load_inventory(d2.inventory_path)
    added = time.monotonic()
    swarm.swarm_up(grown, docker=DockerHosts.from_inventory(grown))  # as test_verify: no preflight, it is not the point
    assert deploy(plan(grown, DeployOptions(topics=TOPICS)), Session.of(grown)).ok
    print(f"d24 joined and its broker serves after {time.monotonic() - added:.1f} s")

    def broker_ids() -> list[int]:
        """The agent answers as its JVM starts: Kafka's series (here its node id) come once the broker has started."""
        ids = prometheus(url, "query", query='kafka_server_app_info_start_time_ms{job="kafka-broker"}')
        return sorted(int(s["metric"]["node_id"]) for s in ids)

    wait_for("broker 4's series", lambda: broker_ids() == [1, 2, 3, 4], 60)
    print(f"d24's broker scraped {time.monotonic() - added:.1f} s after add-node")
    assert scraped(url) == {**EVERY_TARGET, "kafka-broker": 4}
    assert containers(grown, "prometheus", stack="kafka-metrics") == server and prometheus_started(url) == started


def swapped(inventory: Inventory, path: Path, dead: str, new: str) -> Inventory:
    """The inventory without ``dead`` and with ``new`` a manager, as an operator edits it, written to ``path``."""
    document = yaml.safe_load(Path(inventory.path or "").read_text())
    document["hosts"] = [host for host in document["hosts"] if host["name"] != dead]
    for host in document["hosts"]:
        if host["name"] == new:
            host["role"] = "manager"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return load_inventory(str(path))


def test_up_refuses_a_swapped_manager_before_changing_anything(d2: Sandbox, tmp_path: Path) -> None:
    changed = swapped(load_inventory(d2.inventory_path), tmp_path / "swapped.yaml", "d22", "d24")
    with pytest.raises(SpecError) as refused:
        up(plan(changed, DeployOptions()), Session.of(changed))
    assert refused.value.hint == f"a controller moves with: swarmkit replace-node d22 d24 -i {changed.path}"
    assert {n.hostname: n.role for n in manager_nodes(changed)}["d24"] == "worker"


def test_replacing_a_dead_manager_under_traffic_loses_no_record(d2: Sandbox) -> None:
    """d22's engine gone for good, the worker d24 (added by the scale-out) takes its controller: three voters again,
    `status` lists them, `up`'s guard accepts the new inventory, and nothing acknowledged is lost or duplicated.
    The sandbox's inventory is the new one from here on, as an operator's would be."""
    changed = swapped(load_inventory(d2.inventory_path), Path(d2.inventory_path), "d22", "d24")
    assert ensure_topics("d21:9094", [TopicSpec("quorum", 3, 3)])[0].ok
    producer = CountingProducer("d21:9094,d23:9094", "quorum").start()
    try:
        producer.acked_after(1000, timeout=120)
        sandbox.stop_engine(NAME, "d22")
        wait_for("d22 down", lambda: any(n.hostname == "d22" and n.state == "down" for n in manager_nodes(changed)), 120)
        started = time.monotonic()
        result = replace_node(Session.of(changed), "d22", "d24")
        print(f"replace-node took {time.monotonic() - started:.1f} s: {result.steps}")
        producer.acked_after(1000, timeout=120)
    finally:
        producer.stop()
    assert (result.removed_voter, result.added_voter) == (9002, 9004)
    state = quorum_of("d21:9094")
    assert sorted(v.node_id for v in state.voters) == [9001, 9003, 9004]
    assert 9004 not in {o.node_id for o in state.observers}
    kept = identity.kept_controllers(manager_nodes(changed), "kafka")
    assert kept == ControllerSet.first(["d21", "d22", "d23"]).replaced("d22", "d24")
    report = status(Session.of(changed))
    assert report.controllers == ((9001, "d21"), (9003, "d23"), (9004, "d24"))
    assert report.quorum is not None and sorted(v.node_id for v in report.quorum.voters) == [9001, 9003, 9004]
    guard_controllers(plan(changed, DeployOptions()), Session.of(changed))  # `up` with the new inventory goes ahead
    lost, duplicated = lost_and_duplicated(producer.acknowledged, read_everything("d21:9094,d23:9094", "quorum", 3))
    print(f"{len(producer.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated")
    assert len(producer.acknowledged) >= 2000
    assert (lost, duplicated) == ([], []), f"{len(lost)} lost, {len(duplicated)} duplicated"


def test_down_with_purge_removes_volumes_and_kept_labels(d2: Sandbox, alerting: dict) -> None:
    """With Prometheus watching (it holds the stack's network), `down` removes it first."""
    cluster = load_inventory(d2.inventory_path)  # d24 added by the scale-out, d22 replaced by it
    metrics_up(cluster, alerting, d2.gateway)
    done = run(RUNBOOKS / "down.sh", cluster.path, "--purge-data")
    assert done.returncode == 0 and "purged" in done.stdout
    docker = DockerHosts.from_inventory(cluster)
    manager = docker[cluster.first_manager]
    assert dockerapi.stack_services(manager, "kafka-metrics") == dockerapi.stack_leftovers(manager, "kafka") == []
    for host in cluster.hosts:
        assert dockerapi.remove_labelled_volumes(docker[host], "com.docker.stack.namespace=kafka") == [], host.name
    for node in dockerapi.swarm_nodes(docker[cluster.first_manager]):
        assert not [label for label in node.labels if label.startswith(("swarmkit.broker-id", "swarmkit.cluster-id"))]
    again = run(SWARMKIT, "down", "-i", cluster.path)
    assert again.returncode == 1 and "not deployed" in again.stderr
