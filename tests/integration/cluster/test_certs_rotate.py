"""A CA rotation on a 3-node sasl_ssl Apache Kafka cluster under acks=all traffic: `swarmkit certs rotate --ca`
rolls its three steps (every broker and controller restarted once per step, one at a time) while one
producer trusts only the old CA for the whole rotation and another, started once every node trusts the
new CA (step 1 rolled out), trusts only the new one; neither loses nor duplicates an acknowledged
record, and verify passes after."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from swarmkit.checks.verify import VerifyOptions, verify
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.ops import certs as certs_op
from swarmkit.ops.deploy import up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.security import certs, pki, rotation
from tests.integration.kafka_traffic import CountingProducer, lost_and_duplicated, read_everything
from tests.integration.sandboxes import fresh_sandbox

pytestmark = pytest.mark.integration

NAME = "cr"
OPTIONS = DeployOptions(topics="old:3:3,new:3:3", security="sasl_ssl", timeout=600)
BOOTSTRAP = "cr1:9094,cr2:9094,cr3:9094"  # host names checked against the brokers' certificates
TIMEOUT = 15.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inventory]:
    directory = tmp_path_factory.mktemp(NAME)
    with fresh_sandbox(NAME, 3, "10.219.0.0/24", NAME, directory, engine="apache", managers=3) as box:
        inventory = load_inventory(box.inventory_path)
        assert up(plan(inventory, OPTIONS), Session.of(inventory), preflight=None).ok  # preflight has its own tests
        yield inventory


def login(inventory: Inventory, ca_pem: str) -> dict[str, object]:
    """swarmkit's admin login, trusting ``ca_pem`` alone."""
    admin = pki.for_stack(inventory, "kafka", "sasl_ssl")
    assert admin is not None
    return dict(replace(admin, ca_pem=ca_pem).librdkafka())


def start_after_step_1(store: pki.Pki, inventory: Inventory, done: threading.Event) -> list[CountingProducer]:
    """A producer trusting only the new CA, started as soon as the store says step 1 is rolled out."""
    started: list[CountingProducer] = []

    def watch() -> None:
        while not done.is_set() and not started:
            state = store.rotation()
            if state is not None and (state.step, state.rolled) >= (1, True):
                following = store.directory / f"{rotation.NEXT}.crt"  # step 2 makes it ca.crt (then removes it)
                new_ca = following.read_text() if following.is_file() else store.kept_ca().cert_pem
                started.append(CountingProducer(BOOTSTRAP, "new", rate_per_s=100, config=login(inventory, new_ca)).start())
            time.sleep(0.2)

    threading.Thread(target=watch, daemon=True).start()
    return started


def test_a_ca_rotation_under_traffic_loses_nothing_for_clients_of_either_ca(cluster: Inventory) -> None:
    store = pki.Pki(pki.store_dir(cluster, "kafka"))
    old_client = CountingProducer(BOOTSTRAP, "old", rate_per_s=100, config=login(cluster, store.kept_ca().cert_pem)).start()
    old_client.acked_after(100, 120)
    done = threading.Event()
    started = start_after_step_1(store, cluster, done)
    command = [str(Path(sys.executable).with_name("swarmkit")), "certs", "rotate", "-i", cluster.path, "--ca", "--timeout", "600"]
    rotated = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    done.set()
    print(rotated.stdout)
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr[-3000:]
    assert [line.split(":")[0] for line in rotated.stdout.splitlines()[:3]] == ["step 1", "step 2", "step 3"]
    new_ca = store.kept_ca().cert_pem
    for client in (old_client, started[0]):
        client.acked_after(100, 120)  # both still write after the old CA left the brokers' trust
        client.stop()
        found = read_everything(BOOTSTRAP, client.topic, 3, config=login(cluster, new_ca))
        lost, duplicated = lost_and_duplicated(client.acknowledged, found)
        print(f"{client.topic}: {len(client.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated")
        assert (lost, duplicated) == ([], []), client.errors[:3]
    assert store.rotation() is None and store.trust() == new_ca and not (store.directory / "ca-old.key").exists()
    checked = verify(Session.of(cluster), VerifyOptions(timeout=TIMEOUT))
    assert checked.ok, checked.problems
    assert checked.certificates == pki.Expiry(3649, 824)


def test_a_ca_key_that_does_not_belong_to_the_ca_is_refused_before_anything_changes(cluster: Inventory) -> None:
    store = pki.Pki(pki.store_dir(cluster, "kafka"))
    key = store.directory / "ca.key"
    kept = key.read_text()
    try:
        key.write_text(certs.new_ca("someone else").key_pem)
        with pytest.raises(SpecError, match="does not belong to ca.crt"):
            certs_op.rotate(Session.of(cluster), certs_op.RotateOptions())
        assert store.rotation() is None
    finally:
        key.write_text(kept)
