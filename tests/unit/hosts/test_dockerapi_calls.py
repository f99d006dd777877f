"""The request layer: each read is one or two Engine API requests whose answers go to the parser; an object that is
gone meanwhile reads as absent, a refused request as one line and a hint."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from docker import errors as sdk_errors
from python_on_whales import exceptions as whales_errors

from swarmkit import fanout
from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import (
    Engine,
    engine_info,
    exec_in_container,
    exec_in_service,
    names_by_label,
    service_container,
    service_state,
    swarm_nodes,
    update_node_labels,
)

FIXTURES = Path(__file__).parent / "fixtures"
ENGINE = Engine.connect("unix:///nonexistent.sock")


def recorded(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


class FakeApi:
    """Answers Engine API requests from a script (one answer per request, in order, by method name); an exception
    answer is raised.  Every request is recorded with its arguments."""

    def __init__(self, **answers: list[object]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, tuple, dict]] = []

    def __getattr__(self, method: str) -> Any:
        def answer(*args: object, **kwargs: object) -> object:
            self.asked.append((method, args, kwargs))
            given = self.answers[method].pop(0)
            if isinstance(given, Exception):
                raise given
            return given

        return answer


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> FakeApi:
    fake = FakeApi()
    monkeypatch.setattr(Engine, "api", property(lambda engine: fake))
    return fake


def gone(what: str) -> sdk_errors.NotFound:
    return sdk_errors.NotFound(f"404 Client Error: Not Found ({what})", explanation=f"{what} not found")


def test_service_state_is_the_service_then_its_tasks(api: FakeApi) -> None:
    api.answers = {"inspect_service": [recorded("api_service_broker.json")], "tasks": [recorded("api_tasks_broker.json")]}
    state = service_state(ENGINE, "kafka_broker")
    assert state is not None and len(state.tasks) == 3 and state.env["KAFKA_PROCESS_ROLES"] == "broker"
    assert [(m, a, k) for m, a, k in api.asked] == [
        ("inspect_service", ("kafka_broker",), {}),
        ("tasks", (), {"filters": {"service": "kafka_broker"}}),
    ]


def test_a_service_absent_or_removed_between_the_two_requests_reads_as_none(api: FakeApi) -> None:
    api.answers = {"inspect_service": [gone("service"), recorded("api_service_broker.json")], "tasks": [gone("service")]}
    assert service_state(ENGINE, "kafka_broker") is None
    assert service_state(ENGINE, "kafka_broker") is None


def test_a_container_ended_between_listing_and_inspecting_is_left_out(api: FakeApi) -> None:
    controller = recorded("api_container_controller.json")
    api.answers = {"containers": [[{"Id": "ended"}, {"Id": controller["Id"]}]], "inspect_container": [gone("x"), controller]}
    assert service_container(ENGINE, "kafka_controller-1") == (controller["Id"], "running")
    assert api.asked[0][2] == {"filters": {"label": "com.docker.swarm.service.name=kafka_controller-1"}}


def test_no_container_of_the_service_inspects_nothing(api: FakeApi) -> None:
    api.answers = {"containers": [[]]}
    assert service_container(ENGINE, "kafka_broker") is None
    assert [method for method, _, _ in api.asked] == ["containers"]


def test_nodes_and_engine_info_are_one_request_each(api: FakeApi) -> None:
    api.answers = {"nodes": [recorded("api_nodes.json")], "info": [recorded("api_info_manager.json")]}
    assert sorted(node.hostname for node in swarm_nodes(ENGINE)) == ["node1", "node2", "node3"]
    assert engine_info(ENGINE).swarm_state == "active"


def test_names_by_label_reads_volumes_as_volumes(api: FakeApi) -> None:
    api.answers = {"volumes": [{"Volumes": recorded("volumes.json"), "Warnings": None}]}
    assert names_by_label(ENGINE, "volume", "com.docker.stack.namespace") == {"kafka": ["kafka_identity"]}
    assert api.asked == [("volumes", (), {"filters": {"label": "com.docker.stack.namespace"}})]


def test_a_command_run_in_a_container_gives_its_stdout_or_its_last_error_line(api: FakeApi) -> None:
    api.answers = {
        "exec_create": [{"Id": "e1"}, {"Id": "e2"}],
        "exec_start": [(b"NodeId LogEndOffset\n1 10\n", b"a warning\n"), (None, b"starting\nError: timed out\n")],
        "exec_inspect": [{"ExitCode": 0}, {"ExitCode": 1}],
    }
    assert exec_in_container(ENGINE, "c0ffee", ["quorum", "describe"]) == "NodeId LogEndOffset\n1 10"
    with pytest.raises(EngineError, match="running quorum in container c0ffee on .* failed: Error: timed out"):
        exec_in_container(ENGINE, "c0ffee", ["quorum", "describe"])


def test_a_command_in_a_service_runs_in_its_running_container_as_the_user_given(api: FakeApi) -> None:
    api.answers = {
        "containers": [[{"Id": "c0ffee"}], []],
        "exec_create": [{"Id": "e1"}],
        "exec_start": [(b"/var/lib/kafka 12 34\n", None)],
        "exec_inspect": [{"ExitCode": 0}],
    }
    assert exec_in_service(ENGINE, "kafka_broker", ["df"], user="1000") == "/var/lib/kafka 12 34"
    assert api.asked[:2] == [
        ("containers", (), {"filters": {"label": "com.docker.swarm.service.name=kafka_broker"}}),
        ("exec_create", ("c0ffee", ["df"]), {"user": "1000"}),
    ]
    with pytest.raises(EngineError, match="no running container of kafka_broker on unix:///nonexistent.sock"):
        exec_in_service(ENGINE, "kafka_broker", ["df"])


def test_a_refused_request_is_the_engines_own_line_and_a_hint(api: FakeApi) -> None:
    refused = sdk_errors.APIError("500 Server Error", explanation="This node is not a swarm manager.")
    api.answers = {"nodes": [refused]}
    with pytest.raises(EngineError) as raised:
        swarm_nodes(ENGINE)
    assert (
        raised.value.message == "listing the swarm's nodes on unix:///nonexistent.sock failed: This node is not a swarm manager."
    )
    assert "docker -H unix:///nonexistent.sock" in raised.value.hint


class FakeNodes:
    """``client.node.update`` refused as out of sequence ``refusals`` times, then done (or refused otherwise)."""

    def __init__(self, refusals: int, other: str = "") -> None:
        self.refusals, self.other, self.updates = refusals, other, 0

    def update(self, node_id: str, **changes: object) -> None:
        self.updates += 1
        if self.other or self.updates <= self.refusals:
            stderr = self.other or "Error response from daemon: rpc error: code = Unknown desc = update out of sequence"
            raise whales_errors.DockerException(["docker", "node", "update", node_id], 1, b"", stderr.encode())


def with_nodes(monkeypatch: pytest.MonkeyPatch, nodes: FakeNodes) -> None:
    monkeypatch.setattr(Engine, "client", property(lambda engine: SimpleNamespace(node=nodes)))
    monkeypatch.setattr(fanout, "pause", lambda seconds: None)


def test_a_node_update_the_swarm_overtook_is_made_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """A node that just joined is written by the swarm itself: our update based on the older version is refused."""
    nodes = FakeNodes(refusals=2)
    with_nodes(monkeypatch, nodes)
    update_node_labels(ENGINE, "n1", {"swarmkit.broker-id": "4"})
    assert nodes.updates == 3


def test_a_node_update_refused_for_another_reason_fails_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = FakeNodes(refusals=0, other="Error response from daemon: node n1 not found")
    with_nodes(monkeypatch, nodes)
    with pytest.raises(EngineError, match="labelling node n1 .*not found"):
        update_node_labels(ENGINE, "n1", {"swarmkit.broker-id": "4"})
    assert nodes.updates == 1
