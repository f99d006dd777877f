"""The README's main job, end to end: setup, a 3-host sandbox, `swarmkit up`, `verify --spark`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from swarmkit.sandbox import hosts as sandbox

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def main_job_sandbox():
    yield
    sandbox.down("sk")


def test_readme_main_job_proves_every_broker(main_job_sandbox: None) -> None:
    result = subprocess.run(
        ["bash", "scripts/demo.sh"], cwd=ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "verified: every broker is usable from here" in result.stdout
    report = json.loads((ROOT / "reports" / "verify.json").read_text())
    assert report["ok"] is True
    brokers = sorted(report["brokers"], key=lambda b: b["broker"])
    assert [b["broker"] for b in brokers] == ["node1:9094", "node2:9094", "node3:9094"]
    for broker in brokers:
        assert broker["produced"] == broker["consumed"] == report["records_per_broker"] > 0
        assert broker["missing"] == broker["duplicates"] == 0 and broker["checksum_ok"]
