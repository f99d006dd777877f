"""The sandbox refuses before creating anything: not root, bad names, taken subnets."""

from __future__ import annotations

import inspect
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from swarmkit import defaults
from swarmkit.cli.sandbox import sandbox_up as sandbox_command
from swarmkit.defaults import EngineName
from swarmkit.errors import SandboxError, SpecError
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import plumbing, processes, state, status, validation


def test_not_root_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(validation.os, "geteuid", lambda: 1000)
    with pytest.raises(SandboxError, match="needs root") as raised:
        sandbox.up(3, "x", "x", "10.230.0.0/24", "/tmp/unused.yaml")
    assert "sudo" in raised.value.hint


@pytest.mark.parametrize(
    "name, prefix, nodes, subnet, engine, message",
    [
        ("Bad!", "node", 3, "10.230.0.0/24", "apache", "sandbox name"),
        ("ok", "Node_", 3, "10.230.0.0/24", "apache", "host prefix"),
        ("ok", "node", 0, "10.230.0.0/24", "apache", "out of range"),
        ("ok", "node", 3, "8.8.8.0/24", "apache", "private network"),
        ("ok", "node", 3, "10.230.0.0/28", "apache", "/26 or larger"),
        ("ok", "node", 3, "10.230.0.0/24", "kafka", "unknown engine"),
    ],
)
def test_bad_options_are_refused(name: str, prefix: str, nodes: int, subnet: str, engine: str, message: str) -> None:
    with pytest.raises(SpecError, match=message) as refused:  # bad input: exit 2, as in every command
        validation.check_new_sandbox(name, nodes, prefix, subnet, engine)
    assert refused.value.exit_code == 2


@pytest.mark.parametrize("name", ["", "..", "../..", "sk/../x", "a" * 7, "SK", "sk\n", " sk"])
def test_a_sandbox_name_that_is_no_name_is_refused_before_anything_runs_or_is_removed(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`sandbox down --name ''` would otherwise end every sandbox's processes and delete the sandbox root."""
    root = tmp_path / "sandbox"
    (root / "sk").mkdir(parents=True)
    (root / "sk" / "sandbox.json").write_text("{}")
    monkeypatch.setattr(state, "STATE_ROOT", root)

    def refused(*args: Any, **kwargs: Any) -> None:
        pytest.fail("a command ran for a refused sandbox name")

    for module, name_of in (
        (sandbox, "_run"),
        (plumbing, "_run"),
        (processes, "kill"),
        (processes, "processes_under"),
        (sandbox, "_remove_directory"),
        (validation, "check_prerequisites"),
    ):
        monkeypatch.setattr(module, name_of, refused)
    for action in (sandbox.down, status.read, sandbox.add_node):
        with pytest.raises(SpecError, match="sandbox name") as raised:
            action(name)
        assert raised.value.exit_code == 2
    assert (root / "sk" / "sandbox.json").read_text() == "{}"


def test_a_sandbox_claims_only_its_own_processes_not_those_of_a_sandbox_whose_name_it_begins(monkeypatch) -> None:
    """`sandbox down --name ir` once killed sandbox irx's engines: its directory matched as a bare prefix."""
    root = "/var/tmp/swarmkit/sandbox"
    table = {
        10: (1, f"dockerd --data-root {root}/ir/ir1/data"),
        11: (10, "containerd-shim"),
        20: (1, f"dockerd --data-root {root}/irx/irx1/data"),
        21: (20, "containerd-shim"),
        30: (1, f"dockerd --data-root {root}/ir/ir10/data"),
    }
    monkeypatch.setattr(processes, "all_processes", lambda: table)
    assert processes.processes_under(f"{root}/ir") == {10, 11, 30}
    assert processes.processes_under(f"{root}/ir/ir1") == {10, 11}


def test_the_engine_default_is_one_value_when_a_sandbox_is_made_and_when_it_is_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A state file that names no engine (written before sandboxes had one) loads as what `up` would make."""
    monkeypatch.setattr(state, "STATE_ROOT", tmp_path)
    made = state.Sandbox("old", "10.230.0.0/24", "node", str(tmp_path / "inventory.yaml"))
    state.save(made)
    saved = json.loads((tmp_path / "old" / "sandbox.json").read_text())
    assert saved["engine"] == "apache"
    del saved["engine"]
    (tmp_path / "old" / "sandbox.json").write_text(json.dumps(saved))
    created = inspect.signature(sandbox.up).parameters["engine"].default
    assert state.load("old").engine == made.engine == created == defaults.DEFAULT_ENGINE
    assert inspect.signature(sandbox_command).parameters["engine"].default.default == defaults.DEFAULT_ENGINE


def test_a_loaded_sandbox_names_its_engine_as_a_member() -> None:
    made = state.Sandbox("t", "10.230.0.0/24", "node", "/tmp/inventory.yaml", engine=EngineName.TANSU)
    document = sandbox.inventory_document(made)
    assert document["stack"]["engine"] == "tansu" and type(document["stack"]["engine"]) is str
    assert "kafka_version" not in document["stack"]
    assert sandbox.inventory_document(replace(made, engine=EngineName.APACHE))["stack"]["kafka_version"] == made.kafka_version
