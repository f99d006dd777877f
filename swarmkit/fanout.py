"""Calls to many hosts or brokers at once.

Every such call waits on the network (a Docker engine, a Kafka broker, a probe), so threads are
enough and results come back in the order of the inputs.  Each call runs in a daemon thread of its own:
a Ctrl-C ends the command at once, instead of waiting for every probe still running (a thread pool's
workers are joined on the way out, each up to its own timeout).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")
E = TypeVar("E", bound=BaseException)


def _started(call: Callable[..., R], *args: object) -> Future[R]:
    """``call(*args)`` in a daemon thread of its own; nothing waits for it unless its future is waited on."""
    future: Future[R] = Future()

    def run() -> None:
        future.set_running_or_notify_cancel()
        try:
            future.set_result(call(*args))
        except BaseException as error:  # the future carries whatever ended the call
            future.set_exception(error)

    threading.Thread(target=run, daemon=True).start()
    return future


def fan_out(call: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``call`` on every item at once; once all have ended, the first exception (in input order) is raised."""
    futures = [_started(call, item) for item in items]
    wait(futures)
    return [future.result() for future in futures]


def fan_out_settled(call: Callable[[T], R], items: Iterable[T], errors: type[E]) -> list[R | E]:
    """``call`` on every item at once; an expected error becomes that item's result instead of stopping the rest."""

    def settle(item: T) -> R | E:
        try:
            return call(item)
        except errors as error:
            return error

    return fan_out(settle, items)


@contextmanager
def in_background(call: Callable[[], R]) -> Iterator[Future[R]]:
    """``call`` runs while the block does; leaving the block waits for it (not when interrupted)."""
    future = _started(call)
    try:
        yield future
    except Exception:
        wait([future])
        raise
    wait([future])


def settle_by(calls: Sequence[Callable[[], R]], deadline: float) -> list[R | Exception]:
    """Run calls at once until ``deadline`` (monotonic); each result is its value, the exception it raised, or a
    TimeoutError.  Calls still running at the deadline are abandoned, not waited for."""
    futures = [_started(call) for call in calls]
    results: list[R | Exception] = []
    for future in futures:
        try:
            results.append(future.result(timeout=max(0.0, deadline - time.monotonic())))
        except TimeoutError:
            results.append(TimeoutError("no answer before the deadline"))
        except Exception as error:  # each call's failure is reported, not raised
            results.append(error)
    return results


def first_success(calls: Sequence[Callable[[], R]], deadline: float) -> R:
    """The calls at once; the first value any of them returns by ``deadline`` (monotonic).  When none does, the
    exception of the first call (in input order) that failed, else a TimeoutError.  Calls still running then are
    abandoned, not waited for: one that hangs does not hold the others' answers."""
    futures = [_started(call) for call in calls]
    running = set(futures)
    while running and (left := deadline - time.monotonic()) > 0:
        done, running = wait(running, timeout=left, return_when=FIRST_COMPLETED)
        if answered := _answered(list(done)):
            return answered.result()
    error = next((f.exception() for f in futures if f.done() and f.exception() is not None), None)
    raise error or TimeoutError("no answer before the deadline")


def first_answer(ask: Callable[[float], R], timeout: float, every: float) -> R:
    """``ask(seconds_left)`` now, and again every ``every`` seconds while the earlier attempts keep
    waiting; the first to return wins. When none does, the first attempt's exception (it waited
    longest, so it saw most) is raised. Attempts still running then are abandoned, not waited for."""
    deadline = time.monotonic() + timeout
    most = int(timeout // every) + 1
    attempts: list[Future[R]] = [_started(ask, timeout)]  # always one, however late this thread runs
    while (left := deadline - time.monotonic()) > -every:  # each attempt is bounded by the deadline itself
        running = [a for a in attempts if not a.done()]
        if not running and left <= 0:
            break
        if running:
            wait(running, timeout=min(every, left) if left > 0 else every, return_when=FIRST_COMPLETED)
        elif not _answered(attempts):  # an answer that came before this thread looked is not waited out
            time.sleep(min(every, left))  # every attempt failed at once: the next one waits its turn
        if answered := _answered(attempts):
            return answered.result()
        if (left := deadline - time.monotonic()) > 0 and len(attempts) < most:
            attempts.append(_started(ask, left))
    first = attempts[0]
    wait([first], timeout=every)  # this thread may have run late: the first attempt gets its due
    if answered := _answered(attempts):
        return answered.result()
    raise (first.exception() if first.done() else None) or TimeoutError(f"no answer within {timeout:g}s")


def _answered(attempts: list[Future[R]]) -> Future[R] | None:
    return next((a for a in attempts if a.done() and a.exception() is None), None)
