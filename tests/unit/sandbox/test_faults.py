"""The fault commands' input checks: nothing changes before they pass."""

from __future__ import annotations

import pytest

from swarmkit.cli.faults import duration
from swarmkit.errors import SpecError
from swarmkit.sandbox import disks, faults


@pytest.mark.parametrize(
    ("check", "bad"),
    [(faults.rate, v) for v in ("1", "fast", "0mbit", "1 mbit", "-1mbit")]
    + [(disks.limit, v) for v in ("32m", "9g", "256", "256mb", "")]
    + [(duration, v) for v in ("0", "1h", "-5s", "soon")],
)
def test_bad_input_is_refused(check, bad: str) -> None:
    with pytest.raises(SpecError):
        check(bad)


def test_good_input_is_kept() -> None:
    assert faults.rate("1mbit") == "1mbit" and faults.rate("500KBIT") == "500kbit"
    assert disks.limit("256m") == "256m" and disks.limit("1G") == "1g"
    assert (duration("60"), duration("60s"), duration("2m")) == (60, 60, 120)


def test_the_bucket_holds_a_packet_at_slow_rates_and_10_ms_at_fast_ones() -> None:
    assert faults._bucket_bytes("1mbit") == faults.SMALLEST_BUCKET
    assert faults._bucket_bytes("1gbit") == 1_250_000


def test_an_inventory_of_real_servers_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("swarmkit.sandbox.state.STATE_ROOT", tmp_path)
    inventory = tmp_path / "servers.yaml"
    inventory.write_text("hosts: []\n")
    with pytest.raises(SpecError, match="not the inventory of a sandbox"):
        faults.sandbox_of_inventory(str(inventory))
