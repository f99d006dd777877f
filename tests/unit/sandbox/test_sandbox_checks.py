"""The sandbox refuses before creating anything: not root, bad names, taken subnets."""

from __future__ import annotations

import pytest

from swarmkit.errors import SandboxError
from swarmkit.sandbox import hosts as sandbox


def test_not_root_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 1000)
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
    with pytest.raises(SandboxError, match=message):
        sandbox._check_new_sandbox(name, nodes, prefix, subnet, engine)
