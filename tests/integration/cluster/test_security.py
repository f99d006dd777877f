"""A 3-node Apache Kafka cluster in sasl_ssl mode on the sandbox: it comes up and verifies, the Spark
job runs over it, and it refuses what it must (a plain-text client, a client trusting another CA, a
wrong password, named by `listeners diagnose --config` too), while no certificate key or password
shows up where an operator or a log collector would see it; users get what they were granted, and a
user's removal keeps every other login through a CA rotation under acks=all traffic (interrupted and
resumed: its restarts of every broker are the ones the SCRAM fix needs); a second operator (another Unix user)
imports the exported state into its own directory and runs verify, users add and certs rotate from there, while a
wrong passphrase, a truncated file and another cluster's state are refused; last, the same cluster in ssl
(mutual TLS) mode lets in only clients with the cluster CA's certificate, and verify names a broker
whose certificate does not cover the name it advertises, and deployed again in sasl_ssl on that storage
(formatted without the admin's SCRAM credential) it gives the admin its login and keeps its records."""

from __future__ import annotations

import contextlib
import grp
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from swarmkit.checks import diagnose, health
from swarmkit.checks.status import status
from swarmkit.checks.verify import VerifyOptions, verify
from swarmkit.errors import BrokerError
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka.admin import broker_metadata, ensure_topics
from swarmkit.ops import deploy as deploy_module
from swarmkit.ops import teardown, users
from swarmkit.ops.deploy import UpResult, render_for, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.ops.rebalance import RebalanceOptions, rebalance
from swarmkit.ops.roll import RollOptions, wait_in_sync
from swarmkit.security import backup, certs, pki
from swarmkit.security.acls import describe
from swarmkit.security.rotation import Rotation
from swarmkit.security.settings import ADMIN_USER, ClientSecurity
from swarmkit.stack.topics import TopicSpec
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, producer_config, read_everything
from tests.integration.sandboxes import fresh_sandbox

pytestmark = pytest.mark.integration

NAME = "sec"
OPTIONS = DeployOptions(topics="orders:3:3", security="sasl_ssl", timeout=300)
ROOT = Path(__file__).resolve().parents[3]
OPERATOR_UID = 65534  # nobody: the second operator, another Unix user, in the docker group only
TIMEOUT = 15.0  # a TLS handshake and a SCRAM login per connection on a loaded 2-core machine
REFUSAL_TIMEOUT = 8.0  # a refusal comes within 1-3 s; a refused client waits out its whole timeout


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Inventory, UpResult, float]]:
    directory = tmp_path_factory.mktemp(NAME)
    with fresh_sandbox(NAME, 3, "10.240.0.0/24", "se", directory, engine="apache", managers=3) as box:
        inventory = load_inventory(box.inventory_path)
        started = time.monotonic()
        result = up(plan(inventory, OPTIONS), Session.of(inventory))
        yield inventory, result, time.monotonic() - started


def admin(inventory: Inventory) -> ClientSecurity:
    security = pki.for_stack(inventory, "kafka", "sasl_ssl")
    assert security is not None
    return security


def by_address(inventory: Inventory) -> ClientSecurity:
    """The admin's login for dialling a host's address (its certificate names what it advertises)."""
    return replace(admin(inventory), verify_hostname=False)


def refused(bootstrap: str, security: ClientSecurity | None, verdict: str) -> None:
    """The broker refuses the client, and ``listeners diagnose`` names why."""
    with pytest.raises(BrokerError) as caught:
        broker_metadata(bootstrap, REFUSAL_TIMEOUT, security)
    print(caught.value.message)
    check = diagnose.diagnose(bootstrap, REFUSAL_TIMEOUT, security).bootstrap_check
    assert check is not None and check.cause.startswith(verdict), check


