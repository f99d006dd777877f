"""Ctrl-C half-way through a command, on a real 2-host tansu sandbox: exit 130, and the same command run
again repairs what was left.

In order, on one sandbox the first test builds itself (through an interrupted `sandbox up`): `sandbox up`
interrupted while its engines start, or while it builds the images, leaves nothing behind and runs
again; `deploy` interrupted while the brokers start is finished by the next `deploy`; a purge of a
stack that does not exist leaves the running stack's broker ids alone; `down` interrupted as it removes
the brokers is finished by the next `down`.  The interrupt is a terminal's Ctrl-C: SIGINT to the
command's whole process group (the Docker CLI it runs gets it too).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.kafka.admin import broker_metadata
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import state as sandbox_state
from swarmkit.sandbox import status as sandbox_status
from swarmkit.swarm.bootstrap import swarm_up
from swarmkit.swarm.identity import ID_LABEL, NEXT_LABEL
from tests.integration.sandboxes import MODULE_SANDBOX, leftovers

pytestmark = pytest.mark.integration

NAME = "ir"
SUBNET = "10.252.0.0/24"
ROOT = Path(__file__).resolve().parents[3]
SWARMKIT = [sys.executable, "-c", "from swarmkit.cli import main; main()"]  # the installed script's entry
SANDBOX_OPTIONS = ["--name", NAME, "--nodes", "2", "--managers", "1", "--engine", "tansu", "--subnet", SUBNET]
SANDBOX_OPTIONS += ["--prefix", NAME]
EXTERNAL_PORT = 9094


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's swarmkit, whatever is installed


def swarmkit(*args: str, timeout: float = 600) -> Run:
    started = time.monotonic()
    done = subprocess.run([*SWARMKIT, *args], capture_output=True, text=True, timeout=timeout, env=_environment())
    print(f"$ swarmkit {' '.join(args)}: exit {done.returncode} after {time.monotonic() - started:.1f} s\n{done.stderr}")
    return Run(done.returncode, done.stdout, done.stderr)


def interrupted(*args: str, when: str, timeout: float = 600) -> Run:
    """Run a command and press Ctrl-C once a line of its stderr contains ``when``; it must end within 60 s."""
    command = subprocess.Popen(
        [*SWARMKIT, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_environment(),
        start_new_session=True,  # its own process group, as a terminal's foreground job
    )
    lines: list[str] = []
    seen = threading.Event()

    def read() -> None:
        assert command.stderr is not None
        for line in command.stderr:
            lines.append(line)
            if when in line:
                seen.set()
        seen.set()  # the command ended first: fail now, not after the timeout

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert seen.wait(timeout) and any(when in line for line in lines), f"never printed {when!r}:\n{''.join(lines)}"
        os.killpg(command.pid, signal.SIGINT)
        signalled = time.monotonic()
        command.wait(timeout=60)
        reader.join(10)
        stdout = command.stdout.read() if command.stdout else ""  # a few lines at most: the pipe never filled
        print(
            f"$ swarmkit {' '.join(args)}: Ctrl-C at {when!r}, exit {command.returncode} after"
            f" {time.monotonic() - signalled:.1f} s\n{''.join(lines)}"
        )
        return Run(command.returncode, stdout, "".join(lines))
    finally:
        if command.poll() is None:
            os.killpg(command.pid, signal.SIGKILL)
            command.wait()


@pytest.fixture(scope="module", autouse=True)
def removed_afterwards() -> Iterator[None]:
    """Whatever happens, nothing of the sandbox is left: before the module (a crashed run) and after it."""
    sandbox.down(NAME)
    yield
    sandbox.down(NAME)
    assert leftovers(NAME) == []


@pytest.fixture(scope="module")
def inventory_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp(NAME) / "inventory.yaml"


@pytest.mark.parametrize("when", [f"{NAME}2: engine starting", "building and publishing"])
def test_sandbox_up_interrupted_leaves_nothing_and_runs_again(inventory_path: Path, when: str) -> None:
    """While its engines start, and while it builds the images: the last run's sandbox serves the tests below."""
    sandbox.down(NAME)
    args = ["sandbox", "up", *SANDBOX_OPTIONS, "-i", str(inventory_path)]
    first = interrupted(*args, when=when)
    assert first.code == 130, first.stderr
    assert "interrupted" in first.stderr
    assert leftovers(NAME) == []
    again = swarmkit(*args, "--json")
    assert again.code == 0, again.stderr
    status = json.loads(again.stdout)
    assert [(h["name"], h["engine_alive"]) for h in status["hosts"]] == [(f"{NAME}1", True), (f"{NAME}2", True)]


