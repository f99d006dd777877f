"""Waits that share a small machine: look again after a pause that grows while nothing changes, and give
up when nothing has moved for a while (a stall) rather than at one fixed deadline.

A busy machine makes every step slow, so a single deadline either fails a start that is only slow or
waits far too long for one that is stuck; polling fast takes the CPU from the very processes waited for.
Every poll in swarmkit is one call of ``until`` (tests/unit/test_layers.py: no pause, stall clock or sleep
made by hand elsewhere).
"""

from __future__ import annotations

import math
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, overload

from swarmkit import fanout

FIRST_PAUSE = 0.5  # seconds between two looks right after something changed
LONGEST_PAUSE = 3.0
PAUSE_GROWTH = 1.5
STALL_TIMEOUT = 180.0  # nothing changed for this long: the wait fails
T = TypeVar("T")

Progress = Callable[[int, int, str], None]  # (steps done, steps in all, what happens now)


def no_progress(done: int, total: int, message: str) -> None:
    """The default progress callback: say nothing."""


@dataclass(frozen=True)
class WaitLimits:
    """How long a wait may go without progress, and how long it may take at most."""

    stall: float = STALL_TIMEOUT
    cap: float = 900.0


class Pause:
    """The pause between two looks: short after a change, growing up to LONGEST_PAUSE while nothing moves."""

    def __init__(self, first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE) -> None:
        self.first = self.seconds = first
        self.longest = longest

    def changed(self) -> None:
        self.seconds = self.first

    def sleep(self) -> None:
        """Wait the pause (fanout.Stopped at once when the command no longer waits for this call), then grow it."""
        fanout.pause(self.seconds)
        self.seconds = min(self.longest, self.seconds * PAUSE_GROWTH)


@dataclass(frozen=True)
class NotYet:
    """What a look gives while the awaited value is not there: why (said once each time it changes; a change is
    progress, after which the pause starts short again)."""

    why: str = ""


def _quiet(why: str) -> None:
    """The default report of ``until``: say nothing."""


@overload
def until(
    look: Callable[[], T | NotYet],
    bound: float | WaitLimits,
    *,
    fail: Callable[[str], Exception],
    report: Callable[[str], None] = _quiet,
    first: float = FIRST_PAUSE,
    longest: float = LONGEST_PAUSE,
) -> T: ...


@overload
def until(
    look: Callable[[], T | NotYet],
    bound: float | WaitLimits,
    *,
    fail: None = None,
    report: Callable[[str], None] = _quiet,
    first: float = FIRST_PAUSE,
    longest: float = LONGEST_PAUSE,
) -> T | NotYet: ...


def until(
    look: Callable[[], T | NotYet],
    bound: float | WaitLimits,
    *,
    fail: Callable[[str], Exception] | None = None,
    report: Callable[[str], None] = _quiet,
    first: float = FIRST_PAUSE,
    longest: float = LONGEST_PAUSE,
) -> T | NotYet:
    """The one poll loop: ``look`` until it gives a value (anything but a NotYet), reporting each new reason once,
    pausing ``first`` s after a change and up to ``longest`` s while nothing changes.  It gives up rather than pause
    past ``bound`` (seconds; a WaitLimits: its cap, or its stall without a new reason): then ``fail(why)`` is raised
    (why: the last reason; under WaitLimits the stall or the cap), or without ``fail`` the last NotYet returned.
    fanout.Stopped at once when the command no longer waits for this call."""
    clock = StallClock(bound if isinstance(bound, WaitLimits) else WaitLimits(stall=math.inf, cap=bound))
    pause, last = Pause(first, longest), ""
    while isinstance(found := look(), NotYet):
        if found.why != last:
            last = found.why
            if last:
                report(last)
            clock.progressed()
            pause.changed()
        if over := clock.expired(pause.seconds):
            if fail is not None:
                raise fail(over if isinstance(bound, WaitLimits) else last)
            return found
        pause.sleep()
    return found


def until_ready(look: Callable[[], str], bound: float, report: Callable[[str], None]) -> str:
    """``until`` for a look that says what is still wrong ("" when nothing is): the last reason ("" when ready)."""
    found = until(lambda: NotYet(why) if (why := look()) else None, bound, report=report)
    return found.why if found else ""


class StallClock:
    """When a wait has to give up: no progress for ``limits.stall`` s, or ``limits.cap`` s in all."""

    def __init__(self, limits: WaitLimits) -> None:
        self.limits = limits
        self.started = self.last_progress = time.monotonic()

    def progressed(self) -> None:
        self.last_progress = time.monotonic()

    def expired(self, ahead: float = 0.0) -> str:
        """Why the wait is over ('' while it may go on ``ahead`` seconds more)."""
        now = time.monotonic() + ahead
        if now - self.started > self.limits.cap:
            return f"not done after {self.limits.cap:g}s"
        if now - self.last_progress > self.limits.stall:
            return f"no progress for {self.limits.stall:g}s"
        return ""


class Budget:
    """One command's time: each step may take its own bound, never past the command's deadline."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds

    def until(self, bound: float) -> float:
        """The deadline (monotonic) of a step that may take ``bound`` seconds."""
        return min(self.deadline, time.monotonic() + bound)

    def left(self, bound: float) -> float:
        """Seconds a step that may take ``bound`` has from now."""
        return max(0.0, self.until(bound) - time.monotonic())


def answers_ok(url: str, timeout: float = 1.0) -> bool:
    """Whether an HTTP GET of ``url`` is answered 200 now: what waits for a registry or a server to be up poll."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status == 200
    except OSError:
        return False


def hold(seconds: float) -> None:
    """Let ``seconds`` pass on purpose (a fault held for its set time): not a poll; cut short (fanout.Stopped)
    when the command no longer waits for the call holding it."""
    fanout.pause(seconds)
