"""A request an engine failed is one line (the engine's own last line) and a hint, whichever request it was."""

from __future__ import annotations

from python_on_whales.exceptions import DockerException

from swarmkit.hosts.dockerapi import Engine, calls

ENGINE = Engine.connect("unix:///nonexistent.sock")


def failure(stderr: str) -> DockerException:
    return DockerException(["docker", "service", "inspect"], 1, b"", stderr.encode())


def test_an_engine_that_does_not_answer_gets_the_hint_to_reach_it() -> None:
    said = "Cannot connect to the Docker daemon at unix:///nonexistent.sock. Is the docker daemon running?"
    error = calls.failed(ENGINE, "inspecting service kafka_broker", failure(f"warning\n{said}"))
    assert error.message == f"inspecting service kafka_broker on unix:///nonexistent.sock failed: {said}"
    assert error.hint == "check that dockerd runs there and that this machine may reach it"


def test_a_refused_request_gets_the_hint_to_ask_by_hand() -> None:
    error = calls.failed(ENGINE, "removing service kafka_broker", failure("Error: No such service: kafka_broker"))
    assert error.message.endswith("failed: Error: No such service: kafka_broker")
    assert "docker -H unix:///nonexistent.sock" in error.hint
