"""Markers: unit tests run anywhere; integration and e2e tests need root and real engines."""

from __future__ import annotations

import os
import signal

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background (nohup, or `&` in a shell without job control) inherits SIGINT ignored,
    and so would every command a test interrupts the way a terminal's Ctrl-C does: they get the terminal's default."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root: the sandbox creates namespaces, bridges and engines")
    for item in items:
        if "integration" in item.keywords or "e2e" in item.keywords:
            item.add_marker(skip)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:  # noqa: ANN001 (pytest's own type)
    """Seconds per module (setup, calls and teardown): the suite's budget is spent by modules, a sandbox each."""
    seconds: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if isinstance(report, pytest.TestReport):
                module = report.nodeid.split("::")[0]
                seconds[module] = seconds.get(module, 0.0) + report.duration
    slowest = sorted(seconds.items(), key=lambda item: -item[1])[:15]
    if slowest and slowest[0][1] >= 5:
        terminalreporter.write_sep("=", "seconds per module")
        for module, spent in slowest:
            terminalreporter.write_line(f"{spent:8.1f}s {module}")
