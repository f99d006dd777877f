"""The call layer feeds Docker's answers to the parser and re-reads a listing whose objects went away meanwhile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import calls, containers, services, stacks
from swarmkit.hosts.dockerapi.engine import Engine

FIXTURES = Path(__file__).parent / "fixtures"
ENGINE = Engine.connect("unix:///nonexistent.sock")


class FakeCli:
    """Answers docker commands from a script: the first answer whose key starts the command; a
    string answer is stdout, an exception is raised."""

    def __init__(self, answers: list[tuple[tuple[str, ...], object]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, ...]] = []

    def __call__(self, engine: Engine, what: str, *args: str) -> str:
        self.asked.append(args)
        for index, (start, answer) in enumerate(self.answers):
            if args[: len(start)] == start:
                del self.answers[index]
                if isinstance(answer, Exception):
                    raise answer
                return str(answer)
        raise AssertionError(f"unexpected docker {' '.join(args)}")


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def test_a_task_pruned_between_listing_and_inspecting_is_read_again(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCli(
        [
            (("service", "ps"), "gone1 t2"),
            (("inspect",), EngineError("inspecting the tasks of s on x failed: Error: No such object: gone1")),
            (("service", "ps"), "t2"),
            (("inspect",), json.dumps([{"ID": "t2"}])),
        ]
    )
    monkeypatch.setattr(calls, "cli", fake)
    assert calls.listed_documents(ENGINE, "the tasks of s", ("service", "ps", "--quiet", "s")) == [{"ID": "t2"}]
    assert fake.asked[-1] == ("inspect", "t2")


def test_an_inspect_that_fails_otherwise_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    refused = EngineError("inspecting x failed: permission denied")
    monkeypatch.setattr(calls, "cli", FakeCli([(("node", "ls"), "n1"), (("inspect",), refused)]))
    with pytest.raises(EngineError, match="permission denied"):
        calls.listed_documents(ENGINE, "the swarm's nodes", ("node", "ls", "--quiet"))


def test_a_listing_that_keeps_changing_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    gone = EngineError("Error response from daemon: service abc not found")
    answers: list[tuple[tuple[str, ...], object]] = [(("service", "ls"), "abc"), (("service", "inspect"), gone)]
    monkeypatch.setattr(calls, "cli", FakeCli(answers * calls.LIST_READ_ATTEMPTS))
    with pytest.raises(EngineError, match="kept changing"):
        calls.listed_documents(ENGINE, "services", ("service", "ls", "--quiet"), ("service", "inspect"))


def test_an_empty_listing_inspects_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCli([(("container", "ls"), "\n")])
    monkeypatch.setattr(calls, "cli", fake)
    assert containers.service_container(ENGINE, "kafka_broker") is None
    assert fake.asked == [
        ("container", "ls", "--quiet", "--no-trunc", "--filter", "label=com.docker.swarm.service.name=kafka_broker")
    ]


def test_service_state_reads_the_service_then_its_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(services, "output", lambda engine, *args: fixture("service_broker.json"))
    monkeypatch.setattr(calls, "cli", FakeCli([(("service", "ps"), "a b c"), (("inspect",), fixture("tasks_broker.json"))]))
    state = services.service_state(ENGINE, "kafka_broker")
    assert state is not None and len(state.tasks) == 3 and state.labels["swarmkit.engine"] == "tansu"


def test_names_by_label_inspects_volumes_as_volumes(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeCli([(("volume", "ls"), "kafka_identity"), (("volume", "inspect"), fixture("volumes.json"))])
    monkeypatch.setattr(calls, "cli", fake)
    assert stacks.names_by_label(ENGINE, "volume", "com.docker.stack.namespace") == {"kafka": ["kafka_identity"]}
    assert fake.asked[1] == ("volume", "inspect", "kafka_identity")