def test_up_and_verify_over_sasl_ssl(secured: tuple[Inventory, UpResult, float]) -> None:
    inventory, result, seconds = secured
    assert result.ok, result.deploy.problems
    print(f"sasl_ssl up: {seconds:.1f} s")
    report = verify(Session.of(inventory), VerifyOptions(timeout=TIMEOUT))
    assert report.ok, [b.detail for b in report.brokers] + [report.cluster_error]
    assert [b.advertised for b in report.brokers] == ["se1:9094", "se2:9094", "se3:9094"]
    metadata = broker_metadata("se2:9094", TIMEOUT, admin(inventory))
    assert metadata.topic("orders") is not None
    assert_quorum_through_a_broker(admin(inventory))


@contextlib.contextmanager
def one_core_busy() -> Iterator[None]:
    """scripts/busy.sh keeping one core fully busy for the block (ended by its pid, its burners with it)."""
    busy = subprocess.Popen(["bash", "scripts/busy.sh", "--cores", "1"], cwd=Path(__file__).resolve().parents[3])
    try:
        yield
    finally:
        busy.terminate()
        busy.wait(timeout=30)


def test_verify_passes_ten_runs_back_to_back_with_one_core_busy(secured: tuple[Inventory, UpResult, float]) -> None:
    """A SASL login used to wait on a reverse DNS lookup of the address the client reached (KAFKA-19919): verify's
    probes then missed their 5 s on 1-3 brokers in every run.  Each broker's container now names its addresses."""
    inventory, _, _ = secured
    runs = []
    with one_core_busy():
        for _ in range(10):
            runs.append(swarmkit_cli("verify", "-i", inventory.path, "--json"))
    reports = [json.loads(run.stdout) for run in runs]
    print("metadata ms per run:", [[b["metadata_ms"] for b in report["brokers"]] for report in reports])
    failed = [run.stdout[-2000:] + run.stderr[-2000:] for run in runs if run.returncode != 0]
    assert not failed, failed
    assert all(report["ok"] for report in reports)


def assert_quorum_through_a_broker(security: ClientSecurity, attempts: int = 1) -> None:
    """verify reads the quorum from a broker (TLS, then a SCRAM login or a client certificate), not the tool's JVM.

    ``attempts``: kafka-python sends the request to a broker of its choosing once it has the metadata."""
    for attempt in range(1, attempts + 1):
        try:
            quorum = health.quorum_from_brokers([("se2", 9094)], TIMEOUT, security, health.Controllers((), ()))
            break
        except BrokerError:
            if attempt == attempts:
                raise
    assert quorum.leader > 0 and len(quorum.voters) == 3 and len(quorum.observers) == 3, quorum


def test_the_spark_job_runs_over_sasl_ssl_and_shows_no_password(
    secured: tuple[Inventory, UpResult, float], tmp_path: Path
) -> None:
    inventory, _, _ = secured
    report_path = tmp_path / "spark.json"
    options = VerifyOptions(timeout=TIMEOUT, spark=True, spark_records=2000, spark_report=str(report_path))
    report = verify(Session.of(inventory), options)
    assert report.ok and report.spark is not None, report.spark_error
    assert {b["broker"] for b in report.spark.to_dict()["brokers"]} == {"se1:9094", "se2:9094", "se3:9094"}
    password = admin(inventory).password
    assert password not in report_path.read_text() and password not in json.dumps(report.to_dict())


def swarmkit_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(Path(sys.executable).with_name("swarmkit")), *args], capture_output=True, text=True, timeout=120)


def test_diagnose_takes_a_client_configuration(secured: tuple[Inventory, UpResult, float], tmp_path: Path) -> None:
    inventory, _, _ = secured
    conf, _ = admin(inventory).write_files(tmp_path)
    answered = swarmkit_cli("listeners", "diagnose", "--config", str(conf), "-b", "se2:9094", "--timeout", "15", "--json")
    assert answered.returncode == 0, answered.stdout + answered.stderr
    assert len(json.loads(answered.stdout)["brokers"]) == 3
    wrong = tmp_path / "wrong.conf"
    kept = [line for line in conf.read_text().splitlines() if not line.startswith("sasl.password=")]
    wrong.write_text("\n".join([*kept, "sasl.password=not-the-password"]) + "\n")
    refused = swarmkit_cli("listeners", "diagnose", "-c", str(wrong), "-b", "se3:9094", "--timeout", "15", "--json")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert json.loads(refused.stdout)["bootstrap_check"]["cause"].startswith("authentication failed")
    assert "not-the-password" not in refused.stdout + refused.stderr


