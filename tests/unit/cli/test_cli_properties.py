"""Property-based (Hypothesis): whatever a user types, the CLI answers with no traceback, exit 0, 1 or 2, one JSON
object under --json, and for exit 0 a stack that parses. Commands that need no engine only (render with
--cluster-id, option validation); a fixed, small example budget keeps it to seconds."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from swarmkit.cli.app import app

runner = CliRunner()
BUDGET = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
CLUSTER_ID = ["--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw"]
HOST = {"name": "node1", "endpoint": "unix:///nonexistent/node1.sock", "address": "10.9.0.1", "role": "manager"}

hostile = st.sampled_from(["[/x]", "[red]x", ":-1:", "..", "/", "", " ", "\n", "\u0661", "\u00b2", "%s", "{}", "-1", "nan"])
text = st.one_of(hostile, st.text(max_size=30), st.text(alphabet="abc0123456789:,=.-_/", max_size=30))
numberish = st.one_of(hostile, st.integers(-(10**20), 10**20).map(str), st.floats().map(str))
option = st.one_of(
    st.tuples(st.sampled_from(["--stack", "--topics", "--image", "--advertise", "--security", "--engine"]), text),
    st.tuples(st.sampled_from(["--external-port", "--internal-port", "--replication-factor", "--timeout"]), numberish),
)
inventory_document = st.one_of(
    st.just({"hosts": [HOST]}),
    st.fixed_dictionaries(
        {"hosts": st.lists(st.fixed_dictionaries({"name": text, "endpoint": text, "address": text}), max_size=2)}
    ),
    st.dictionaries(text, text, max_size=3),
    text,
)


def _no_crash(result, *, as_json: bool) -> None:
    assert result.exit_code in (0, 1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    if as_json:
        assert isinstance(json.loads(result.stdout), dict), result.stdout


@BUDGET
@given(options=st.lists(option, max_size=3), document=inventory_document)
def test_render_takes_any_options_and_inventory_without_a_traceback(tmp_path: Path, options, document) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(document))
    args = ["render", "-i", str(inventory), *CLUSTER_ID, *[part for pair in options for part in pair]]
    result = runner.invoke(app, args)
    _no_crash(result, as_json=False)
    if result.exit_code == 0:
        assert "services" in yaml.safe_load(result.stdout)


@BUDGET
@given(
    command=st.sampled_from([["down"], ["status"], ["client-config"], ["users", "list"], ["verify"], ["roll"]]),
    options=st.lists(
        st.tuples(st.sampled_from(["--stack", "--external-port", "--timeout", "--records", "--bogus"]), text), max_size=2
    ),
)
def test_options_are_refused_with_one_json_object_before_any_engine(tmp_path: Path, command, options) -> None:
    args = [*command, "-i", str(tmp_path / "missing.yaml"), *[part for pair in options for part in pair], "--json"]
    _no_crash(runner.invoke(app, args), as_json=True)  # a command without --json refuses it: one JSON object too
