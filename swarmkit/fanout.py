"""Calls to many hosts or brokers at once: the one place swarmkit starts threads.

Every such call waits on the network (a Docker engine, a Kafka broker, a probe), so threads are
enough and results come back in the order of the inputs.  A ``Pool`` runs one command step's calls on
a bounded number of threads (``MAX_THREADS``); closing it cancels the calls not started yet, tells
the running ones to stop (``stopping()``: the waits of ``swarmkit.waits`` end at once when told)
and joins its threads, each bounded by its own timeouts.  A call that cannot be told (a blocking
library call) and outlives a pool's grace is left to its own timeout and listed by ``abandoned()``;
``drain()`` joins those at a command's end.  The threads are daemons, so a Ctrl-C ends the command at
once instead of waiting for every probe still running.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from typing import Generic, TypeAlias, TypeVar

T = TypeVar("T")
R = TypeVar("R")
E = TypeVar("E", bound=BaseException)

MAX_THREADS = 16  # calls of one step at once (they wait on the network, not on the 2 cores: the bound is on connections)
GRACE = 1.0  # seconds a call told to stop has to end before it is left to its own timeout
V = TypeVar("V")
Outcome: TypeAlias = V | Exception  # a call's value, or the exception it raised (a TimeoutError when abandoned)
Lock = threading.Lock  # the layers keep `threading` here: other modules take their locks and events from this one
Event = threading.Event
__all__ = ["Event", "Future", "Lock"]  # what other modules take from here instead of threading and concurrent.futures

_local = threading.local()  # .pool: the pool whose thread this is
_NEVER = threading.Event()
_abandoned: list[threading.Thread] = []
_abandoned_lock = threading.Lock()


class Stopped(Exception):
    """Raised in a call that was told to stop (its pool closed or its deadline passed) while it waited."""


def stopping() -> threading.Event:
    """The event set when the pool running this call is closing (outside a pool: one that is never set)."""
    pool = getattr(_local, "pool", None)
    return pool.stop if pool is not None else _NEVER


def pause(seconds: float) -> None:
    """Wait ``seconds``; Stopped at once when the pool running this call is closing."""
    if stopping().wait(seconds):
        raise Stopped("stopped: the command no longer waits for this call")


class _Task(Generic[R]):
    def __init__(self, call: Callable[..., R], args: tuple[object, ...]) -> None:
        self.call, self.args, self.future = call, args, Future[R]()

    def run(self) -> None:
        if not self.future.set_running_or_notify_cancel():
            return
        try:
            self.future.set_result(self.call(*self.args))
        except BaseException as error:  # the future carries whatever ended the call
            self.future.set_exception(error)


class Pool:
    """At most ``size`` calls at once; a context manager that leaves no thread running when it is closed.

    Leaving the block normally waits for every call (each bounded by its own timeouts); leaving it by an
    exception tells the calls to stop and waits ``grace`` seconds for them; a KeyboardInterrupt waits for
    none (the threads are daemons)."""

    def __init__(self, size: int = MAX_THREADS, grace: float | None = GRACE) -> None:
        self.size, self.grace = max(1, size), grace
        self.stop = threading.Event()
        self._queue: deque[_Task[object]] = deque()
        self._threads: list[threading.Thread] = []
        self._futures: list[Future[object]] = []
        self._active = 0
        self._lock = threading.Lock()
        self._children: list[Pool] = []  # pools started by this one's calls: told to stop with it
        parent: Pool | None = getattr(_local, "pool", None)
        if parent is not None:
            with parent._lock:
                parent._children.append(self)
                if parent.stop.is_set():
                    self.stop.set()

    def submit(self, call: Callable[..., R], *args: object) -> Future[R]:
        task: _Task[R] = _Task(call, args)
        with self._lock:
            if self.stop.is_set():
                raise RuntimeError("submit on a closed pool")
            self._queue.append(task)  # type: ignore[arg-type]  # the queue holds tasks of any result type
            self._futures.append(task.future)  # type: ignore[arg-type]
            if self._active < self.size:
                self._active += 1
                thread = threading.Thread(target=self._work, name=f"swarmkit-fanout-{len(self._threads)}", daemon=True)
                self._threads.append(thread)
                thread.start()
        return task.future

    def _work(self) -> None:
        _local.pool = self
        while True:
            with self._lock:
                if not self._queue or self.stop.is_set():
                    self._active -= 1
                    return
                task = self._queue.popleft()
            task.run()

    def close(self, grace: float | None = None) -> None:
        """Cancel what has not started, tell the running calls to stop, join the threads for up to ``grace``
        seconds (None: until they end); the threads still running then are listed by ``abandoned()``."""
        with self._lock:
            self.stop.set()
            while self._queue:
                self._queue.popleft().future.cancel()
            for child in self._children:
                child.stop.set()
        deadline = None if grace is None else time.monotonic() + grace
        for thread in self._threads:
            if thread.ident is not None:  # an interrupt (Ctrl-C) can land inside Thread.start, before it ran
                thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
        with _abandoned_lock:  # the list keeps only the living: a long `verify --every` does not grow it
            _abandoned[:] = [thread for thread in [*_abandoned, *self._threads] if thread.is_alive()]

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: object) -> None:
        if kind is None:
            wait(self._futures)
            self.close()
        elif issubclass(kind, Exception):
            self.close(self.grace)
        else:  # an interrupt: nothing is waited for
            self.close(0.0)


def serve(loop: Callable[[], None], name: str) -> None:
    """A server's loop in a daemon thread of its own (not a call: it runs until its owner shuts it down)."""
    threading.Thread(target=loop, name=name, daemon=True).start()


