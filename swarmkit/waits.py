"""Waits that share a small machine: look again after a pause that grows while nothing changes, and give
up when nothing has moved for a while (a stall) rather than at one fixed deadline.

A busy machine makes every step slow, so a single deadline either fails a start that is only slow or
waits far too long for one that is stuck; polling fast takes the CPU from the very processes waited for.
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from swarmkit import fanout

FIRST_PAUSE = 0.5  # seconds between two looks right after something changed
LONGEST_PAUSE = 3.0
PAUSE_GROWTH = 1.5
STALL_TIMEOUT = 180.0  # nothing changed for this long: the wait fails

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


class Deadline(Pause):
    """A wait bounded by one deadline (``seconds`` from now), looking again after a pause that grows from
    ``first`` to ``longest``: what a wait for one known end state (a job ended, a process gone) uses."""

    def __init__(self, seconds: float, first: float = FIRST_PAUSE, longest: float = LONGEST_PAUSE) -> None:
        super().__init__(first, longest)
        self.at = time.monotonic() + seconds

    def passed(self) -> bool:
        return time.monotonic() > self.at


def until_ready(look: Callable[[], str], bound: float, report: Callable[[str], None]) -> str:
    """Look again until ``look`` finds nothing wrong ("") or ``bound`` s have passed, reporting each new reason
    once; the last reason ("" when ready).  Waiting on one's own restarts beats refusing at the first look."""
    deadline, pause, last = time.monotonic() + bound, Pause(), ""
    while True:
        why = look()
        if not why or time.monotonic() >= deadline:
            return why
        if why != last:
            report(why)
            last = why
            pause.changed()
        pause.sleep()


class StallClock:
    """When a wait has to give up: no progress for ``limits.stall`` s, or ``limits.cap`` s in all."""

    def __init__(self, limits: WaitLimits) -> None:
        self.limits = limits
        self.started = self.last_progress = time.monotonic()

    def progressed(self) -> None:
        self.last_progress = time.monotonic()

    def expired(self) -> str:
        """Why the wait is over ('' while it may go on)."""
        now = time.monotonic()
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
