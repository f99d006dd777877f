"""client-config and users: refused, writing nothing, for a stack that is not deployed or not secured that way."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from swarmkit.cli.app import app
from swarmkit.errors import SpecError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import ServiceSpec
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.ops import users
from swarmkit.security.acls import parse_grants
from swarmkit.security.settings import ADMIN_USER, KEEPER_USER

runner = CliRunner()


def inventory(tmp_path: Path) -> Inventory:
    return Inventory((Host("k1", "unix:///nonexistent.sock", "10.0.0.1", "manager"),), str(tmp_path / "inv.yaml"))


def deployed(monkeypatch: pytest.MonkeyPatch, security: str | None) -> None:
    labels = {"swarmkit.security": security} if security else {}
    spec = ServiceSpec("apache/kafka:4.4.0", 0, labels)
    monkeypatch.setattr(dockerapi, "service_spec", lambda engine, name: spec if name == "kafka_broker" else None)


@pytest.mark.parametrize(
    "stack, security, given, message",
    [
        ("nope", "sasl_ssl", None, "stack 'nope' is not deployed"),
        ("kafka", None, None, "runs in plaintext"),
        ("kafka", "ssl", "sasl_ssl", "runs in ssl, not sasl_ssl"),
        ("kafka", "sasl_ssl", "bogus", "--security 'bogus' is not a client security mode"),
        ("x/../../escape", "sasl_ssl", None, "stack name"),
        ("", "sasl_ssl", None, "stack name"),
    ],
)
def test_client_config_is_refused_before_a_ca_or_password_is_made(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, stack: str, security: str | None, given: str | None, message: str
) -> None:
    deployed(monkeypatch, security)
    with pytest.raises(SpecError, match=message) as refused:
        users.client_config(Session.of(inventory(tmp_path)), stack, given, "admin", "properties", str(tmp_path / "ca.crt"))
    assert refused.value.exit_code == 2
    assert sorted(tmp_path.rglob("*")) == []


@pytest.mark.parametrize("security", [None, "ssl"])
@pytest.mark.parametrize("action", ["add", "remove", "list"])
def test_users_of_a_stack_that_is_not_sasl_ssl_are_refused_writing_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, security: str | None, action: str
) -> None:
    deployed(monkeypatch, security)
    calls = {
        "add": lambda: users.add_user(Session.of(inventory(tmp_path)), "kafka", "alice"),
        "remove": lambda: users.remove_user(Session.of(inventory(tmp_path)), "kafka", "alice"),
        "list": lambda: users.list_users(Session.of(inventory(tmp_path)), "kafka"),
    }
    with pytest.raises(SpecError, match="not sasl_ssl"):
        calls[action]()
    assert sorted(tmp_path.rglob("*")) == []


def test_a_path_as_stack_name_is_a_usage_error_and_nothing_is_written(tmp_path: Path) -> None:
    escape = tmp_path / "escape"
    stack = f"x/../../../../../../../../{escape}"
    for command in (["client-config"], ["users", "add", "bob"], ["users", "list"], ["down", "--purge-data", "--yes"]):
        result = runner.invoke(app, [*command, "-i", str(tmp_path / "inv.yaml"), "--stack", stack])
        assert result.exit_code == 2, (command, result.output)
        assert "stack name" in result.output and "Traceback" not in result.output
    assert sorted(tmp_path.rglob("*")) == [] and not Path(f"{escape}.pki").exists()


@pytest.mark.parametrize("name", [ADMIN_USER, KEEPER_USER])
def test_swarmkits_own_users_are_not_client_users(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, name: str) -> None:
    deployed(monkeypatch, "sasl_ssl")
    session = Session.of(inventory(tmp_path))
    for call in (users.add_user, users.remove_user, users.check_user):
        with pytest.raises(SpecError, match="swarmkit's own user"):
            call(session, "kafka", name)
    assert sorted(tmp_path.rglob("*")) == []


def test_a_malformed_grant_is_refused_before_anything_is_made(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    deployed(monkeypatch, "sasl_ssl")
    written = tmp_path / "inv.yaml"
    written.write_text("hosts:\n- {name: k1, endpoint: 'unix:///nonexistent.sock', address: 10.0.0.1, role: manager}\n")
    result = runner.invoke(app, ["users", "add", "alice", "-i", str(written), "--allow", "topic:orders:fly"])
    assert result.exit_code == 2 and "'fly' not among" in result.output, result.output
    with pytest.raises(SpecError, match="2 part"):
        users.add_user(Session.of(inventory(tmp_path)), "kafka", "alice", ["topic:orders"])
    assert sorted(tmp_path.rglob("*")) == [written]


def test_a_grant_is_one_kafka_acl_and_back() -> None:
    for grant in parse_grants(["topic:orders:read,describe-configs", "topic:orders-*:write", "group:*:all"]):
        binding = admin._binding("alice", grant)
        assert binding.principal == "User:alice" and binding.host == "*"
        assert admin._as_grant(binding) == grant