def abandoned() -> list[threading.Thread]:
    """Calls' threads still running after their pool gave up on them."""
    with _abandoned_lock:
        _abandoned[:] = [thread for thread in _abandoned if thread.is_alive()]
        return list(_abandoned)


def drain(timeout: float) -> list[str]:
    """Join the abandoned threads for up to ``timeout`` seconds; the names of those still running."""
    deadline = time.monotonic() + timeout
    for thread in abandoned():
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread.name for thread in abandoned()]


def outcome(future: Future[R], deadline: float) -> R | Exception:
    """The future's value by ``deadline`` (monotonic), the exception it raised, or a TimeoutError."""
    try:
        return future.result(timeout=max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        return TimeoutError("no answer before the deadline")
    except Exception as error:  # each call's failure is reported, not raised
        return error


def fan_out(call: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``call`` on every item at once; once all have ended, the first exception (in input order) is raised."""
    with Pool() as pool:
        futures = [pool.submit(call, item) for item in items]
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
    """``call`` runs while the block does; leaving the block waits for it, also when the block failed (then its
    waits are cut short); not when interrupted."""
    with Pool(1, grace=None) as pool:
        yield pool.submit(call)


@contextmanager
def bounded(grace: float = GRACE) -> Iterator[Pool]:
    """A pool for calls read with ``outcome(future, deadline)``: when the block ends, the calls still running are
    told to stop and waited for ``grace`` seconds more (not until they end, as a plain Pool does)."""
    pool = Pool()
    try:
        yield pool
    finally:
        pool.close(grace)


def settle_by(calls: Sequence[Callable[[], R]], deadline: float, grace: float = GRACE) -> list[Outcome[R]]:
    """Run calls at once until ``deadline`` (monotonic); each result is its value, the exception it raised, or a
    TimeoutError.  Calls still running at the deadline are told to stop and waited for ``grace`` seconds more."""
    with bounded(grace) as pool:
        futures = [pool.submit(call) for call in calls]
        outcomes: list[Outcome[R]] = []
        for future in futures:
            answer = outcome(future, deadline)  # read apart: given the list's type, mypy would ask it of the future
            outcomes.append(answer)
        return outcomes


def first_success(calls: Sequence[Callable[[], R]], deadline: float, hedge: float = 0.0) -> R:
    """The calls at once, or with ``hedge`` seconds each: call i starts once call i-1 has failed or has run that long,
    so a quick first answer costs no other call.  The first value any of them returns by ``deadline`` (monotonic).
    When none does, the exception of the first call (in input order) that failed, else a TimeoutError.  One that
    hangs does not hold the others' answers: calls still running then are told to stop and left to their own bound
    (``abandoned()``)."""
    pool = Pool(max(1, len(calls)))
    try:
        futures: list[Future[R]] = []
        for index, call in enumerate(calls):
            futures.append(pool.submit(call))
            last = index == len(calls) - 1
            if answered := _answer_by(futures, deadline if last else min(deadline, time.monotonic() + hedge)):
                return answered.result()
        error = next((f.exception() for f in futures if f.done() and f.exception() is not None), None)
        raise error or TimeoutError("no answer before the deadline")
    finally:
        pool.close(0.0)  # an answer is not held back by calls still waiting, each bounded by its own timeout


def _answer_by(futures: list[Future[R]], until: float) -> Future[R] | None:
    """The first of ``futures`` to succeed by ``until``; None once every one has failed or ``until`` has passed."""
    running = {f for f in futures if not f.done()}
    while not (answered := _answered(futures)):
        if not running or (left := until - time.monotonic()) <= 0:
            return None
        _, running = wait(running, timeout=left, return_when=FIRST_COMPLETED)
    return answered


def first_answer(ask: Callable[[float], R], timeout: float, every: float) -> R:
    """``ask(seconds_left)`` now, and again every ``every`` seconds while the earlier attempts keep
    waiting; the first to return wins. When none does, the first attempt's exception (it waited
    longest, so it saw most) is raised once the others have had ``GRACE`` to end; attempts still running
    after an answer are left to their own bound (``seconds_left``) and listed by ``abandoned()``."""
    most = int(timeout // every) + 1
    pool = Pool(most)
    try:
        answer = _first_answer(pool, ask, timeout, every, most)
    except Exception:
        pool.close(GRACE)  # every attempt is bounded by the deadline that has just passed: they end within the grace
        raise
    finally:
        pool.close(0.0)  # an answer (or a Ctrl-C) is not held back by attempts still waiting, each bounded by its time
    return answer


def _first_answer(pool: Pool, ask: Callable[[float], R], timeout: float, every: float, most: int) -> R:
    deadline = time.monotonic() + timeout
    attempts: list[Future[R]] = [pool.submit(ask, timeout)]  # always one, however late this thread runs
    while (left := deadline - time.monotonic()) > -every:  # each attempt is bounded by the deadline itself
        running = [a for a in attempts if not a.done()]
        if not running and left <= 0:
            break
        if running:
            wait(running, timeout=min(every, left) if left > 0 else every, return_when=FIRST_COMPLETED)
        elif not _answered(attempts):  # an answer that came before this thread looked is not waited out
            pool.stop.wait(min(every, left))  # every attempt failed at once: the next one waits its turn
        if answered := _answered(attempts):
            return answered.result()
        if (left := deadline - time.monotonic()) > 0 and len(attempts) < most:
            attempts.append(pool.submit(ask, left))
    first = attempts[0]
    wait([first], timeout=every)  # this thread may have run late: the first attempt gets its due
    if answered := _answered(attempts):
        return answered.result()
    raise (first.exception() if first.done() else None) or TimeoutError(f"no answer within {timeout:g}s")


def _answered(attempts: list[Future[R]]) -> Future[R] | None:
    return next((a for a in attempts if a.done() and a.exception() is None), None)
