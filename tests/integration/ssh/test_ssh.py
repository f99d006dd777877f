"""swarmkit over SSH, as on real servers: the sandbox's hosts reached as ``ssh://sk-ss@HOST`` by a user
that is not root, in each host's docker group; one SSH connection per host for a whole command, kept
for the next command until it idles out or `swarmkit ssh close`; the usual SSH failures named with host
and fix, changing nothing.

tansu brokers (each its own one-node cluster): what is tested is the way to the engines, not
replication.  Commands run as the installed CLI in a process of their own, as an operator runs them,
with their own TMPDIR and XDG_RUNTIME_DIR (where the kept connections live), so what they leave behind
(control sockets, forwarded sockets, ssh masters) is seen.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from swarmkit.hosts import dockerapi, sshmasters
from swarmkit.hosts.inventory import load_inventory
from swarmkit.images.image import PROBE_TAG
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import sshd
from swarmkit.sandbox.state import Sandbox
from swarmkit.sandbox.system import wait_for
from tests.integration.sandboxes import module_sandbox

pytestmark = pytest.mark.integration

NAME = "ss"
USER = sshd.user_name(NAME)
TIMEOUT = 300

ss = module_sandbox(NAME, 3, "10.249.0.0/24", endpoint="ssh")


@pytest.fixture
def tmpdir_of_command() -> Iterator[Path]:
    """A short TMPDIR and XDG_RUNTIME_DIR for a test's commands (its ssh control sockets go there; a socket's path
    is short); the connections they kept are closed after the test."""
    directory = Path(tempfile.mkdtemp(prefix="ss-", dir="/tmp"))
    yield directory
    sshmasters.close_masters({"XDG_RUNTIME_DIR": str(directory)}, lambda master: True)
    shutil.rmtree(directory, ignore_errors=True)


def environment_of(tmp: Path, **settings: str) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp), "XDG_RUNTIME_DIR": str(tmp), **settings}


def swarmkit(tmp: Path, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """The installed CLI, in its own process, with its own TMPDIR and XDG_RUNTIME_DIR (and ``settings``)."""
    command = [str(Path(sys.executable).with_name("swarmkit")), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT, env=environment_of(tmp, **settings))


def left_behind(tmp: Path) -> list[str]:
    """Files, sockets and processes (ssh masters) commands left in their TMPDIR and XDG_RUNTIME_DIR."""
    return [str(p) for p in tmp.rglob("*") if not p.is_dir()] + processes_naming(str(tmp))


def closed(tmp: Path, inventory: str) -> list[str]:
    """What is left once `swarmkit ssh close -i INVENTORY` has ended the connections kept for the inventory."""
    result = swarmkit(tmp, "ssh", "close", "-i", inventory)
    assert result.returncode == 0, result.stdout + result.stderr
    return left_behind(tmp)


def master_pids(created: Sandbox, tmp: Path) -> list[int | None]:
    """The pid of each host's kept master (None: none runs), as `ssh -O check` on its control socket says."""
    directory = sshmasters.control_path({"XDG_RUNTIME_DIR": str(tmp)})
    config = load_inventory(created.inventory_path).ssh_config
    return [
        sshmasters.master_pid("ssh", sshmasters.MasterFiles.of(directory, config, f"ssh://{USER}@{h.name}"))
        for h in created.hosts
    ]


def connections(created: Sandbox) -> list[int]:
    return [sshd.connections(h) for h in created.hosts]