@pytest.fixture(scope="module")
def swarm(inventory_path: Path, request: pytest.FixtureRequest) -> Inventory:
    """The sandbox (the first test's, or a new one when run alone) in one swarm."""
    if not sandbox_status.read(NAME).exists:
        sandbox.up(2, NAME, NAME, SUBNET, str(inventory_path), "tansu", 1)
    request.node.stash[MODULE_SANDBOX] = sandbox_state.load(NAME)  # a failing test's report shows the swarm
    inventory = load_inventory(str(inventory_path))
    swarm_up(inventory, docker=DockerHosts.from_inventory(inventory))
    return inventory


def broker_ids(inventory: Inventory) -> dict[str, dict[str, str]]:
    """Each swarm node's broker-id labels, by hostname."""
    manager = DockerHosts.from_inventory(inventory)[inventory.first_manager]
    return {
        node.hostname: {k: v for k, v in node.labels.items() if k in (ID_LABEL, NEXT_LABEL)}
        for node in dockerapi.swarm_nodes(manager)
    }


def test_deploy_interrupted_while_brokers_start_is_finished_by_the_next_deploy(swarm: Inventory) -> None:
    starting = f"{NAME}1: "  # the first phase reported for ir1's broker: the stack is deployed, brokers start
    first = interrupted("deploy", "-i", swarm.path, "--topics", "orders:2:1", when=starting)
    assert first.code == 130, first.stderr
    assert "interrupted" in first.stderr
    again = swarmkit("deploy", "-i", swarm.path, "--topics", "orders:2:1", "--json")
    assert again.code == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["ok"] is True
    assert sorted(n["broker_id"] for n in result["nodes"]) == [1, 2]
    for host in swarm.hosts:
        metadata = broker_metadata(f"{host.address}:{EXTERNAL_PORT}", timeout=10)
        assert [b.host for b in metadata.brokers] == [host.name]
        assert [t.name for t in metadata.topics] == ["orders"]


def test_purging_a_stack_that_is_not_there_leaves_the_running_stacks_broker_ids(swarm: Inventory) -> None:
    before = broker_ids(swarm)
    assert all(ID_LABEL in labels for labels in before.values()), before
    refused = swarmkit("down", "-i", swarm.path, "--purge-data", "--yes", "--stack", "nope", "--json")
    assert refused.code == 2, refused.stderr
    assert json.loads(refused.stdout)["ok"] is False
    assert "nope" in refused.stderr
    assert broker_ids(swarm) == before
    manager = DockerHosts.from_inventory(swarm)[swarm.first_manager]
    assert dockerapi.stack_services(manager, "kafka") == ["kafka_broker"]


def test_down_interrupted_is_finished_by_the_next_down(swarm: Inventory) -> None:
    """Interrupted as it removes the brokers, `down` has not yet removed the rest (the overlay network);
    the next `down` removes what is left, also when the brokers' service is already gone."""
    manager = DockerHosts.from_inventory(swarm)[swarm.first_manager]
    first = interrupted("down", "-i", swarm.path, when="removing kafka_broker")
    assert first.code == 130, first.stderr
    assert "network kafka_internal" in dockerapi.stack_leftovers(manager, "kafka")
    if dockerapi.stack_services(manager, "kafka"):  # the interrupt came first: as if it had come a moment later
        dockerapi.remove_service(manager, "kafka_broker")
    again = swarmkit("down", "-i", swarm.path)
    assert again.code == 0, again.stderr
    assert "network kafka_internal" in again.stdout
    assert dockerapi.stack_services(manager, "kafka") == []
    assert dockerapi.stack_leftovers(manager, "kafka") == []
    docker = DockerHosts.from_inventory(swarm)
    assert [dockerapi.labelled_containers(docker[h], "com.docker.stack.namespace=kafka") for h in swarm.hosts] == [0, 0]
    nothing = swarmkit("down", "-i", swarm.path)
    assert nothing.code == 1 and "nothing to remove" in nothing.stderr
