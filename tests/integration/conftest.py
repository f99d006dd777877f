"""Fixtures shared by the integration tests (real tansu brokers running as local processes, the installed wheel), and a
failing test's report showing what its sandbox's swarm was doing: CI keeps only the output."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.sandboxes import MODULE_SANDBOX, swarm_state
from tests.integration.tansu_local import local_brokers, misadvertised_brokers
from tests.integration.wheel import installed, installed_without_spark, wheel

__all__ = ["installed", "installed_without_spark", "local_brokers", "misadvertised_brokers", "wheel"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    module = item.getparent(pytest.Module)
    if report.failed and module is not None and MODULE_SANDBOX in module.stash:
        report.sections.append(("swarm state", swarm_state(module.stash[MODULE_SANDBOX])))
