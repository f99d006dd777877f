"""Files the user names: every odd kind refused with its name, at once (no hang), and nothing written half-way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from swarmkit import files
from swarmkit.cli.app import app
from swarmkit.errors import InventoryError, SpecError
from swarmkit.hosts.inventory import load_inventory

runner = CliRunner()
HOST = {"name": "node1", "endpoint": "unix:///nonexistent/node1.sock", "address": "10.9.0.1", "role": "manager"}
INVENTORY = {"stack": {"engine": "apache"}, "hosts": [HOST]}


def test_odd_inventory_files_are_named_as_what_they_are(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.yml"
    os.mkfifo(fifo)
    binary = tmp_path / "binary.yml"
    binary.write_bytes(b"\xff\xfe\x00hosts")
    nul = tmp_path / "nul.yml"
    nul.write_text("hosts:\x00")
    big = tmp_path / "big.yml"
    big.write_text("#" * (2 * 1024 * 1024))
    cases = {
        str(tmp_path): "is a directory",
        str(fifo): "not a regular file",
        "/dev/zero": "not a regular file",
        str(binary): "not UTF-8 text",
        str(nul): "NUL bytes",
        str(big): "more than the",
        "": "no inventory named",
    }
    for path, said in cases.items():
        with pytest.raises(InventoryError, match=said) as raised:
            load_inventory(path)
        assert raised.value.exit_code == 2


def test_a_key_given_twice_is_an_error_naming_the_key_and_lines(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    text = yaml.safe_dump(INVENTORY)
    path.write_text(text + "hosts:\n- {name: other, endpoint: 'unix:///x', address: 10.9.0.2}\n")
    with pytest.raises(InventoryError, match=r"key 'hosts' is given twice \(lines \d+ and \d+\)"):
        load_inventory(path)
    path.write_text("hosts:\n- name: a\n  name: b\n")
    with pytest.raises(InventoryError, match="key 'name' is given twice"):
        load_inventory(path)


@pytest.mark.parametrize("output, said", [("/proc", "special filesystem"), ("/proc/self/x", "special filesystem")])
def test_render_output_is_checked_before_anything_is_written(tmp_path: Path, output: str, said: str) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    result = runner.invoke(app, ["render", "-i", str(inventory), "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw", "-o", output])
    assert result.exit_code == 2 and said in result.output and "Traceback" not in result.output, result.output


def test_render_output_onto_a_file_is_refused_and_leaves_it_alone(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    taken = tmp_path / "taken"
    taken.write_text("mine")
    result = runner.invoke(app, ["render", "-i", str(inventory), "--cluster-id", "AAAAAAAAAAAAAAAAAAAAAw", "-o", str(taken)])
    assert result.exit_code == 2 and "not a directory" in result.output, result.output
    assert taken.read_text() == "mine"


def test_write_all_writes_every_file_or_leaves_the_directory_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.sh").write_text("old")
    files.write_all(tmp_path, {"a.sh": "new a", "stack.yml": "new stack"})
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == {"a.sh": "new a", "stack.yml": "new stack"}
    (tmp_path / "stack.yml").unlink()
    (tmp_path / "stack.yml").mkdir()
    with pytest.raises(files.FileProblem, match="stack.yml is a directory: nothing was written"):
        files.write_all(tmp_path, {"a.sh": "newer", "stack.yml": "newer"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sh", "stack.yml"] and (tmp_path / "a.sh").read_text() == "new a"
    (tmp_path / "stack.yml").rmdir()
    real_write = Path.write_text

    def disk_full(path: Path, text: str, encoding: str | None = None) -> int:
        if path.name.startswith(".stack.yml"):
            raise OSError(28, "No space left on device", str(path))
        return real_write(path, text, encoding=encoding)

    monkeypatch.setattr(Path, "write_text", disk_full)
    with pytest.raises(files.FileProblem, match="No space left on device: nothing was written"):
        files.write_all(tmp_path, {"a.sh": "newest", "stack.yml": "newest"})
    assert [p.name for p in tmp_path.iterdir()] == ["a.sh"] and (tmp_path / "a.sh").read_text() == "new a"


@pytest.mark.parametrize(
    ("report", "said"),
    [
        ("", "names no file"),
        ("{tmp}", "is a directory"),
        ("/proc/report.html", "special filesystem"),
        ("/dev/null", "special filesystem"),
        ("{tmp}/inventory.yaml/report.html", "is not a writable directory"),
        ("{tmp}/fifo.html", "not a regular file"),
    ],
)
def test_an_output_file_is_checked_before_the_work_starts(tmp_path: Path, report: str, said: str) -> None:
    """`verify --report` into a path it cannot write once failed only after the whole verify had run: now it is
    bad input before any engine is asked (these engines do not exist: asking them would be another error)."""
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(yaml.safe_dump(INVENTORY))
    os.mkfifo(tmp_path / "fifo.html")
    path = report.format(tmp=tmp_path)
    for command in (["verify", "--report", path], ["client-config", "-o", path]):
        result = runner.invoke(app, [*command, "-i", str(inventory)])
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"error: {command[1]} {path!r}: ") and said in result.stderr


def test_kept_state_that_is_no_longer_a_file_is_refused_never_read(tmp_path: Path) -> None:
    assert files.read_kept(tmp_path / "absent.crt") is None
    os.mkfifo(tmp_path / "ca.crt")
    with pytest.raises(SpecError, match="ca.crt: is not a regular file"):
        files.read_kept(tmp_path / "ca.crt")
    (tmp_path / "ca.key").write_bytes(b"\x80\x81")
    with pytest.raises(SpecError, match="is not UTF-8 text") as raised:
        files.read_kept(tmp_path / "ca.key")
    assert "backup of .swarmkit/" in raised.value.hint
