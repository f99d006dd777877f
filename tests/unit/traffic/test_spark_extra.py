"""pyspark is the spark extra: without it `verify --spark` names the extra (exit 2) before anything is checked."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest
from typer.testing import CliRunner

from swarmkit.cli.app import app
from swarmkit.traffic import spark
from tests.unit.cli.test_cli import INVENTORY, write_inventory


@pytest.fixture
def without_pyspark(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec, version = importlib.util.find_spec, importlib.metadata.version

    def missing(name: str) -> str:
        if name == "pyspark":
            raise importlib.metadata.PackageNotFoundError(name)
        return version(name)

    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else find_spec(name, *a))
    monkeypatch.setattr(importlib.metadata, "version", missing)


@pytest.mark.usefixtures("without_pyspark")
def test_without_pyspark_the_spark_commands_name_the_extra(tmp_path: Path) -> None:
    for call in (spark.spark_submit, spark.pyspark_version):
        with pytest.raises(spark.SparkJobError, match="spark extra") as caught:
            call()
        assert "swarmkit-kafka[spark]" in caught.value.hint
    result = CliRunner().invoke(app, ["verify", "--spark", "-i", write_inventory(tmp_path, INVENTORY)])
    assert result.exit_code == 2 and "swarmkit-kafka[spark]" in result.output, result.output
    assert "Traceback" not in result.output
