"""Sandboxes for tests: created fresh (after removing leftovers of a crashed run), always removed."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from python_on_whales.exceptions import DockerException

from swarmkit.images import image
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import processes as sandbox_processes
from swarmkit.sandbox import sshd
from swarmkit.sandbox import state as sandbox_state
from swarmkit.sandbox.state import Sandbox, SandboxHost


@contextlib.contextmanager
def fresh_sandbox(
    name: str,
    nodes: int,
    subnet: str,
    prefix: str,
    directory: Path,
    engine: str = "tansu",
    managers: int = 1,
    endpoint: str = "unix",
    data_limit: str = "",
    kafka_version: str = image.KAFKA_VERSION,
) -> Iterator[Sandbox]:
    sandbox.down(name)
    try:
        inventory = str(directory / f"{name}-inventory.yaml")
        yield sandbox.up(
            nodes,
            name,
            prefix,
            subnet,
            inventory,
            engine,
            managers,
            endpoint=endpoint,
            data_limit=data_limit,
            kafka_version=kafka_version,
        )
    finally:
        sandbox.down(name)


MODULE_SANDBOX = pytest.StashKey[Sandbox]()


def module_sandbox(
    name: str,
    nodes: int,
    subnet: str,
    engine: str = "tansu",
    managers: int = 1,
    endpoint: str = "unix",
    data_limit: str = "",
    kafka_version: str = image.KAFKA_VERSION,
):
    """A module-scoped fixture: a fresh sandbox whose hosts are NAME1..NAMEn, removed after the module.

    tansu with one manager unless a module needs replication (apache, three managers).  The module's
    node keeps it, so a failing test's report can show the swarm's state (conftest.py)."""

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Sandbox]:
        directory = tmp_path_factory.mktemp(name)
        with fresh_sandbox(
            name, nodes, subnet, name, directory, engine, managers, endpoint, data_limit, kafka_version
        ) as created:
            request.node.stash[MODULE_SANDBOX] = created
            yield created

    return fixture


def leftovers(name: str) -> list[str]:
    """Everything a sandbox could leave behind, found by its naming convention."""
    found = []
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    found += [line.split()[0] for line in namespaces.splitlines() if line.startswith(f"swk-{name}-")]
    bridge = sandbox_state.bridge_name(name)  # matched whole: sandbox 'ir' must not see sandbox 'irx' as its own
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in links.splitlines()]
    found += [link for link in names if link == bridge or link.startswith(f"skv-{name}-")]
    rules = subprocess.run(["iptables", "-S", "FORWARD"], capture_output=True, text=True).stdout
    found += [rule for rule in rules.splitlines() if bridge in rule.split()]
    directory = sandbox_state.STATE_ROOT / name
    if directory.exists():
        found.append(str(directory))
    processes = sandbox_processes.processes_under(directory)
    found += [f"pid {pid}" for pid in processes]
    if f"# BEGIN swarmkit sandbox {name}" in Path("/etc/hosts").read_text().splitlines():
        found.append("/etc/hosts entries")
    accounts = Path("/etc/passwd").read_text().splitlines() + Path("/etc/group").read_text().splitlines()
    found += [line for line in accounts if line.startswith((f"{sshd.user_name(name)}:", f"skd-{name}-"))]
    return found


def in_host(host: SandboxHost, *command: str, timeout: float = 10) -> subprocess.CompletedProcess:
    """Run a command inside one sandbox host's network namespace (its own view of the network)."""
    return subprocess.run(
        ["nsenter", f"--net=/var/run/netns/{host.netns}", *command], capture_output=True, text=True, timeout=timeout
    )


LOG_LINES = 15


def _task_lines(manager: SandboxHost) -> Iterator[str]:
    docker = manager.docker.client
    for service in docker.service.list():
        for task in docker.service.ps(service):
            status = task.status
            error = f" error={status.err}" if status.err else ""
            yield f"{service.spec.name} {task.name or task.id[:12]} node={task.node_id} desired={task.desired_state} state={status.state}{error}"


def _stopped_container_logs(host: SandboxHost) -> Iterator[str]:
    docker = host.docker.client
    for container in docker.container.list(all=True, filters=[("status", "exited")]):
        yield f"--- {host.name} {container.name} exited {container.state.exit_code}"
        yield from docker.container.logs(container, tail=LOG_LINES).splitlines()


def _running_kafka_complaints(host: SandboxHost) -> Iterator[str]:
    """A running broker's or controller's last warnings: what it was waiting on when the test gave up."""
    docker = host.docker.client
    for container in docker.container.list(filters=[("label", "com.docker.swarm.task")]):
        if not any(role in container.name for role in ("_broker.", "_controller")):
            continue
        yield f"--- {host.name} {container.name} running, its last distinct warnings"
        yield from _last_distinct_warnings(docker.container.logs(container, tail=2000).splitlines())


def _last_distinct_warnings(lines: list[str], count: int = 3) -> list[str]:
    """The last ``count`` WARN/ERROR lines that say different things (a reconnect repeats one line every
    100 ms), the brokers' config deprecation notices left out: CI shows only part of a failure's report."""
    latest: dict[str, str] = {}
    for line in lines:
        if (" WARN " in line or " ERROR " in line) and "(kafka.server.KafkaConfig)" not in line:
            said = line.partition("] ")[2]
            latest.pop(said, None)
            latest[said] = line
    return list(latest.values())[-count:]


def _read(lines: Iterator[str]) -> list[str]:
    try:
        return list(lines)
    except DockerException as error:
        said = (error.stderr or str(error)).strip().splitlines()
        return [f"(not readable: {said[-1] if said else error.return_code})"]


def swarm_state(created: Sandbox) -> str:
    """Every task's state, the last log lines of every exited container and the last warnings of every running
    Kafka container on every host."""
    lines = _read(_task_lines(created.hosts[0]))
    for host in created.hosts:
        lines += _read(_stopped_container_logs(host)) + _read(_running_kafka_complaints(host))
    return "\n".join(lines)
