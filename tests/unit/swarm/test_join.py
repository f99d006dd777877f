"""`swarmkit join`: the command for a server swarmkit cannot reach, only for a swarm that exists."""

from __future__ import annotations

import pytest

from swarmkit.errors import SwarmError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts, Engine, EngineInfo
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.swarm import bootstrap

INVENTORY = Inventory((Host("m1", "unix:///m1.sock", "10.0.0.1", "manager"),))
DOCKER = DockerHosts({"m1": Engine("unix:///m1.sock", None)})  # type: ignore[arg-type]


def swarm_state(monkeypatch: pytest.MonkeyPatch, state: str) -> list[str]:
    info = EngineInfo("unix:///m1.sock", "27.0", "m1", state, "n1" if state == "active" else "", "", 0)
    monkeypatch.setattr(dockerapi, "engine_info", lambda engine: info)
    asked: list[str] = []

    def join_token(engine: Engine, role: str) -> str:
        asked.append(role)
        return "SWMTKN-1-secret"

    monkeypatch.setattr(dockerapi, "join_token", join_token)
    return asked


def test_a_first_manager_in_no_swarm_has_nothing_to_join(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = swarm_state(monkeypatch, "inactive")
    with pytest.raises(SwarmError, match="m1, the first manager, is in no swarm") as refused:
        bootstrap.join_command(INVENTORY, "worker", show_token=False, docker=DOCKER)
    assert refused.value.exit_code == 1 and "swarmkit swarm up" in refused.value.hint and asked == []


def test_the_token_is_read_either_way_and_shown_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = swarm_state(monkeypatch, "active")
    hidden = bootstrap.join_command(INVENTORY, "worker", show_token=False, docker=DOCKER)
    assert hidden == "docker swarm join --token <token: swarmkit join --show-token> 10.0.0.1:2377"
    assert "SWMTKN-1-secret" in bootstrap.join_command(INVENTORY, "manager", show_token=True, docker=DOCKER)
    assert asked == ["worker", "manager"]
