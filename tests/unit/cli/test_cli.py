"""The CLI's contract: one-line errors with a hint and exit code, no traceback, one JSON object."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from swarmkit.cli.app import app

runner = CliRunner()

INVENTORY = {
    "stack": {"engine": "tansu", "image": "registry.example:5000/swarmkit/tansu:0.6.0"},
    "hosts": [
        {
            "name": f"node{i}",
            "endpoint": f"unix:///nonexistent/node{i}.sock",
            "address": f"10.9.0.{i}",
            "role": "manager" if i == 1 else "worker",
        }
        for i in (1, 2, 3)
    ],
}


def write_inventory(tmp_path: Path, document: dict) -> str:
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_render_prints_a_stack_without_contacting_anything(tmp_path: Path) -> None:
    result = runner.invoke(app, ["render", "-i", write_inventory(tmp_path, INVENTORY), "--topics", "t:3:1"])
    assert result.exit_code == 0, result.output
    stack = yaml.safe_load(result.stdout)
    assert stack["services"]["broker"]["deploy"]["mode"] == "global"
    assert runner.invoke(app, ["render", "-i", write_inventory(tmp_path, INVENTORY), "--topics", "t:3:1"]).stdout == result.stdout


def test_render_output_writes_a_directory_docker_stack_deploy_takes(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path, {**INVENTORY, "stack": {"engine": "apache"}})
    args = ["render", "-i", inventory, "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw"]
    result = runner.invoke(app, [*args, "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert f"docker stack deploy -c {tmp_path / 'out' / 'stack.yml'} kafka" in result.output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "controller.sh",
        "entrypoint.sh",
        "jmx-exporter.yml",
        "local-names.sh",
        "metrics-agent.sh",
        "node-identity.sh",
        "stack.yml",
    ]
    printed = runner.invoke(app, args).stdout
    assert (tmp_path / "out" / "stack.yml").read_text() == printed
    assert "-o DIR" in printed and "set -eu" not in printed  # the scripts stay files


def test_an_impossible_topic_spec_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["deploy", "-i", write_inventory(tmp_path, INVENTORY), "--topics", "x:0:1"])
    assert result.exit_code == 2
    assert "error: topic spec 'x:0:1'" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (["--replication-factor", "0"], "'--replication-factor': 0 is not a whole number from 1"),
        (["--replication-factor", "-1"], "'--replication-factor': -1 is not a whole number from 1"),
        (["--topics", "t:3:1:cleanup.policy=bogus"], "cleanup.policy 'bogus'"),
        (["--topics", "t:3:1:retention.ms=abc"], "retention.ms=abc is not a whole number"),
        (["--topics", "t:3:1:compression.type=brotli"], "compression.type=brotli"),
    ],
)
@pytest.mark.parametrize("engine", ["apache", "tansu"])
def test_up_refuses_bad_options_before_any_engine_is_contacted(
    tmp_path: Path, engine: str, options: list[str], said: str
) -> None:
    """The inventory's engines do not exist: an answer about them would mean one was contacted first."""
    stack = {**INVENTORY, "stack": {"engine": engine}}
    result = runner.invoke(app, ["up", "-i", write_inventory(tmp_path, stack), *options])
    assert result.exit_code == 2, result.output
    assert said in result.output and "does not answer" not in result.output and "Traceback" not in result.output


def test_inventory_errors_name_the_field_and_print_json_when_asked(tmp_path: Path) -> None:
    broken = {"hosts": [{**INVENTORY["hosts"][0], "address": "10.9.0.300"}]}
    result = runner.invoke(app, ["verify", "-i", write_inventory(tmp_path, broken), "--json"])
    assert result.exit_code == 2
    document = json.loads(result.stdout)
    assert document["ok"] is False and "field 'address'" in document["error"] and document["hint"]


def test_an_unreachable_engine_is_a_clear_failure(tmp_path: Path) -> None:
    result = runner.invoke(app, ["swarm", "up", "-i", write_inventory(tmp_path, INVENTORY), "--skip-preflight"])
    assert result.exit_code == 1
    assert "does not answer" in result.output and "Traceback" not in result.output


def test_unknown_firewall_action_is_rejected() -> None:
    result = runner.invoke(app, ["sandbox", "firewall", "open", "node1", "9094/tcp"])
    assert result.exit_code == 2 and "use block or unblock" in result.output


def test_replication_factor_is_checked_against_the_brokers(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path, {**INVENTORY, "stack": {"engine": "apache"}})
    args = ["render", "-i", inventory, "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw", "--replication-factor"]
    assert runner.invoke(app, [*args, "0"]).exit_code == 2
    assert runner.invoke(app, [*args, "4"]).exit_code == 2
    pinned = yaml.safe_load(runner.invoke(app, [*args, "2"]).stdout)
    assert pinned["services"]["broker"]["environment"]["KAFKA_DEFAULT_REPLICATION_FACTOR"] == "2"


@pytest.mark.parametrize("args", [[], ["--all", "-i", "inventory.yaml"]])
def test_ssh_close_wants_an_inventory_or_all(args: list[str]) -> None:
    result = runner.invoke(app, ["ssh", "close", *args])
    assert result.exit_code == 2 and "name the inventory (-i INVENTORY) or --all" in result.output


def test_ssh_close_says_when_nothing_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    result = runner.invoke(app, ["ssh", "close", "--all", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == {"closed": []}
    assert list(tmp_path.iterdir()) == []


def test_plan_prints_the_changes_and_exits_3_while_any_are_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from swarmkit.ops import drift
    from swarmkit.ops.declared import Changes, SettingChange, TopicChange

    alter = TopicChange("orders", "alter", (SettingChange("retention.ms", "604800000", "86400000"),))
    found = [Changes("kafka", True, (alter,), (), ()), Changes("kafka", True, (), (), ())]
    monkeypatch.setattr(drift, "read_changes", lambda plan, session: found.pop(0))
    declared = {**INVENTORY, "stack": {**INVENTORY["stack"], "topics": [{"name": "orders", "partitions": 3, "replicas": 1}]}}
    inventory = write_inventory(tmp_path, declared)
    pending = runner.invoke(app, ["plan", "-i", inventory, "--topics", "orders:3:1:retention.ms=86400000"])
    assert (pending.exit_code, pending.stdout) == (3, "alter topic orders: retention.ms 604800000 -> 86400000\n")
    assert "--topics orders:3:1:retention.ms=86400000 overrides the inventory's stack.topics (orders:3:1)" in pending.stderr
    unchanged = runner.invoke(app, ["plan", "-i", inventory, "--json"])
    assert unchanged.exit_code == 0
    assert json.loads(unchanged.stdout)["lines"] == ["no changes"]