def test_a_plaintext_client_is_refused(secured: tuple[Inventory, UpResult, float]) -> None:
    refused("se1:9094", None, "TLS handshake failed")


def test_a_client_trusting_another_ca_is_refused(secured: tuple[Inventory, UpResult, float]) -> None:
    inventory, _, _ = secured
    other = certs.new_ca("someone else's CA")
    refused("se1:9094", replace(admin(inventory), ca_pem=other.cert_pem), "unknown CA")


def test_a_wrong_password_is_refused(secured: tuple[Inventory, UpResult, float]) -> None:
    inventory, _, _ = secured
    refused("se3:9094", replace(admin(inventory), password="not-the-password"), "authentication failed")
    refused("se3:9094", replace(admin(inventory), username="nobody"), "authentication failed")


def _docker(inventory: Inventory, *args: str) -> str:
    endpoint = inventory.first_manager.endpoint
    done = subprocess.run(["docker", "-H", endpoint, *args], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def test_no_secret_is_shown(secured: tuple[Inventory, UpResult, float]) -> None:
    inventory, result, _ = secured
    store = pki.Pki(pki.store_dir(inventory, "kafka"))
    password = store.password(ADMIN_USER, create=False)
    assert password
    keys = [(store.directory / name).read_text() for name in ("ca.key", "internal.key", "broker-1.key")]
    key_lines = [line for key in keys for line in key.splitlines() if "PRIVATE KEY" not in line]
    services = ["kafka_broker", "kafka_controller-1", "kafka_controller-2", "kafka_controller-3"]
    seen = {
        "docker service inspect": _docker(inventory, "service", "inspect", *services),
        "docker service logs": _docker(inventory, "service", "logs", "--raw", "kafka_broker")
        + _docker(inventory, "service", "logs", "--raw", "kafka_controller-1"),
        "render": render_for(plan(inventory, OPTIONS), Session.of(inventory)).text,
        "up --json": json.dumps(result.to_dict()),
    }
    for where, text in seen.items():
        assert text.strip(), where
        assert password not in text, f"the admin password shows in {where}"
        assert not any(line in text for line in key_lines), f"a private key shows in {where}"
        assert "PRIVATE KEY" not in text, where


def test_day2_operations_log_in_like_verify(secured: tuple[Inventory, UpResult, float]) -> None:
    """status and rebalance reach the sasl_ssl cluster as swarmkit's admin, and the Kafka tools they run in a
    broker container use mutual TLS on the internal listener (a super user of the authorizer, as the admin is);
    roll's waits through the SCRAM login are the CA rotation's, below."""
    inventory, _, _ = secured
    seen = status(Session.of(inventory))
    assert not seen.kafka_error and seen.quorum is not None and seen.quorum.leader > 0, (seen.kafka_error, seen.quorum)
    assert [b.registered for b in seen.brokers] == [True, True, True]
    login = pki.by_address(admin(inventory))
    assert login is not None
    client = AdminClient({"bootstrap.servers": "10.240.0.11:9094", **login.librdkafka()})
    client.create_topics([NewTopic("lopsided", 3, replica_assignment=[[1], [1], [1]])])["lopsided"].result(TIMEOUT)
    balanced = rebalance(Session.of(inventory), RebalanceOptions(topics=("lopsided",), timeout=120))
    assert len(balanced.moves) == 2 and balanced.replicas == {1: 1, 2: 1, 3: 1}, balanced


def login(inventory: Inventory, user: str, directory: Path) -> dict[str, object]:
    """The user's librdkafka settings, as `swarmkit client-config --user` writes them (its CA file beside them)."""
    config = users.client_config(Session.of(inventory), "kafka", "sasl_ssl", user, "librdkafka", str(directory / "ca.crt"))
    (directory / "ca.crt").write_text(config.ca_pem)
    return dict(line.split("=", 1) for line in config.text.splitlines()) | {"socket.timeout.ms": int(TIMEOUT * 1000)}


def produced(settings: dict[str, object], topic: str, count: int) -> list[str]:
    """Produce ``count`` numbered records (acks=all); the delivery errors, [] when every record is acknowledged."""
    errors: list[str] = []
    producer = Producer(producer_config("", **settings, **{"message.timeout.ms": int(TIMEOUT * 1000)}))
    for number in range(count):
        producer.produce(topic, str(number).encode(), on_delivery=lambda error, _: errors.append(error.str()) if error else None)
    producer.flush(TIMEOUT + 5)
    return errors


def test_a_user_may_do_what_it_was_granted_and_nothing_else(secured: tuple[Inventory, UpResult, float], tmp_path: Path) -> None:
    """alice is granted a topic, a topic prefix and a group; bob nothing: bob's records are refused, and
    `users check` says so and how to grant it, while alice produces and consumes and the admin keeps every right."""
    inventory, _, _ = secured
    session = Session.of(inventory)
    allow = ["topic:orders:read,write", "topic:traffic-*:read,write", "group:orders-app:read"]
    added = users.add_user(session, "kafka", "alice", allow)
    assert describe(added.grants) == "group:orders-app:read topic:orders:read,write topic:traffic-*:read,write"
    users.add_user(session, "kafka", "bob")
    assert {u.name: describe(u.grants) for u in users.list_users(session, "kafka")} == {
        "alice": describe(added.grants),
        "bob": "(no grants)",
        ADMIN_USER: "(no grants)",
    }
    alice = login(inventory, "alice", tmp_path)
    java = users.client_config(session, "kafka", "sasl_ssl", "alice", "properties", str(tmp_path / "ca.crt")).text
    assert "sasl.jaas.config=" in java and "ssl.truststore.type=PEM" in java
    assert produced(alice, "orders", 10) == []
    group = {"group.id": "orders-app", "auto.offset.reset": "earliest"}
    assert sum(read_everything("", "orders", 3, TIMEOUT * 2, alice | group).values()) == 10
    refused = produced(login(inventory, "bob", tmp_path), "orders", 1)
    assert refused and "authorization failed" in refused[0].lower(), refused
    bob = users.check_user(session, "kafka", "bob", ["orders"])
    assert not bob.ok and bob.topics[0].verdict.startswith("refused"), bob
    assert "--allow topic:orders:read,write" in bob.fix
    checked = {access.topic: access for access in users.check_user(session, "kafka", "alice").topics}
    assert checked["orders"].produce and checked["orders"].consume and not checked["lopsided"].produce, checked
    assert produced(by_address(inventory).librdkafka() | {"bootstrap.servers": "se1:9094"}, "orders", 10) == []


@contextlib.contextmanager
def declaring(inventory: Inventory, users_block: dict[str, list[str]]) -> Iterator[Path]:
    """The inventory file itself with a ``stack.users`` block (the stack's store is keyed by its path), put back after."""
    path = Path(inventory.path)
    original = path.read_text()
    raw = yaml.safe_load(original)
    raw["stack"] = (raw.get("stack") or {}) | {"security": "sasl_ssl", "users": users_block}
    path.write_text(yaml.safe_dump(raw))
    try:
        yield path
    finally:
        path.write_text(original)


def planned(path: Path) -> tuple[int, dict]:
    done = swarmkit_cli("plan", "-i", str(path), "--json")
    return done.returncode, json.loads(done.stdout)


def test_declared_users_are_planned_made_by_up_and_then_unchanged(
    secured: tuple[Inventory, UpResult, float], tmp_path: Path
) -> None:
    """The inventory's declared state holds users and their grants: `plan` lists the user to make (exit 3) and no
    broker to restart, `up`'s deploy makes it live, `plan` then finds nothing to do, and the user produces."""
    inventory, _, _ = secured
    with declaring(inventory, {"declared-app": ["topic:orders:read,write"]}) as path:
        code, changes = planned(path)
        assert code == 3 and [u["line"] for u in changes["users"]] == ["create user declared-app (topic:orders:read,write)"]
        assert changes["rolls"] == [] and changes["restarts"] == [], changes
        declared = load_inventory(str(path))
        applied = deploy_module.deploy(plan(declared, replace(OPTIONS, topics="")), Session.of(declared))
        assert "create user declared-app (topic:orders:read,write)" in applied.altered, applied.altered
        code, after = planned(path)
        assert (code, after["lines"]) == (0, ["no changes"]), after
        assert produced(login(declared, "declared-app", tmp_path), "orders", 5) == []
    users.remove_user(Session.of(inventory), "kafka", "declared-app")


def rotate_ca(inventory: Inventory, directory: Path, stop_once_rolled: int = 0) -> tuple[int, str, str]:
    """`swarmkit certs rotate --ca` as an operator runs it: (exit code, stdout, stderr); with ``stop_once_rolled``,
    interrupted (Ctrl-C) as soon as the store says that step is rolled out."""
    command = [str(Path(sys.executable).with_name("swarmkit")), *"certs rotate --ca --timeout 600 -i".split(), inventory.path]
    store, out, err = pki.Pki(pki.store_dir(inventory, "kafka")), directory / "rotate.out", directory / "rotate.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        running = subprocess.Popen(command, stdout=stdout, stderr=stderr, text=True)
        while stop_once_rolled and store.rotation() != Rotation(stop_once_rolled, rolled=True) and running.poll() is None:
            time.sleep(0.2)
        if stop_once_rolled:
            running.send_signal(signal.SIGINT)
        running.wait(timeout=3600)
    print(out.read_text(), err.read_text()[-3000:])
    return running.returncode, out.read_text(), err.read_text()


def test_removing_a_user_keeps_every_login_through_a_ca_rotation_that_restarts_every_broker(
    secured: tuple[Inventory, UpResult, float], tmp_path: Path
) -> None:
    """Kafka 4.4.0 replaying the metadata log after a user's removal lost every SCRAM-SHA-512 credential when
    the removed user came first in Java's HashMap order ("bob" does, before "alice" and "swarmkit-admin"):
    every restarted broker then refused the admin.  The restarts here are a CA rotation's (`certs rotate --ca`:
    every broker and controller restarted once in each of three steps), interrupted once step 1 is rolled out
    and resumed.  alice's acks=all producer trusting only the old CA runs through all of it, another trusting
    only the new CA from step 1 on: neither loses nor duplicates a record; after it the admin and alice log in to
    every broker, the old CA is gone from the store, and verify passes with the new certificates' expiry."""
    inventory, _, _ = secured
    users.remove_user(Session.of(inventory), "kafka", "bob")
    assert "bob" not in [u.name for u in users.list_users(Session.of(inventory), "kafka")]
    store = pki.Pki(pki.store_dir(inventory, "kafka"))
    alice = login(inventory, "alice", tmp_path)  # its CA file holds the old CA alone
    topics = [TopicSpec("traffic-old", 3, 3), TopicSpec("traffic-new", 3, 3)]
    assert all(t.ok for t in ensure_topics("se1:9094", topics, TIMEOUT, by_address(inventory)))
    clients = [CountingProducer("", "traffic-old", rate_per_s=100, config=alice).start()]
    try:
        clients[0].acked_after(100, timeout=120)
        code, _, _ = rotate_ca(inventory, tmp_path, stop_once_rolled=1)
        assert code == 130 and store.rotation() in (Rotation(1, True), Rotation(2, False)), store.rotation()
        following = store.directory / "ca-next.crt"  # step 2 makes it ca.crt
        (tmp_path / "new-ca.crt").write_text(following.read_text() if following.is_file() else store.kept_ca().cert_pem)
        new_ca = alice | {"ssl.ca.location": str(tmp_path / "new-ca.crt")}
        clients.append(CountingProducer("", "traffic-new", rate_per_s=100, config=new_ca).start())
        assert wait_in_sync(Session.of(inventory), RollOptions(), 300) == ""  # a resumed run refuses a lagging cluster
        code, out, err = rotate_ca(inventory, tmp_path)
        assert code == 0, out + err[-3000:]
        assert [line.split(":")[0] for line in out.splitlines()[:2]] == ["step 2", "step 3"]
        for client in clients:
            client.acked_after(100, timeout=120)  # both still write after the old CA left the brokers' trust
    finally:
        for client in clients:
            client.stop()
    for client in clients:
        found = read_everything("", client.topic, 3, 120, client.config | {"group.id": "orders-app"})
        lost, duplicated = lost_and_duplicated(client.acknowledged, found)
        print(
            f"{client.topic}: {client.sent} produced, {len(client.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated"
        )
        assert (lost, duplicated) == ([], []), client.errors[:3]
    for broker in ("se1:9094", "se2:9094", "se3:9094"):
        assert len(broker_metadata(broker, TIMEOUT, admin(inventory)).brokers) == 3
        alice_login = replace(admin(inventory), username="alice", password=str(alice["sasl.password"]))
        assert len(broker_metadata(broker, TIMEOUT, alice_login).brokers) == 3
    assert users.check_user(Session.of(inventory), "kafka", "alice", ["traffic-old"]).ok
    assert store.rotation() is None and store.trust() == store.kept_ca().cert_pem == (tmp_path / "new-ca.crt").read_text()
    assert not (store.directory / "ca-old.key").exists()
    checked = verify(Session.of(inventory), VerifyOptions(timeout=TIMEOUT))
    assert checked.ok, checked.problems
    assert checked.certificates == pki.Expiry(3649, 824)


def state_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(Path(sys.executable).with_name("swarmkit")), *args], capture_output=True, text=True, timeout=timeout
    )
    print(" ".join(args[:3]), done.returncode, done.stdout[-1500:], done.stderr[-1500:])
    return done


