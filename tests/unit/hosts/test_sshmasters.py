"""Kept SSH masters without a server: how long, where, named how, and closed by inventory or all at once."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.errors import InventoryError, SpecError, SshError
from swarmkit.hosts import sshmasters
from swarmkit.hosts.inventory import Host, Inventory, parse_inventory
from swarmkit.hosts.ssh import close_kept
from swarmkit.hosts.sshmasters import PERSIST_ENV, MasterFiles


@pytest.fixture
def runtime() -> Iterator[Path]:
    """A short XDG_RUNTIME_DIR of the test's own (sockets' paths are short)."""
    directory = Path(tempfile.mkdtemp(prefix="sk-", dir="/tmp"))
    yield directory
    shutil.rmtree(directory)


def test_the_environment_overrides_the_inventory_which_overrides_60_seconds() -> None:
    assert sshmasters.persist_seconds(None, {}) == 60
    assert sshmasters.persist_seconds(5, {}) == 5
    assert sshmasters.persist_seconds(5, {PERSIST_ENV: "0"}) == 0
    for wrong in ("1m", "\u00b2", "\u0661\u0662", "-1", "99999999999"):  # '²' made int() raise, '١٢' was taken as 12
        with pytest.raises(SpecError, match="not a whole number of seconds") as raised:
            sshmasters.persist_seconds(None, {PERSIST_ENV: wrong})
        assert f"{PERSIST_ENV}=0" in raised.value.hint


def test_a_lock_file_that_is_no_record_of_ours_is_left_alone(tmp_path: Path) -> None:
    """Binary garbage, a fifo or a directory named like a lock is never read as a record (no traceback, no hang)."""
    (tmp_path / "aaaa.lock").write_bytes(b"\xcb\xff\x00garbage")
    os.mkfifo(tmp_path / "bbbb.lock")
    (tmp_path / "cccc.lock").mkdir()
    (tmp_path / "dddd.lock").write_text("/etc/ssh_config\nssh://ops@b.example\n")
    assert [(m.config, m.endpoint) for m in sshmasters.kept_masters(tmp_path)] == [("/etc/ssh_config", "ssh://ops@b.example")]


@pytest.mark.parametrize("value", [-1, "60", True, 1.5])
def test_the_inventory_takes_whole_seconds_only(value: object) -> None:
    document = {
        "ssh_persist": value,
        "hosts": [{"name": "a", "endpoint": "ssh://ops@a", "address": "10.0.0.2", "role": "manager"}],
    }
    with pytest.raises(InventoryError, match="field 'ssh_persist'"):
        parse_inventory(document)
    document["ssh_persist"] = 0
    assert parse_inventory(document).ssh_persist == 0


def test_the_directory_is_the_runtime_one_else_the_cache_else_tmp_when_too_long() -> None:
    assert sshmasters.control_path({"XDG_RUNTIME_DIR": "/run/user/1000"}) == Path("/run/user/1000/swarmkit-ssh")
    home_cache = Path.home() / ".cache" / "swarmkit" / "ssh"
    expected = home_cache if len(bytes(home_cache)) <= sshmasters.DIRECTORY_MAX else Path(f"/tmp/swarmkit-ssh-{os.getuid()}")
    assert sshmasters.control_path({"XDG_RUNTIME_DIR": "relative"}) == expected
    assert sshmasters.control_path({"XDG_RUNTIME_DIR": "/" + "r" * 80}) == expected


def test_the_directory_is_made_private_and_a_file_in_its_place_is_refused(runtime: Path) -> None:
    (runtime / "swarmkit-ssh").mkdir(mode=0o755)
    directory = sshmasters.control_directory({"XDG_RUNTIME_DIR": str(runtime)})
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    shutil.rmtree(directory)
    directory.write_text("")
    with pytest.raises(SshError, match="is not a directory of this user"):
        sshmasters.control_directory({"XDG_RUNTIME_DIR": str(runtime)})


def test_files_are_named_by_endpoint_and_config_and_fit_a_sockets_path() -> None:
    directory = Path("/" + "d" * (sshmasters.DIRECTORY_MAX - 1))
    one = MasterFiles.of(directory, "", "ssh://ops@kafka1")
    assert one != MasterFiles.of(directory, "/etc/other_config", "ssh://ops@kafka1")
    assert one != MasterFiles.of(directory, "", "ssh://ops@kafka1:2222")
    assert len(bytes(one.control)) + len(".0123456789abcdef") <= sshmasters.SOCKET_PATH_MAX


def record(runtime: Path, config: str, endpoint: str) -> MasterFiles:
    """A kept master's files as an opening leaves them, the master itself ended already."""
    files = MasterFiles.of(sshmasters.control_directory({"XDG_RUNTIME_DIR": str(runtime)}), config, endpoint)
    with sshmasters.locked(files, f"{config}\n{endpoint}\n"):
        files.control.write_text("")
        files.docker.write_text("")
    return files


def test_closing_by_inventory_takes_only_its_hosts_with_its_config(runtime: Path) -> None:
    environ = {"XDG_RUNTIME_DIR": str(runtime)}
    mine = record(runtime, "/inv/ssh_config", "ssh://ops@a")
    other_config = record(runtime, "", "ssh://ops@a")
    other_host = record(runtime, "/inv/ssh_config", "ssh://ops@z")
    inventory = Inventory(hosts=(Host("a", "ssh://ops@a", "10.0.0.2", "manager"),), ssh_config="/inv/ssh_config")
    closed = close_kept(inventory, environ)
    assert [c.to_dict() for c in closed] == [{"endpoint": "ssh://ops@a", "pid": None}]
    assert not any(p.exists() for p in (mine.control, mine.docker, mine.lock))
    assert [m.files for m in sshmasters.kept_masters(mine.directory)] == sorted([other_config, other_host], key=lambda f: f.name)
    assert sorted(c.endpoint for c in close_kept(None, environ)) == ["ssh://ops@a", "ssh://ops@z"]
    assert list(mine.directory.iterdir()) == []


def test_closing_without_a_directory_closes_nothing_and_makes_none(runtime: Path) -> None:
    assert close_kept(None, {"XDG_RUNTIME_DIR": str(runtime)}) == []
    assert list(runtime.iterdir()) == []
