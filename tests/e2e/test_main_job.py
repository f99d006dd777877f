"""The README's main job, end to end, on a busy machine: setup, a 3-host sandbox, `swarmkit up`, `verify --spark`, `metrics up`,
all while one core is kept fully busy (scripts/busy.sh), as on a user's laptop or a shared CI runner."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import state as sandbox_state
from swarmkit.sandbox.state import Sandbox

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def main_job_sandbox():
    yield
    sandbox.down("sk")


def _restarted_tasks(created: Sandbox) -> list[str]:
    """Every task the swarm had to replace: a broker or controller that exited and was started again."""
    docker = created.hosts[0].docker.client
    replaced = []
    for service in docker.service.list():
        tasks = docker.service.ps(service)
        replaced += [
            f"{service.spec.name} on {t.node_id}: {t.status.state} {t.status.err or ''}"
            for t in tasks
            if t.desired_state != "running"
        ]
    return replaced


@pytest.mark.parametrize("security", ["plaintext", "sasl_ssl"])
def test_readme_main_job_proves_every_broker_with_one_core_busy(main_job_sandbox: None, security: str) -> None:
    """Both forms the README gives: `bash scripts/demo.sh` and `bash scripts/demo.sh --security sasl_ssl`."""
    result = subprocess.run(
        ["bash", "scripts/busy.sh", "--cores", "1", "bash", "scripts/demo.sh", "--security", security],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "verified: every broker is usable from here" in result.stdout
    assert re.search(r"metrics: http://[\d.]+:9090/ ", result.stdout), "demo.sh did not print where the metrics are"
    assert "serving as node1:9094" in result.stderr  # deploy's phases reach a log that is not a terminal
    report = json.loads((ROOT / "reports" / "verify.json").read_text())
    assert report["ok"] is True
    brokers = sorted(report["brokers"], key=lambda b: b["broker"])
    assert [b["broker"] for b in brokers] == ["node1:9094", "node2:9094", "node3:9094"]
    for broker in brokers:
        assert broker["produced"] == broker["consumed"] == report["records_per_broker"] > 0
        assert broker["missing"] == broker["duplicates"] == 0 and broker["checksum_ok"]
    assert "per-broker throughput and latency" in (ROOT / "reports" / "verify.html").read_text()
    assert _restarted_tasks(sandbox_state.load("sk")) == []
    if security != "plaintext":
        client = (ROOT / "reports" / "client.properties").read_text()
        assert "security.protocol=SASL_SSL" in client