@contextlib.contextmanager
def other_users_directory(inventory: Inventory, *files: Path) -> Iterator[Path]:
    """A directory of another Unix user (``nobody``): the same inventory as servers.yaml and copies of ``files``,
    all its own (the tests' tmp_path is root's alone); removed afterwards."""
    home = Path(tempfile.mkdtemp(prefix="swarmkit-operator-"))
    try:
        shutil.copy(inventory.path, home / "servers.yaml")
        for path in files:
            shutil.copy(path, home / path.name)
        for path in [home, *home.iterdir()]:
            os.chown(path, OPERATOR_UID, OPERATOR_UID)
        yield home
    finally:
        shutil.rmtree(home)


def as_other_user(home: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """swarmkit run by ``nobody`` (its groups: docker only, for the sandbox's root:docker engine sockets) in its
    own directory, with the system's Python 3.11 (this venv's lives under /root, which nobody may enter) on this
    checkout and the venv's packages."""
    environment = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": f"{ROOT}:{sysconfig.get_path('purelib')}",
    }
    identity = [f"--reuid={OPERATOR_UID}", f"--regid={OPERATOR_UID}", f"--groups={grp.getgrnam('docker').gr_gid}"]
    command = ["setpriv", *identity, "/usr/bin/python3", "-c", "from swarmkit.cli import main; main()", *args]
    done = subprocess.run(command, cwd=home, env=environment, capture_output=True, text=True, timeout=timeout)
    print("as nobody:", " ".join(args[:3]), done.returncode, done.stdout[-1500:], done.stderr[-1500:])
    return done


