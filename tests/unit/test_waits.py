"""The shared wait loop (pure, with the pause taken out): each new reason reported once, a bound that ends it."""

from __future__ import annotations

import time

import pytest

from swarmkit import fanout, waits


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


def test_a_deadline_looks_again_after_growing_pauses_until_it_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(waits.fanout, "pause", slept.append)
    deadline = waits.Deadline(60, first=0.2, longest=0.4)
    for _ in range(3):
        deadline.sleep()
    assert slept == pytest.approx([0.2, 0.3, 0.4])
    assert not waits.Deadline(60).passed() and waits.Deadline(-1).passed()


def test_a_wait_in_a_closing_pool_ends_at_once() -> None:
    """A call abandoned by its fan-out stops at its next pause instead of polling on."""
    started = time.monotonic()
    outcomes = fanout.settle_by([lambda: waits.Deadline(60).sleep()], time.monotonic() + 0.1)
    assert isinstance(outcomes[0], TimeoutError) and time.monotonic() - started < 5
    assert fanout.abandoned() == []
