"""The one fan-out helper: order kept, expected errors settled per item, a deadline that abandons slow calls."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

import pytest

from swarmkit import fanout, waits
from swarmkit.errors import SwarmkitError
from swarmkit.fanout import fan_out, fan_out_settled, first_answer, first_success, settle_by


def test_results_come_back_in_input_order_and_calls_overlap() -> None:
    barrier = threading.Barrier(3, timeout=5)

    def call(item: int) -> int:
        barrier.wait()  # only returns when all three run at once
        return item * 10

    assert fan_out(call, [3, 1, 2]) == [30, 10, 20]
    assert fan_out(call, []) == []


def test_an_unexpected_error_is_raised() -> None:
    with pytest.raises(ZeroDivisionError):
        fan_out(lambda item: 1 // item, [1, 0])


def test_expected_errors_become_results() -> None:
    def call(item: int) -> int:
        if item < 0:
            raise SwarmkitError(f"negative {item}")
        return item

    outcomes = fan_out_settled(call, [1, -2, 3], SwarmkitError)
    assert outcomes[0] == 1 and outcomes[2] == 3
    assert isinstance(outcomes[1], SwarmkitError) and outcomes[1].message == "negative -2"


def test_settle_by_gives_up_on_calls_past_the_deadline() -> None:
    release = threading.Event()
    outcomes = settle_by([lambda: "fast", lambda: release.wait(5), lambda: 1 // 0], time.monotonic() + 0.2)
    release.set()
    assert outcomes[0] == "fast"
    assert isinstance(outcomes[1], TimeoutError)
    assert isinstance(outcomes[2], ZeroDivisionError)


def test_first_success_does_not_wait_for_a_call_that_hangs() -> None:
    release = threading.Event()
    started = time.monotonic()
    assert first_success([lambda: release.wait(5), lambda: 1 // 0, lambda: "second"], started + 3) == "second"
    release.set()
    assert time.monotonic() - started < 1


def test_a_hedged_call_starts_only_when_the_one_before_is_slow_or_failed() -> None:
    started: list[str] = []

    def call(name: str, answer: Callable[[], str]) -> Callable[[], str]:
        return lambda: started.append(name) or answer()

    release = threading.Event()
    assert (
        first_success([call("quick", lambda: "quick"), call("spare", lambda: "spare")], time.monotonic() + 3, hedge=2) == "quick"
    )
    assert started == ["quick"]  # a quick first answer costs no other call
    began = time.monotonic()
    hanging = call("cut off", lambda: str(release.wait(5)))
    assert first_success([hanging, call("next", lambda: "next")], began + 3, hedge=0.3) == "next"
    assert 0.3 <= time.monotonic() - began < 1
    assert (
        first_success([call("refused", lambda: str(1 // 0)), call("then", lambda: "then")], time.monotonic() + 3, hedge=2)
        == "then"
    )
    assert started[-2:] == ["refused", "then"]  # a failure brings the next call in at once
    release.set()


def test_first_success_raises_the_first_failure_else_a_timeout() -> None:
    def refused() -> str:
        raise SwarmkitError("refused")

    with pytest.raises(SwarmkitError, match="refused"):
        first_success([refused, lambda: str(1 // 0)], time.monotonic() + 1)
    release = threading.Event()
    with pytest.raises(TimeoutError):
        first_success([lambda: release.wait(5)], time.monotonic() + 0.1)
    release.set()


def test_a_lost_first_attempt_is_overtaken_by_a_later_one() -> None:
    calls: list[float] = []
    lost = threading.Event()

    def ask(seconds: float) -> str:
        calls.append(seconds)
        if len(calls) == 1:
            lost.wait(seconds)  # its request was lost: it waits out its whole bound
            raise ValueError("first: nothing came")
        return f"answer {len(calls)}"

    started = time.monotonic()
    assert first_answer(ask, timeout=5.0, every=0.05) == "answer 2"
    assert time.monotonic() - started < 1.0 and calls[0] > calls[1]
    lost.set()


def test_when_nobody_answers_the_first_attempts_complaint_is_raised() -> None:
    count = itertools.count(1)

    def ask(seconds: float) -> str:
        number = next(count)
        time.sleep(min(seconds, 0.2))
        raise ValueError(f"attempt {number}")

    with pytest.raises(ValueError, match="attempt 1$"):
        first_answer(ask, timeout=0.3, every=0.1)


def test_an_attempt_is_made_even_when_the_caller_runs_after_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loaded machine can stall a thread past a short timeout (seen in CI: IndexError on no attempts)."""
    real = time.monotonic
    calls = itertools.count()
    monkeypatch.setattr(time, "monotonic", lambda: real() + (0 if next(calls) == 0 else 100))
    assert first_answer(lambda seconds: "answer", timeout=2.0, every=2.0) == "answer"


