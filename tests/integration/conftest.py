"""Fixtures shared by the integration tests (real tansu brokers running as local processes), and a
failing test's report showing what its sandbox's swarm was doing: CI keeps only the output."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from python_on_whales.exceptions import DockerException

from swarmkit.sandbox import hosts as sandbox
from tests.integration.sandboxes import MODULE_SANDBOX
from tests.integration.tansu_local import local_brokers, misadvertised_brokers

__all__ = ["local_brokers", "misadvertised_brokers"]

LOG_LINES = 15


def _task_lines(manager: sandbox.SandboxHost) -> Iterator[str]:
    docker = manager.docker.client
    for service in docker.service.list():
        for task in docker.service.ps(service):
            status = task.status
            error = f" error={status.err}" if status.err else ""
            yield f"{service.spec.name} {task.name or task.id[:12]} node={task.node_id} desired={task.desired_state} state={status.state}{error}"


def _stopped_container_logs(host: sandbox.SandboxHost) -> Iterator[str]:
    docker = host.docker.client
    for container in docker.container.list(all=True, filters=[("status", "exited")]):
        yield f"--- {host.name} {container.name} exited {container.state.exit_code}"
        yield from docker.container.logs(container, tail=LOG_LINES).splitlines()


def _read(lines: Iterator[str]) -> list[str]:
    try:
        return list(lines)
    except DockerException as error:
        said = (error.stderr or str(error)).strip().splitlines()
        return [f"(not readable: {said[-1] if said else error.return_code})"]


def swarm_state(created: sandbox.Sandbox) -> str:
    """Every task's state, and the last log lines of every exited container on every host."""
    lines = _read(_task_lines(created.hosts[0]))
    for host in created.hosts:
        lines += _read(_stopped_container_logs(host))
    return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    module = item.getparent(pytest.Module)
    if report.failed and module is not None and MODULE_SANDBOX in module.stash:
        report.sections.append(("swarm state", swarm_state(module.stash[MODULE_SANDBOX])))