def processes_naming(marker: str) -> list[str]:
    """Command lines of processes that name ``marker`` (e.g. an ssh master of a command's control directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        with contextlib.suppress(OSError):
            if entry.name.isdigit() and entry.name != str(os.getpid()):
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found += [cmdline] if marker in cmdline else []
    return found


def over_ssh(created: Sandbox, host: str, command: str) -> subprocess.CompletedProcess[str]:
    config = sshd.client_config(created.directory)
    return subprocess.run(
        ["ssh", "-F", str(config), "-o", "BatchMode=yes", f"{USER}@{host}", command], capture_output=True, text=True, timeout=30
    )


def test_hosts_are_reached_as_a_user_of_each_hosts_docker_group(ss: Sandbox) -> None:
    document = yaml.safe_load(Path(ss.inventory_path).read_text())
    assert [h["endpoint"] for h in document["hosts"]] == [f"ssh://{USER}@ss{i}" for i in (1, 2, 3)]
    config = Path(document["ssh_config"])
    assert config == sshd.client_config(ss.directory) and "StrictHostKeyChecking yes" in config.read_text()
    assert "StrictHostKeyChecking no" not in config.read_text()
    known = (config.parent / "known_hosts").read_text().splitlines()
    assert [line.split()[:2] for line in known] == [[f"ss{i},10.249.0.1{i}", "ssh-ed25519"] for i in (1, 2, 3)]
    assert stat.S_IMODE((config.parent / "id_ed25519").stat().st_mode) == 0o600
    assert pwd.getpwnam(USER).pw_uid != 0
    for host in ss.hosts:
        group = grp.getgrnam(sshd.group_name(NAME, host.name))
        socket = (Path(host.directory) / "docker.sock").stat()
        assert USER in group.gr_mem and socket.st_gid == group.gr_gid and stat.S_IMODE(socket.st_mode) == 0o660
        answer = over_ssh(ss, host.name, "hostname; id -u; docker version --format '{{.Server.Version}}'")
        assert answer.returncode == 0, answer.stderr
        name, uid, version = answer.stdout.split()
        assert (name, uid) == (host.name, str(pwd.getpwnam(USER).pw_uid)) and version


COMMANDS = (
    ("preflight",),
    ("up", "--topics", "orders:3:1"),
    ("verify",),
    ("status",),
)  # and `down`, once the tests that want the stack deployed have run


def one_connection_per_host_kept_until_ssh_close(created: Sandbox, command: tuple[str, ...], tmp: Path) -> None:
    before = connections(created)
    result = swarmkit(tmp, *command, "-i", created.inventory_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert [after - earlier for after, earlier in zip(connections(created), before)] == [1, 1, 1]
    assert None not in master_pids(created, tmp)
    assert closed(tmp, created.inventory_path) == []


@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_command_over_ssh_opens_one_connection_per_host_kept_until_ssh_close(
    ss: Sandbox, command: tuple[str, ...], tmpdir_of_command: Path
) -> None:
    one_connection_per_host_kept_until_ssh_close(ss, command, tmpdir_of_command)


def opened_by(created: Sandbox, tmp: Path, *command: str) -> list[int]:
    """SSH connections a successful command opened to each host."""
    before = connections(created)
    result = swarmkit(tmp, *command, "-i", created.inventory_path, "--json")
    assert result.returncode == 0 and '"ok": true' in result.stdout, result.stdout + result.stderr
    return [after - earlier for after, earlier in zip(connections(created), before)]


def test_up_then_verify_use_the_same_kept_connections_until_ssh_close(ss: Sandbox, tmpdir_of_command: Path) -> None:
    """The second command opens no connection (same masters); a killed master is replaced by the next command."""
    assert opened_by(ss, tmpdir_of_command, "up") == [1, 1, 1]
    masters = master_pids(ss, tmpdir_of_command)
    assert opened_by(ss, tmpdir_of_command, "verify") == [0, 0, 0]
    assert master_pids(ss, tmpdir_of_command) == masters and None not in masters
    for host in ss.hosts:
        assert dockerapi.labelled_containers(host.docker, "com.docker.swarm.service.name=kafka_broker") == 1
    os.kill(masters[0], signal.SIGKILL)  # a master of this test's own commands, found by its control socket
    assert opened_by(ss, tmpdir_of_command, "verify") == [1, 0, 0]
    assert master_pids(ss, tmpdir_of_command)[1:] == masters[1:]
    assert closed(tmpdir_of_command, ss.inventory_path) == []


def test_verify_with_spark_over_ssh(ss: Sandbox, tmpdir_of_command: Path) -> None:
    before = connections(ss)
    result = swarmkit(tmpdir_of_command, "verify", "-i", ss.inventory_path, "--spark", "--json")
    assert result.returncode == 0 and '"ok": true' in result.stdout, result.stdout + result.stderr
    assert [after - earlier for after, earlier in zip(connections(ss), before)] == [1, 1, 1]


def test_the_installed_wheel_drives_the_hosts_over_ssh(
    ss: Sandbox, installed: Path, tmp_path: Path, tmpdir_of_command: Path
) -> None:
    """As `pipx install .` would: the wheel outside the checkout, run from another directory, no PYTHONPATH."""
    environment = {k: v for k, v in environment_of(tmpdir_of_command).items() if k != "PYTHONPATH"}
    shutil.copy(ss.inventory_path, tmp_path / "servers.yaml")
    before = connections(ss)
    for command in (("up", "--topics", "orders:3:1"), ("verify",)):
        result = subprocess.run(
            [str(installed / "swarmkit"), *command, "-i", "servers.yaml"],
            cwd=tmp_path,
            env=environment,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert result.returncode == 0, result.stdout + result.stderr
    assert [after - earlier for after, earlier in zip(connections(ss), before)] == [1, 1, 1]  # verify used up's
    assert closed(tmpdir_of_command, ss.inventory_path) == []


def test_down_over_ssh_opens_one_connection_per_host_kept_until_ssh_close(ss: Sandbox, tmpdir_of_command: Path) -> None:
    """After the tests that use the deployed stack (one `up` serves them all)."""
    one_connection_per_host_kept_until_ssh_close(ss, ("down",), tmpdir_of_command)


def test_image_push_over_ssh_without_persistence_loads_the_image_on_every_host(ss: Sandbox, tmpdir_of_command: Path) -> None:
    """The image streams from this machine's engine (built here if need be, as `up` does) over each host's one connection."""
    before = connections(ss)
    command = ("image", "push", "-i", ss.inventory_path, "--image", PROBE_TAG, "--json")
    result = swarmkit(tmpdir_of_command, *command, SWARMKIT_SSH_PERSIST="0")  # none kept: ended with the command
    assert result.returncode == 0, result.stdout + result.stderr
    assert [after - earlier for after, earlier in zip(connections(ss), before)] == [1, 1, 1]
    assert all(dockerapi.has_image(h.docker, PROBE_TAG) for h in ss.hosts)
    assert left_behind(tmpdir_of_command) == []


# --- the usual failures: each names the host and the fix, and nothing changes -------------------


def snapshot(created: Sandbox) -> list[tuple[str, int, str]]:
    """Each host's swarm state and containers, read through its own socket (not over SSH)."""
    return [
        (
            dockerapi.engine_info(h.docker).swarm_state,
            dockerapi.labelled_containers(h.docker, "com.docker.swarm.service.name"),
            ",".join(sorted(c.id for c in h.docker.client.container.list(all=True))),
        )
        for h in created.hosts
    ]


