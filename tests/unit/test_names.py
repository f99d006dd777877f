"""The one validation module (swarmkit/names.py): names matched whole, no control characters, Kafka's own topic rules,
swarmkit's label namespace kept; and, for any string, through the CLI: an accepted value renders a stack that
parses as YAML and holds the value, a refused one is exit 2 with one error line and a hint."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from swarmkit import names
from swarmkit.cli.app import app
from swarmkit.errors import SpecError

runner = CliRunner()
BUDGET = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
HOST = {"name": "node1", "endpoint": "unix:///nonexistent/node1.sock", "address": "10.9.0.1", "role": "manager"}
CLUSTER_ID = ["--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw"]
HOSTILE = ["", " ", "\n", "a\n", "a\r", "a\x00b", "a\tb", "\u2028", "\u0661", "a\u200bb", ".", "..", "__x", "x" * 250]
value = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=20), st.text(alphabet="abc.-_:$\n{}'\" ", max_size=12))


def _strings(document: Any) -> list[str]:
    """Every string in a parsed stack as the container gets it: '$$' (compose's escape of '$') read back as '$',
    '{{"{{"}}' (swarm's template escape of '{{') as '{{'."""
    if isinstance(document, dict):
        return [s for key, item in document.items() for s in (*_strings(key), *_strings(item))]
    if isinstance(document, list):
        return [s for item in document for s in _strings(item)]
    return [document.replace("$$", "$").replace('{{"{{"}}', "{{")] if isinstance(document, str) else []


# where a value goes in: (the inventory, the extra options), and the string the rendered stack must then hold
PLACES: dict[str, Callable[[str], tuple[dict, list[str], str]]] = {
    "host name": lambda v: ({"hosts": [{**HOST, "name": v}]}, [], f"node.hostname == {v}"),
    "topic": lambda v: (
        {"hosts": [HOST], "stack": {"topics": [{"name": v, "partitions": 1, "replicas": 1}]}},
        [],
        f"{v}:1:1",
    ),
    "hostname command": lambda v: ({"hosts": [HOST]}, ["--hostname-command", v], v),
    "broker setting": lambda v: ({"hosts": [HOST], "stack": {"broker_env": {"KAFKA_LOG_RETENTION_HOURS": v}}}, [], v),
    "stack name": lambda v: ({"hosts": [HOST]}, ["--stack", v], f"{v}_identity"),
}


@BUDGET
@given(place=st.sampled_from(sorted(PLACES)), text=value)
@example(place="host name", text="node1\n")  # the trailing newline `^...$` let through, rendering invalid YAML
@example(place="topic", text="__consumer_offsets")
@example(place="broker setting", text="{{0")  # rendered escaped for swarm's templates
def test_any_value_is_either_rendered_whole_or_refused_in_one_line(tmp_path: Path, place: str, text: str) -> None:
    document, options, expected = PLACES[place](text)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(document))
    result = runner.invoke(app, ["render", "-i", str(inventory), *CLUSTER_ID, *options])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 0:
        assert expected in _strings(yaml.safe_load(result.stdout)) or expected in result.stdout, result.stdout
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)
    else:
        lines = result.stderr.splitlines()
        assert result.exit_code == 2 and len(lines) == 2, result.stderr
        assert lines[0].startswith("error: ") and lines[1].startswith("hint: ")


@given(text=value)
def test_a_shown_value_is_one_printable_line(text: str) -> None:
    for shown in (names.shown(text), names.escaped(f"x {text} y")):
        assert not [c for c in shown if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn")], shown


@pytest.mark.parametrize(
    ("check", "good"),
    [
        (names.host_name, "node-1.a_b"),
        (names.zone_name, "eu-west-1a"),
        (names.user_name, "orders-app"),
        (names.stack_name, "kafka"),
        (names.cluster_id, "AAAAAAAAAAAAAAAAAAAAAw"),
        (names.setting_key, "retention.ms"),
        (names.property_key, "log.retention.hours"),
        (names.env_name, "KAFKA_HEAP_OPTS"),
        (names.image_ref, "apache/kafka:4.4.0"),
        (names.registry, "10.0.0.5:5000"),
        (names.topic_name, "orders"),
    ],
)
def test_a_trailing_newline_or_any_control_character_is_refused(check: Callable[[str], str], good: str) -> None:
    assert check(good) == good
    for bad in (f"{good}\n", f"{good}\r\n", f"\n{good}", f"{good}\x00", f"{good[:1]}\t{good[1:]}", ""):
        with pytest.raises(SpecError):
            check(bad)


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("__consumer_offsets", "internal topics"),
        ("__transaction_state", "internal topics"),
        ("__cluster_metadata", "internal topics"),
        (".", "not a legal topic name"),
        ("..", "not a legal topic name"),
        ("a" * 250, "250 characters long"),
        ("a/b", "illegal characters"),
        ("", "is empty"),
    ],
)
def test_kafkas_own_topic_rules(name: str, problem: str) -> None:
    with pytest.raises(SpecError, match=problem):
        names.topic_name(name)
    assert names.topic_name("a" * 249) == "a" * 249 and names.topic_name("_private.x-1") == "_private.x-1"


@pytest.mark.parametrize("key", ["swarmkit.broker-id", "swarmkit.host", "Swarmkit.Host", "swarmkit", "SWARMKIT.x"])
def test_swarmkits_label_namespace_is_not_the_users(key: str) -> None:
    with pytest.raises(SpecError, match="swarmkit's own namespace"):
        names.label(key, "99")


def test_a_users_label_is_a_docker_label_key_with_a_plain_value() -> None:
    assert names.label("com.example/tier", "web") == ("com.example/tier", "web")
    assert names.label("swarmkitx", "1") == ("swarmkitx", "1")  # only the namespace swarmkit.* is kept
    for key, text in (("a b", "x"), ("zone\n", "a"), ("app", "x\ny"), ("app", "\x00")):
        with pytest.raises(SpecError):
            names.label(key, text)


def test_a_refused_value_is_shown_escaped_and_cut() -> None:
    assert names.shown("a\nb\x00") == "'a\\nb\\x00'"
    assert names.shown("x" * 100).endswith("...'") and len(names.shown("x" * 100)) < 90
    assert names.escaped("line one\nline two\x00") == "line one\\nline two\\x00"
    assert names.escaped("plain – ünïcode") == "plain – ünïcode"


def test_an_existing_topic_may_be_kafkas_own() -> None:
    """rebalance --topics acts on topics that exist: __consumer_offsets included, still by Kafka's characters."""
    assert names.topic_name("__consumer_offsets", existing=True) == "__consumer_offsets"
    with pytest.raises(SpecError, match="illegal characters"):
        names.topic_name("orders\n", existing=True)
