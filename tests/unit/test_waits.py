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


def test_a_deadline_pauses_grow_up_to_the_longest_and_it_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    paused: list[float] = []
    monkeypatch.setattr(waits.fanout, "pause", paused.append)
    deadline = waits.Deadline(0.0, first=0.2, longest=0.4)
    for _ in range(3):
        deadline.sleep()
    assert paused == [0.2, pytest.approx(0.3), 0.4] and deadline.passed()


def test_a_wait_in_a_closing_pool_ends_at_once() -> None:
    """A command that gives up on a call (a deadline, a failed step) is not held back by the call's own wait."""

    def waiting() -> None:
        deadline = waits.Deadline(30)
        while not deadline.passed():
            deadline.sleep()

    started = time.monotonic()
    (outcome,) = fanout.settle_by([waiting], time.monotonic() + 0.1)
    assert isinstance(outcome, TimeoutError) and time.monotonic() - started < 5 and fanout.abandoned() == []
