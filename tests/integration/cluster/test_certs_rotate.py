"""A CA rotation on a 3-node sasl_ssl Apache Kafka cluster under acks=all traffic: `certs rotate --ca` rolls
its three steps (every controller and broker restarted three times, one at a time) while one producer
trusts only the old CA for the whole rotation and another, started once every node trusts the new CA,
trusts only the new one; neither loses nor duplicates an acknowledged record, and verify passes after."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

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
OPTIONS = DeployOptions(topics="old:3:3,new:3:3", security="sasl_ssl", timeout=300)
BOOTSTRAP = "cr1:9094,cr2:9094,cr3:9094"  # host names checked against the brokers' certificates
TIMEOUT = 15.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Inventory]:
    directory = tmp_path_factory.mktemp(NAME)
    with fresh_sandbox(NAME, 3, "10.219.0.0/24", NAME, directory, engine="apache", managers=3) as box:
        inventory = load_inventory(box.inventory_path)
        assert up(plan(inventory, OPTIONS), Session.of(inventory)).ok
        yield inventory


def login(inventory: Inventory, ca_pem: str) -> dict[str, object]:
    """swarmkit's admin login, trusting ``ca_pem`` alone."""
    admin = pki.for_stack(inventory, "kafka", "sasl_ssl")
    assert admin is not None
    return dict(replace(admin, ca_pem=ca_pem).librdkafka())


def test_a_ca_rotation_under_traffic_loses_nothing_for_clients_of_either_ca(cluster: Inventory) -> None:
    store = pki.Pki(pki.store_dir(cluster, "kafka"))
    old_ca = store.kept_ca().cert_pem
    old_client = CountingProducer(BOOTSTRAP, "old", rate_per_s=100, settings=login(cluster, old_ca)).start()
    old_client.acked_after(100, 120)
    started: list[CountingProducer] = []

    def progress(done: int, total: int, message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {message}", flush=True)
        if message.startswith("step 2") and not started:  # step 1 rolled out: every node trusts the new CA
            new_ca = (store.directory / f"{rotation.NEXT}.crt").read_text()
            started.append(CountingProducer(BOOTSTRAP, "new", rate_per_s=100, settings=login(cluster, new_ca)).start())

    report = certs_op.rotate(Session.of(cluster, progress=progress), certs_op.RotateOptions(ca=True, timeout=240))
    assert report.ok and [step.step for step in report.steps] == [1, 2, 3], report
    print(f"rotation: {report.total_s:.1f} s; " + "; ".join(f"step {s.step} {s.seconds:.1f} s" for s in report.steps))
    new_client = started[0]
    for client in (old_client, new_client):
        client.acked_after(100, 120)  # both still write after the old CA left the brokers' trust
        client.stop()
    new_ca = store.kept_ca().cert_pem
    for client in (old_client, new_client):
        found = read_everything(BOOTSTRAP, client.topic, 3, settings=login(cluster, new_ca))
        lost, duplicated = lost_and_duplicated(client.acknowledged, found)
        print(f"{client.topic}: {len(client.acknowledged)} acknowledged, {len(lost)} lost, {len(duplicated)} duplicated")
        assert (lost, duplicated) == ([], []), client.errors[:3]
    assert store.rotation() is None and store.trust() == new_ca and not (store.directory / "ca-old.key").exists()
    assert report.expiry.ca_days == 3649 and report.expiry.broker_days == 824
    checked = verify(Session.of(cluster), VerifyOptions(timeout=TIMEOUT))
    assert checked.ok, [b.detail for b in checked.brokers] + [checked.cluster_error]


def test_a_cluster_is_refused_for_a_ca_it_does_not_know(cluster: Inventory) -> None:
    """Checked before anything changes: a store whose CA key does not belong to its certificate."""
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
