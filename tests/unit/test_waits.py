"""The one wait loop (pure, on a fake clock whose pauses only move it): each new reason reported once, the pause
short again after a change, a bound it does not pause past, a stall, and a closing pool that ends it at once."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from swarmkit import fanout, waits
from swarmkit.errors import OperationError


class Clock:
    """waits' monotonic clock, moved only by its pauses (each one recorded)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now, self.paused = 1000.0, list[float]()
        monkeypatch.setattr(waits.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(waits.fanout, "pause", self.pause)

    def pause(self, seconds: float) -> None:
        self.paused.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return Clock(monkeypatch)


def looks(*answers: str | waits.NotYet) -> Callable[[], str | waits.NotYet]:
    """A look giving ``answers`` in turn."""
    given = iter(answers)
    return lambda: next(given)


def test_the_value_comes_back_and_each_new_reason_is_reported_once(clock: Clock) -> None:
    reported: list[str] = []
    look = looks(waits.NotYet("2 lag"), waits.NotYet("2 lag"), waits.NotYet(""), waits.NotYet("1 lags"), "in sync")
    assert waits.until(look, 60, report=reported.append, first=0.2, longest=0.4) == "in sync"
    assert reported == ["2 lag", "1 lags"]
    assert clock.paused == [0.2, pytest.approx(0.3), 0.2, 0.2]  # a new reason (also "": nothing said) is progress


def test_a_wait_does_not_pause_past_its_bound_and_fails_with_the_last_reason(clock: Clock) -> None:
    look = looks(*(waits.NotYet(f"{n} left") for n in range(5, 0, -1)))
    with pytest.raises(OperationError, match="not within 1s: 3 left"):
        waits.until(look, 1, fail=lambda why: OperationError(f"not within 1s: {why}"), first=0.5, longest=0.5)
    assert clock.paused == [0.5, 0.5] and clock.now == 1001.0


def test_without_fail_the_last_reason_comes_back(clock: Clock) -> None:
    assert waits.until(lambda: waits.NotYet("still 1"), 10) == waits.NotYet("still 1")
    assert sum(clock.paused) <= 10 and max(clock.paused) == waits.LONGEST_PAUSE


def test_a_stall_limited_wait_goes_on_while_reasons_change_and_names_the_stall(clock: Clock) -> None:
    phases = iter([*(f"phase {n}" for n in range(40)), *["stuck"] * 40])
    with pytest.raises(OperationError, match=r"^no progress for 5s$"):
        waits.until(lambda: waits.NotYet(next(phases)), waits.WaitLimits(stall=5, cap=900), fail=OperationError)
    assert clock.now - 1000 > 40 * waits.FIRST_PAUSE > 5


def test_until_ready_gives_the_last_reason_or_nothing(clock: Clock) -> None:
    reported: list[str] = []
    assert waits.until_ready(lambda: "1 partition lags", 0, reported.append) == "1 partition lags"
    assert waits.until_ready(looks("2 lag", "2 lag", "1 lags", ""), 60, reported.append) == ""
    assert reported == ["1 partition lags", "2 lag", "1 lags"]


def test_a_wait_in_a_closing_pool_ends_at_once() -> None:
    """A command that gives up on a call (a deadline, a failed step) is not held back by the call's own wait."""
    started = time.monotonic()
    (outcome,) = fanout.settle_by([lambda: waits.until(waits.NotYet, 30)], time.monotonic() + 0.1)
    assert isinstance(outcome, TimeoutError) and time.monotonic() - started < 5 and fanout.abandoned() == []


def test_a_stopped_wait_raises_stopped_without_looking_again(monkeypatch: pytest.MonkeyPatch) -> None:
    def stopped(seconds: float) -> None:
        raise fanout.Stopped("stopped")

    monkeypatch.setattr(waits.fanout, "pause", stopped)
    looked: list[int] = []
    with pytest.raises(fanout.Stopped):
        waits.until(lambda: looked.append(1) or waits.NotYet(), 30)
    assert looked == [1]
