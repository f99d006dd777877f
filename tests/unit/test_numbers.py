"""Every number is checked at the edge by one helper: a wrong one is a one-line usage error, exit 2, nothing run."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from swarmkit import numbers
from swarmkit.cli.app import app
from swarmkit.errors import SpecError

runner = CliRunner()


@pytest.mark.parametrize(
    "args",
    [
        ["listeners", "diagnose", "--bootstrap", "127.0.0.1:9", "--timeout", value]
        for value in ("-1", "0", "nan", "inf", "100000", "1e309")
    ]
    + [["preflight", "-i", "x", "--memory-per-broker", value] for value in ("nan", "1e309", "-1", "0")]
    + [["status", "-i", "x", "--external-port", value] for value in ("70000", "0", "-1")]
    + [["render", "-i", "x", "--internal-port", "65536"], ["verify", "-i", "x", "--records", "-5"]]
    + [
        ["deploy", "-i", "x", "--timeout", "-3"],
        ["roll", "-i", "x", "--timeout", "nan"],
        ["rebalance", "-i", "x", "--throttle", "-1"],
    ],
)
def test_a_number_out_of_range_is_a_usage_error_with_one_json_object(args: list[str]) -> None:
    as_json = args[0] not in ("preflight", "render")  # commands that take --json
    result = runner.invoke(app, [*args, "--json"] if as_json else args)
    assert result.exit_code == 2, result.output
    assert "Invalid value for" in result.output and "Traceback" not in result.output
    if as_json:
        assert json.loads(result.stdout)["ok"] is False


def test_the_helpers_take_what_kafka_and_the_os_take() -> None:
    assert numbers.port(1) == 1 and numbers.port(65535) == 65535
    assert numbers.whole("-1") == -1 and numbers.whole("2147483647") == numbers.INT32_MAX
    for bad in ("\u0661", "\u00b2", "2147483648", "1.0", " 1", ""):
        with pytest.raises(SpecError):
            numbers.whole(bad)
    assert numbers.seconds(0.5) == 0.5
    with pytest.raises(SpecError, match="at most 300"):
        numbers.seconds(301, 300)