def operator_directory(inventory: Inventory, directory: Path) -> str:
    """Another operator's directory: the same inventory (under a name of its own), no `.swarmkit/` yet."""
    directory.mkdir()
    copy = directory / "servers.yaml"
    copy.write_text(Path(inventory.path).read_text())
    return str(copy)


def refusals(inventory: Inventory, exported: Path, passphrase: Path, tmp_path: Path) -> None:
    """A wrong passphrase, a truncated file and two states of another cluster (another CA; the right CA under
    another cluster id) are each refused with exit 2, and nothing is written."""
    elsewhere = operator_directory(inventory, tmp_path / "refused")
    sealed = exported.read_bytes()
    (tmp_path / "wrong").write_text("not the passphrase it was exported with\n")
    (tmp_path / "truncated.skstate").write_bytes(sealed[: len(sealed) // 2])
    kept = backup.read_store(pki.store_dir(inventory, "kafka"))
    other_ca = certs.new_ca("another cluster's CA")
    others = {
        "another-ca.skstate": backup.State("kafka", None, kept | {"ca.crt": other_ca.cert_pem, "ca.key": other_ca.key_pem}),
        "another-id.skstate": backup.State("kafka", "BBBBBBBBBBBBBBBBBBBBBw", kept),
    }
    for name, state in others.items():
        (tmp_path / name).write_bytes(backup.seal(state, passphrase.read_text().strip()))
    cases = [(exported, tmp_path / "wrong", "wrong passphrase"), (tmp_path / "truncated.skstate", passphrase, "truncated")]
    cases += [(tmp_path / "another-ca.skstate", passphrase, "another cluster's state")]
    cases += [(tmp_path / "another-id.skstate", passphrase, "cluster BBBBBBBBBBBBBBBBBBBBBw's")]
    for source, secret, why in cases:
        done = state_cli("state", "import", str(source), "-i", elsewhere, "--passphrase-file", str(secret))
        assert done.returncode == 2 and why in done.stderr, done.stderr
    assert not (tmp_path / "refused" / ".swarmkit").exists()


def test_a_second_operator_imports_the_state_and_runs_the_cluster(
    secured: tuple[Inventory, UpResult, float], tmp_path: Path
) -> None:
    """The state exported and imported by another Unix user into its own directory: from there verify, users add and
    certs rotate (every certificate issued again, every broker and controller restarted under alice's acks=all
    producer: nothing lost or duplicated) work; the first operator's store refuses the second's changes without
    --replace, and once deleted is restored by importing them."""
    inventory, _, _ = secured
    passphrase, exported = tmp_path / "passphrase", tmp_path / "kafka.skstate"
    passphrase.write_text("a passphrase for the sandbox's state\n")
    secret = ("--passphrase-file", str(passphrase))
    assert state_cli("state", "export", "-i", inventory.path, "-o", str(exported), *secret).returncode == 0
    refusals(inventory, exported, passphrase, tmp_path)
    with other_users_directory(inventory, exported, passphrase) as home:
        theirs = ("-i", "servers.yaml", "--passphrase-file", "passphrase")
        assert as_other_user(home, "state", "import", "kafka.skstate", *theirs).returncode == 0
        assert (home / ".swarmkit").stat().st_uid == OPERATOR_UID
        assert as_other_user(home, "state", "status", "-i", "servers.yaml").returncode == 0
        assert as_other_user(home, "verify", "-i", "servers.yaml", "--timeout", "60").returncode == 0
        added = as_other_user(home, "users", "add", "carol", "-i", "servers.yaml", "--allow", "topic:orders:read")
        assert added.returncode == 0
        topics = ensure_topics("se1:9094", [TopicSpec("traffic-operators", 3, 3)], TIMEOUT, by_address(inventory))
        assert all(t.ok for t in topics)
        alice = CountingProducer("", "traffic-operators", rate_per_s=100, config=login(inventory, "alice", tmp_path)).start()
        try:
            alice.acked_after(100, timeout=120)
            rotated = as_other_user(home, "certs", "rotate", "-i", "servers.yaml", "--timeout", "600", timeout=1800)
            assert rotated.returncode == 0
            alice.acked_after(100, timeout=120)
        finally:
            alice.stop()
        found = read_everything("", "traffic-operators", 3, 120, alice.config | {"group.id": "orders-app"})
        assert lost_and_duplicated(alice.acknowledged, found) == ([], []), alice.errors[:3]
        assert as_other_user(home, "state", "export", "-o", "second.skstate", *theirs).returncode == 0
        back = shutil.copy(home / "second.skstate", tmp_path / "second.skstate")
    first = pki.store_dir(inventory, "kafka")
    before = backup.read_store(first)
    kept = state_cli("state", "import", str(back), "-i", inventory.path, *secret)
    assert kept.returncode == 2 and "--replace" in kept.stderr and backup.read_store(first) == before
    shutil.rmtree(first.parent)
    assert state_cli("state", "import", str(back), "-i", inventory.path, *secret).returncode == 0
    assert "user-carol.password" in backup.read_store(first)


def test_ssl_mode_admits_only_certified_clients_and_verify_catches_a_misnamed_broker(
    secured: tuple[Inventory, UpResult, float], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Last: the sasl_ssl cluster purged and a fresh one deployed in mutual-TLS mode (a fresh cluster is up
    in a fraction of the time a roll of every broker takes; `roll` has its own tests), broker 1 with a
    certificate for another name (deploy itself bootstraps by address). The cluster CA's client
    certificate gets in, a client without one or with a SASL login only is refused, and verify names
    broker 1 alone."""
    inventory, _, _ = secured
    teardown.down(Session.of(inventory), purge=True, yes=True)
    names = deploy_module._advertised_names
    monkeypatch.setattr(
        deploy_module, "_advertised_names", lambda o, host, a: ["elsewhere.example"] if host == "se1" else names(o, host, a)
    )
    assert deploy_module.deploy(plan(inventory, replace(OPTIONS, security="ssl")), Session.of(inventory)).ok
    client = pki.for_stack(inventory, "kafka", "ssl")
    assert client is not None and client.client is not None
    assert len(broker_metadata("se2:9094", TIMEOUT, client).brokers) == 3
    assert_quorum_through_a_broker(client, attempts=5)  # the client may pick se1, whose name is wrong: ask again
    refused("se2:9094", replace(client, client=None), "client certificate refused")
    refused("se3:9094", admin(inventory), "client certificate refused")
    report = verify(Session.of(inventory), VerifyOptions(timeout=TIMEOUT))
    by_node = {b.node: b for b in report.brokers}
    assert not by_node["se1"].ok and by_node["se1"].cause.startswith("hostname mismatch"), by_node["se1"]
    assert by_node["se2"].ok and by_node["se3"].ok, [by_node["se2"].detail, by_node["se3"].detail]


def test_sasl_ssl_over_storage_formatted_in_ssl_gives_the_admin_its_login(secured: tuple[Inventory, UpResult, float]) -> None:
    """After the ssl cluster above, without purging: its controllers were formatted without the admin's SCRAM
    credential, which a deploy in sasl_ssl adds through Kafka's tool, so it converges, verify passes and the
    records written in ssl are read back with the admin's login."""
    inventory, _, _ = secured
    client = pki.for_stack(inventory, "kafka", "ssl")
    assert client is not None
    ensure_topics("se2:9094", [TopicSpec("formatted-in-ssl", 3, 3)], TIMEOUT, replace(client, verify_hostname=False))
    producer = Producer(producer_config("se2:9094") | replace(client, verify_hostname=False).librdkafka())
    for value in range(300):
        producer.produce("formatted-in-ssl", str(value).encode())
    assert producer.flush(60) == 0
    producer.close()  # else its connections to se2 outlive the module's sandbox, logging failures into later modules
    assert deploy_module.deploy(plan(inventory, OPTIONS), Session.of(inventory)).ok
    report = verify(Session.of(inventory), VerifyOptions(timeout=TIMEOUT))
    assert report.ok, [b.detail for b in report.brokers] + [report.cluster_error]
    found = read_everything("se2:9094", "formatted-in-ssl", 3, config=by_address(inventory).librdkafka())
    assert sorted(int(value) for value in found.elements()) == list(range(300))