def ssh_config_with(created: Sandbox, tmp: Path, option: str, value: str) -> Path:
    """An inventory whose ssh_config differs from the sandbox's in one option."""
    config = sshd.client_config(created.directory).read_text().splitlines()
    (tmp / "ssh_config").write_text("\n".join(f"    {option} {value}" if option in line else line for line in config) + "\n")
    return inventory_with(created, tmp, ssh_config=str(tmp / "ssh_config"))


def inventory_with(created: Sandbox, tmp: Path, ssh_config: str = "", endpoint: str = "") -> Path:
    document = yaml.safe_load(Path(created.inventory_path).read_text())
    document["ssh_config"] = ssh_config or document["ssh_config"]
    if endpoint:
        document["hosts"][1]["endpoint"] = endpoint
    path = tmp / "inventory.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@contextlib.contextmanager
def unknown_host_keys(created: Sandbox, tmp: Path) -> Iterator[Path]:
    (tmp / "known_hosts").write_text("")
    yield ssh_config_with(created, tmp, "UserKnownHostsFile", str(tmp / "known_hosts"))


@contextlib.contextmanager
def another_key(created: Sandbox, tmp: Path) -> Iterator[Path]:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "other")], check=True)
    yield ssh_config_with(created, tmp, "IdentityFile", str(tmp / "other"))


@contextlib.contextmanager
def out_of_docker_group(created: Sandbox, tmp: Path) -> Iterator[Path]:
    group = sshd.group_name(NAME, created.hosts[1].name)
    subprocess.run(["gpasswd", "--delete", USER, group], check=True, capture_output=True)
    try:
        yield Path(created.inventory_path)
    finally:
        subprocess.run(["gpasswd", "--add", USER, group], check=True, capture_output=True)


@contextlib.contextmanager
def without_docker(created: Sandbox, tmp: Path) -> Iterator[Path]:
    """The second host's sshd gives sessions a PATH without docker (as a server without Docker)."""
    host = created.hosts[1]
    config = Path(host.directory) / "sshd_config"
    original = config.read_text()
    reconfigure(created, config, original + "SetEnv PATH=/usr/sbin:/sbin\n", "/usr/sbin:/sbin")
    try:
        yield Path(created.inventory_path)
    finally:
        reconfigure(created, config, original, "/usr/local/bin:/usr/bin:/bin:/usr/games")


def reconfigure(created: Sandbox, config: Path, text: str, sessions_path: str) -> None:
    """New sshd settings for the second host: sshd re-executes itself on SIGHUP; wait until sessions see them."""
    host = created.hosts[1]
    config.write_text(text)
    os.kill(host.sshd_pid, signal.SIGHUP)
    deadline = time.monotonic() + 10
    while over_ssh(created, host.name, "echo $PATH").stdout.strip() != sessions_path:
        assert time.monotonic() < deadline, f"sshd on {host.name} did not take its new settings"
        time.sleep(0.1)


