"""A request an engine failed is one line (the engine's own last line) and a hint, whichever request it was."""

from __future__ import annotations

import pytest
import requests
from python_on_whales.exceptions import DockerException

from swarmkit.errors import EngineError, SshError
from swarmkit.hosts.dockerapi import Engine, calls, engine_info
from swarmkit.hosts.ssh import SshMux

ENGINE = Engine.connect("unix:///nonexistent.sock")


def failure(stderr: str) -> DockerException:
    return DockerException(["docker", "service", "inspect"], 1, b"", stderr.encode())


def test_an_engine_that_does_not_answer_gets_the_hint_to_reach_it() -> None:
    said = "Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?"
    error = calls.failed(ENGINE, "inspecting service kafka_broker", failure(f"warning\n{said}"))
    assert error.message == f"inspecting service kafka_broker on unix:///nonexistent.sock failed: {said}"
    assert error.hint == "check that dockerd runs there and that this machine may reach it"  # no cause given


def test_a_socket_this_user_may_not_open_gets_the_permission_fix() -> None:
    said = "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"
    error = calls.failed(ENGINE, "listing nodes", failure(said))
    assert error.message.endswith(said) and "add it to the docker group" in error.hint


def test_a_refused_request_gets_the_hint_to_ask_by_hand() -> None:
    error = calls.failed(ENGINE, "removing service kafka_broker", failure("Error: No such service: kafka_broker"))
    assert error.message.endswith("failed: Error: No such service: kafka_broker")
    assert "docker -H unix:///nonexistent.sock" in error.hint


def test_an_engine_api_that_cannot_be_reached_says_where_and_why() -> None:
    with pytest.raises(EngineError) as raised:
        engine_info(ENGINE)
    assert raised.value.message == (
        "the Docker engine at unix:///nonexistent.sock does not answer: Cannot connect to the Docker daemon at"
        " unix:///nonexistent.sock. Is the docker daemon running? ([Errno 2] No such file or directory)"
    )
    assert raised.value.hint == "no Docker socket at that path: start dockerd there, or fix the endpoint's path"


@pytest.mark.parametrize(
    ("endpoint", "cause", "fix"),
    [
        ("tcp://nosuchhost.invalid:2376", "Failed to resolve 'nosuchhost.invalid'", "host name does not resolve"),
        ("tcp://127.0.0.1:1", "Connection refused", "nothing listens there"),
    ],
)
def test_an_unreached_engine_keeps_its_cause_and_gets_its_fix(endpoint: str, cause: str, fix: str) -> None:
    """Nothing on this machine resolves .invalid, nothing listens on port 1: the real cause, never a generic one."""
    with pytest.raises(EngineError) as raised:
        engine_info(Engine.connect(endpoint))
    assert cause in raised.value.message and fix in raised.value.hint


@pytest.mark.parametrize(
    ("detail", "fix"),
    [
        ("dial tcp: lookup node9: no such host", "does not resolve"),
        ("(Read timed out. (read timeout=10))", "a firewall or route"),
        ("dial tcp 10.0.0.9:2376: connect: no route to host", "a firewall or route"),
        ("([Errno 13] Permission denied)", "add it to the docker group"),
    ],
)
def test_each_cause_of_no_answer_has_its_own_fix(detail: str, fix: str) -> None:
    assert fix in calls.unanswered_hint(ENGINE, detail)


def test_an_ssh_engine_that_cannot_be_reached_is_diagnosed_on_its_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure on the forwarded socket names that socket, so the SSH diagnosis asks the server's docker why."""
    mux = SshMux()
    engine = Engine.connect("ssh://ops@b.example", mux=mux)
    monkeypatch.setattr(mux, "ask", lambda endpoint, command: "permission denied while trying to connect to the docker")
    refused = requests.exceptions.ConnectionError(FileNotFoundError(2, "No such file or directory"))
    error = calls.failed(engine, "listing the swarm's nodes", refused)
    assert isinstance(error, SshError) and "user ops may not use Docker on b.example" in error.message
    mux.close()
