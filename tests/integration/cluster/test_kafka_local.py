"""The Kafka adapter, listener diagnosis and the Spark verify job against real tansu brokers on loopback."""

from __future__ import annotations

import socket
import subprocess
import time
import uuid

import pytest

from swarmkit.checks.diagnose import diagnose
from swarmkit.errors import BrokerError
from swarmkit.kafka import admin
from swarmkit.stack.topics import TopicSpec
from swarmkit.traffic.spark import SparkJobError, run_verify_job
from tests.integration.tansu_local import LocalBroker

pytestmark = pytest.mark.integration

EC2_INTERNAL = "ip-172-31-18-160.us-west-2.compute.internal"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def refused_address() -> str:
    """A loopback port that is bound but not listening: connections are refused at once."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"127.0.0.1:{held.getsockname()[1]}"


def test_metadata_is_the_brokers_own_view(local_brokers: list[LocalBroker]) -> None:
    broker = local_brokers[0]
    metadata = admin.broker_metadata(broker.listen, timeout=5)
    host, port = broker.advertised.rsplit(":", 1)
    assert metadata.brokers == (admin.BrokerInfo(111, host, int(port)),)
    assert metadata.cluster_id == "tansu_cluster" and metadata.controller_id == 111
    assert metadata.broker_at(broker.advertised) is not None
    assert metadata.to_dict()["brokers"][0]["port"] == int(port)


@pytest.mark.parametrize("kind", ["refused", "unresolvable"])
def test_metadata_from_a_dead_address_fails_in_bounded_time(kind: str, refused_address: str) -> None:
    address = refused_address if kind == "refused" else f"{EC2_INTERNAL}:9094"
    started = time.monotonic()
    with pytest.raises(BrokerError) as caught:
        admin.broker_metadata(address, timeout=2)
    assert time.monotonic() - started < 10  # bounded by the timeout, not hanging on retries
    assert address in caught.value.message
    assert ("refused" if kind == "refused" else "resolve") in caught.value.message
    assert "diagnose" in caught.value.hint


def test_ensure_topics_is_idempotent_and_reports_mismatches(local_brokers: list[LocalBroker]) -> None:
    bootstrap = local_brokers[0].listen
    specs = [TopicSpec(unique("orders"), 3, 1), TopicSpec(unique("logs"), 2, 1, (("cleanup.policy", "compact"),))]
    first = admin.ensure_topics(bootstrap, specs, timeout=5)
    assert [r.status for r in first] == ["created", "created"]
    again = admin.ensure_topics(bootstrap, specs, timeout=5)
    assert [r.status for r in again] == ["exists", "exists"] and all(r.ok for r in again)
    changed = TopicSpec(specs[0].name, 6, 1)
    [mismatch] = admin.ensure_topics(bootstrap, [changed], timeout=5)
    assert mismatch.status == "mismatch" and not mismatch.ok
    assert (mismatch.partitions, mismatch.replicas) == (3, 1)
    assert "3 partitions" in mismatch.detail and "6" in mismatch.detail
    topic = admin.broker_metadata(bootstrap, timeout=5).topic(specs[0].name)
    assert topic is not None and topic.partition_count == 3  # never altered


def test_ensure_topics_on_each_broker(local_brokers: list[LocalBroker], refused_address: str) -> None:
    bootstraps = [b.listen for b in local_brokers]
    spec = TopicSpec(unique("each"), 2, 1)
    results = admin.ensure_topics_on_each(bootstraps, [spec], timeout=5)
    assert sorted(r.bootstrap for r in results) == sorted(bootstraps)
    assert {r.status for r in results} == {"created"}
    for bootstrap in bootstraps:
        topic = admin.broker_metadata(bootstrap, timeout=5).topic(spec.name)
        assert topic is not None and topic.partition_count == 2
    other = TopicSpec(unique("each"), 1, 1)
    with pytest.raises(BrokerError) as caught:
        admin.ensure_topics_on_each([*bootstraps, refused_address], [other], timeout=2)
    assert refused_address in caught.value.message
    assert all(admin.broker_metadata(b, timeout=5).topic(other.name) for b in bootstraps)


def test_diagnose_a_good_broker(local_brokers: list[LocalBroker]) -> None:
    report = diagnose(local_brokers[1].listen, timeout=3)
    assert report.ok, report.to_dict()
    [check] = report.brokers
    assert (check.node_id, check.advertised) == (111, local_brokers[1].advertised)
    assert check.resolves and check.reachable and check.metadata_ok and check.cause == ""


def test_diagnose_the_seeds_failure_an_internal_name(misadvertised_brokers: dict[str, LocalBroker]) -> None:
    broker = misadvertised_brokers["internal"]
    started = time.monotonic()
    report = diagnose(broker.listen, timeout=3)
    assert time.monotonic() - started < 30
    assert not report.ok
    [check] = report.brokers
    assert check.advertised == broker.advertised and check.advertised.startswith(EC2_INTERNAL)
    assert not check.resolves and not check.reachable and not check.metadata_ok
    assert "internal hostname" in check.cause
    assert "advertised.listeners" in check.fix and "HOSTNAME_COMMAND" in check.fix
    assert report.to_dict()["brokers"][0]["ok"] is False


def test_diagnose_an_advertised_port_that_refuses(misadvertised_brokers: dict[str, LocalBroker]) -> None:
    broker = misadvertised_brokers["refused"]
    report = diagnose(broker.listen, timeout=3)
    [check] = report.brokers
    assert not report.ok and check.advertised == broker.advertised
    assert check.resolves and not check.reachable
    assert "refuses" in check.detail and "wrong listener" in check.cause


def test_diagnose_a_dead_bootstrap(refused_address: str) -> None:
    report = diagnose(refused_address, timeout=2)
    assert not report.ok and report.brokers == ()
    assert report.bootstrap_check is not None and "nothing listens" in report.bootstrap_check.cause


def test_spark_job_through_every_broker(local_brokers: list[LocalBroker], tmp_path) -> None:
    brokers = [b.advertised for b in local_brokers]
    report = run_verify_job(brokers, unique("verify"), records=3000, report_path=tmp_path / "report.json", timeout=180)
    assert report.ok and report.failures == []
    assert [b.broker for b in report.brokers] == brokers
    for broker in report.brokers:
        assert broker.produced == broker.consumed == 3000
        assert broker.missing == broker.duplicates == broker.unexpected == 0 and broker.checksum_ok
        assert broker.latency_p50_ms is not None and broker.latency_p99_ms >= broker.latency_p50_ms
        assert broker.produce_records_per_s > 0 and broker.consume_records_per_s > 0
        assert len(broker.partitions) >= 2 and sum(p.expected for p in broker.partitions) == 3000
        assert all(p.ok and p.consumed == p.expected and p.latency_p50_ms is not None for p in broker.partitions)
    assert report.spark_startup_s > 0 and report.traffic_s > 0 and report.wall_s >= report.elapsed_s
    assert (tmp_path / "report.json").is_file()


def test_spark_job_names_unusable_brokers_in_bounded_time(
    local_brokers: list[LocalBroker], misadvertised_brokers: dict[str, LocalBroker], refused_address: str, tmp_path
) -> None:
    internal = misadvertised_brokers["internal"].listen
    brokers = [local_brokers[0].advertised, refused_address, internal]
    started = time.monotonic()
    with pytest.raises(SparkJobError) as caught:
        run_verify_job(brokers, unique("verify"), records=1000, report_path=tmp_path / "r.json", timeout=180)
    assert time.monotonic() - started < 120
    report = caught.value.report
    assert report is not None and not report.ok
    good, dead, misadvertised = report.brokers
    assert good.ok and good.consumed == 1000
    assert not dead.reachable and dead.missing == 1000 and refused_address in dead.error
    assert not misadvertised.reachable and EC2_INTERNAL in misadvertised.error
    assert refused_address in caught.value.message and internal in caught.value.message


def test_spark_job_timeout_stops_the_whole_job(local_brokers: list[LocalBroker], tmp_path) -> None:
    report_path = tmp_path / "slow.json"
    started = time.monotonic()
    with pytest.raises(SparkJobError) as caught:
        run_verify_job([local_brokers[0].advertised], unique("slow"), records=10_000_000, report_path=report_path, timeout=4)
    assert time.monotonic() - started < 30  # stopped near the 4 s timeout, not after 10M records
    assert "did not finish within 4s" in caught.value.message
    leftovers = subprocess.run(["pgrep", "-f", str(report_path)], capture_output=True, text=True).stdout.split()
    assert leftovers == []
