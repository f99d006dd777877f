"""The shared wait loop (pure, with the pause taken out): each new reason reported once, a bound that ends it."""

from __future__ import annotations

import pytest

from swarmkit import waits


def test_a_wait_reports_each_new_reason_once_and_ends_when_nothing_is_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(waits.Pause, "sleep", lambda self: None)
    answers = iter(["2 partitions lag", "2 partitions lag", "1 partition lags", ""])
    reported: list[str] = []
    assert waits.until_ready(lambda: next(answers), 60, reported.append) == ""
    assert reported == ["2 partitions lag", "1 partition lags"]


def test_a_wait_past_its_bound_gives_the_last_reason() -> None:
    reported: list[str] = []
    assert waits.until_ready(lambda: "1 partition lags", 0, reported.append) == "1 partition lags"
    assert reported == []