def test_an_answer_that_came_before_the_first_look_is_returned_without_waiting(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen in `verify`: a broker answering in 10 ms while this thread started late cost a whole retry interval."""

    def answered_at_once(pool: fanout.Pool, call: Callable[..., str], *args: object) -> Future[str]:
        future: Future[str] = Future()
        future.set_result(call(*args))
        return future

    monkeypatch.setattr(fanout.Pool, "submit", answered_at_once)
    started = time.monotonic()
    assert first_answer(lambda seconds: "answer", timeout=10.0, every=2.0) == "answer"
    assert time.monotonic() - started < 1.0


def fanout_threads() -> set[threading.Thread]:
    """The pools' threads only: in the suite's one process other libraries' threads come and go (kafka-python's IO)."""
    return {thread for thread in threading.enumerate() if thread.name.startswith("swarmkit-fanout")}


def test_a_timed_out_fan_out_leaves_no_running_thread() -> None:
    """The calls past the deadline wait on the pool's stop event (as every wait of swarmkit.waits does):
    closing the pool releases them, and settle_by returns with none of its threads left."""
    ended: list[str] = []

    def slow() -> str:
        try:
            fanout.pause(30)
        finally:
            ended.append("slow")
        return "never"

    before = fanout_threads()
    started = time.monotonic()
    outcomes = settle_by([lambda: "fast", slow, slow], time.monotonic() + 0.2)
    assert outcomes[0] == "fast" and all(isinstance(o, TimeoutError) for o in outcomes[1:])
    assert time.monotonic() - started < 5 and ended == ["slow", "slow"]
    assert fanout_threads() <= before and fanout.abandoned() == []


def test_a_timed_out_first_answer_leaves_no_running_thread() -> None:
    """Each attempt is given the time left and waits through swarmkit.waits: none outlives the call."""

    def ask(seconds: float) -> str:
        waits.until(waits.NotYet, seconds, first=0.05)
        raise TimeoutError(f"no answer in {seconds:.2f}s")

    before = fanout_threads()
    with pytest.raises(TimeoutError):
        first_answer(ask, timeout=0.3, every=0.1)
    assert fanout_threads() <= before and fanout.abandoned() == []


def test_a_call_that_cannot_be_told_is_listed_until_it_ends_by_its_own_timeout() -> None:
    release = threading.Event()
    outcomes = settle_by([lambda: release.wait(30)], time.monotonic() + 0.1, grace=0.1)
    assert isinstance(outcomes[0], TimeoutError) and len(fanout.abandoned()) == 1
    release.set()
    assert fanout.drain(5) == [] and fanout.abandoned() == []


def test_no_more_calls_run_at_once_than_the_pool_allows() -> None:
    running, most, lock = [0], [0], threading.Lock()

    def call(item: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        return item

    assert fan_out(call, range(3 * fanout.MAX_THREADS)) == list(range(3 * fanout.MAX_THREADS))
    assert most[0] <= fanout.MAX_THREADS


def test_a_closed_pool_stops_the_pools_its_calls_started() -> None:
    inner_stopped = threading.Event()

    def outer() -> None:
        def inner() -> None:
            try:
                fanout.pause(30)
            except fanout.Stopped:
                inner_stopped.set()

        fan_out(lambda _: inner(), [1])

    settle_by([outer], time.monotonic() + 0.1, grace=5)
    assert inner_stopped.is_set()


def test_ctrl_c_inside_a_threads_start_leaves_the_pool_closable(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interrupt is what the command sees, not "cannot join thread before it is started" from the close."""

    def interrupted(self: threading.Thread) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(threading.Thread, "start", interrupted)
    with pytest.raises(KeyboardInterrupt), fanout.bounded() as pool:
        pool.submit(lambda: None)


def test_an_exception_in_the_block_cancels_the_calls_not_started() -> None:
    started: list[int] = []
    running = threading.Event()

    def first_call() -> None:
        running.set()
        fanout.pause(30)

    with pytest.raises(ValueError), fanout.Pool(size=1) as pool:
        first = pool.submit(first_call)
        later = pool.submit(started.append, 2)
        assert running.wait(5)
        raise ValueError("the command failed")
    assert isinstance(first.exception(), fanout.Stopped) and later.cancelled() and started == []


INTERRUPTED_FAN_OUT = """
import time
from swarmkit.fanout import fan_out
print("started", flush=True)
try:
    fan_out(time.sleep, [30, 30])
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_an_interrupt_ends_the_program_without_waiting_for_running_calls() -> None:
    """Ctrl-C while calls run: the caller gets KeyboardInterrupt at once and the program exits without
    joining the calls' threads (a probe may take its whole timeout)."""
    program = subprocess.Popen([sys.executable, "-c", INTERRUPTED_FAN_OUT], stdout=subprocess.PIPE, text=True)
    try:
        assert program.stdout is not None and program.stdout.readline() == "started\n"
        time.sleep(0.5)
        signalled = time.monotonic()
        program.send_signal(signal.SIGINT)
        assert program.stdout.read() == "interrupted\n"
        assert program.wait(timeout=60) == 0
        assert time.monotonic() - signalled < 10
    finally:
        program.kill()
        program.wait()