@contextlib.contextmanager
def port_closed(created: Sandbox, tmp: Path) -> Iterator[Path]:
    yield inventory_with(created, tmp, endpoint=f"ssh://{USER}@{created.hosts[1].name}:2222")


FAILURES = {
    "unknown host key": (unknown_host_keys, "SSH host key of ss2 is not known", "ssh-keyscan -p 22 ss2"),
    "key refused": (another_key, f"ss2 refused the SSH key for user {USER}", "authorized_keys on ss2"),
    "not in docker group": (out_of_docker_group, f"user {USER} may not use Docker on ss2", f"usermod -aG docker {USER}"),
    "docker missing": (without_docker, "the docker command is missing on ss2", "install Docker Engine"),
    "port closed": (port_closed, "nothing answers SSH on ss2 port 2222", "open port 2222/tcp"),
}


@pytest.mark.parametrize("failure", FAILURES)
def test_ssh_failure_names_host_and_fix_and_changes_nothing(
    ss: Sandbox, failure: str, tmp_path: Path, tmpdir_of_command: Path
) -> None:
    setup, message, fix = FAILURES[failure]
    before = snapshot(ss)
    with setup(ss, tmp_path) as inventory:
        result = swarmkit(tmpdir_of_command, "up", "-i", str(inventory), "--topics", "audit:1:1", "--json")
    assert result.returncode != 0
    assert message in result.stdout and fix in result.stdout, result.stdout + result.stderr
    assert snapshot(ss) == before
    assert closed(tmpdir_of_command, str(inventory)) == []


def test_a_stopped_docker_is_named_with_its_fix(ss: Sandbox, tmpdir_of_command: Path) -> None:
    """The Docker CLI only says it cannot connect: the server's own docker is asked why, also when the connection
    was kept from an earlier command (late in the module: it restarts an engine)."""
    swarmkit(tmpdir_of_command, "preflight", "-i", ss.inventory_path)  # keeps a connection to every host
    assert None not in master_pids(ss, tmpdir_of_command)
    sandbox.stop_engine(NAME, "ss2")
    try:
        result = swarmkit(tmpdir_of_command, "preflight", "-i", ss.inventory_path, "--json")
    finally:
        sandbox.start_engine(NAME, "ss2")
    assert result.returncode != 0
    assert "Docker does not run on ss2" in result.stdout and "start Docker on ss2" in result.stdout, result.stdout
    assert closed(tmpdir_of_command, ss.inventory_path) == []


def masters(tmp: Path) -> list[str]:
    """The SSH master connections of the commands whose TMPDIR is ``tmp`` (ssh names a master by its control socket)."""
    return [c for c in processes_naming(str(tmp)) if c.startswith("ssh: ") and "[mux]" in c]


def test_a_killed_swarmkit_without_persistence_leaves_no_ssh_connection_behind(ss: Sandbox, tmpdir_of_command: Path) -> None:
    """Each master is held by a connection of swarmkit's: SIGKILL (no clean-up runs) closes it, and with
    SWARMKIT_SSH_PERSIST=0 the master ends a second later.  Late in the module: the `up` it kills may leave the
    stack half deployed."""
    environment = environment_of(tmpdir_of_command, SWARMKIT_SSH_PERSIST="0")
    command = [str(Path(sys.executable).with_name("swarmkit")), "up", "-i", ss.inventory_path, "--topics", "orders:3:1"]
    running = subprocess.Popen(command, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(masters(tmpdir_of_command)) == 3, 60, "an SSH master to every host")
    finally:
        running.kill()
        running.wait()
    wait_for(lambda: processes_naming(str(tmpdir_of_command)) == [], 10, "the ssh processes of a killed swarmkit to end")


def test_sandbox_down_ends_the_connections_kept_to_its_hosts(ss: Sandbox, tmpdir_of_command: Path) -> None:
    """Last in the module: the sandbox is gone after it (the module's own teardown then finds nothing to remove)."""
    swarmkit(tmpdir_of_command, "preflight", "-i", ss.inventory_path)  # keeps a connection to every host
    assert None not in master_pids(ss, tmpdir_of_command)
    result = swarmkit(tmpdir_of_command, "sandbox", "down", "--name", NAME)
    assert result.returncode == 0 and f"SSH connection ssh://{USER}@ss1" in result.stdout, result.stdout + result.stderr
    assert left_behind(tmpdir_of_command) == []
