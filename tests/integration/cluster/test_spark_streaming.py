"""The verify job's streaming mode on a replicated Apache Kafka cluster: a query stopped mid-stream
while the producer keeps writing, and restarted from its checkpoint, sees every record exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from swarmkit.cluster.deploy import DeployOptions, up
from swarmkit.cluster.spark_streaming import StreamOptions, run_streaming_job
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.sandbox import hosts as sandbox
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

TOPIC = "stream"
BROKERS = ["ss1:9094", "ss2:9094", "ss3:9094"]
ss = module_sandbox("ss", 3, "10.235.0.0/24", engine="apache", managers=3)


@pytest.fixture(scope="module")
def cluster(ss: sandbox.Sandbox) -> Inventory:
    inventory = load_inventory(ss.inventory_path)
    result = up(inventory, DeployOptions(topics=f"{TOPIC}:3:3"))
    assert result.ok, result.deploy.problems
    return inventory


def test_a_query_restarted_from_its_checkpoint_sees_every_record_exactly_once(cluster: Inventory, tmp_path: Path) -> None:
    options = StreamOptions(seconds=12, rate=2000, restart_after=4, checkpoint=tmp_path / "checkpoint")
    report = run_streaming_job(BROKERS, TOPIC, options, report_path=tmp_path / "report.json")
    assert report.ok, report.failures
    assert report.restarts == 1 and len(report.per_query) == 2 and all(report.per_query), report.per_query
    assert report.produced == report.acked == report.distinct == report.consumed > 0
    assert report.missing == report.duplicates == 0 and report.checksum_ok
    assert report.latency_max_ms >= report.latency_p99_ms >= report.latency_p50_ms > 0
    assert report.records_per_s > 0 and report.batches >= 2
    assert (tmp_path / "checkpoint" / "query" / "commits").is_dir()
