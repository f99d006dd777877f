"""ssh:// endpoints: the Docker CLI's ssh failures read as their cause, the forwarded sockets' directory
made and removed without contacting anything, and a failed connection tried once."""

from __future__ import annotations

import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from swarmkit.errors import InventoryError, SshError
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Host, Inventory, parse_inventory
from swarmkit.hosts.ssh import SshMux, SshTarget, _remote_socket, diagnose
from swarmkit.hosts.sshmasters import PERSIST_ENV

ENDPOINT = "ssh://ops@kafka2.example.net"
CLI = (
    'error during connect: Get "http://docker.example.com/v1.50/info": command [ssh -o ConnectTimeout=30 -T -l ops --'
    " kafka2.example.net docker system dial-stdio] has exited with exit status {status}, make sure the URL is valid,"
    " and Docker 18.09 or later is installed on the remote host: stderr={stderr}"
)

CASES = {
    "unknown host key": (255, "Host key verification failed.", "SSH host key of kafka2.example.net is not known", "ssh-keyscan"),
    "host key changed": (
        255,
        "@@@@@@@@@@@\n@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @\n... Host key verification failed.",
        "SSH host key of kafka2.example.net has CHANGED",
        "ssh-keygen -R kafka2.example.net",
    ),
    "key refused": (
        255,
        "ops@kafka2.example.net: Permission denied (publickey).",
        "kafka2.example.net refused the SSH key for user ops",
        "ssh-copy-id ops@kafka2.example.net",
    ),
    "docker missing": (127, "sh: 1: docker: not found", "the docker command is missing on kafka2.example.net", "install"),
    "not in docker group": (
        1,
        "failed to open the raw stream connection: dial unix /var/run/docker.sock: connect: permission denied",
        "user ops may not use Docker on kafka2.example.net",
        "usermod -aG docker ops",
    ),
    "port closed": (
        255,
        "ssh: connect to host kafka2.example.net port 22: Connection refused",
        "nothing answers SSH on kafka2.example.net port 22",
        "open port 22/tcp",
    ),
    "name unknown": (
        255,
        "ssh: Could not resolve hostname kafka2.example.net: Name or service not known",
        "cannot resolve kafka2.example.net",
        "DNS",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_docker_clis_ssh_failures_name_host_and_fix(case: str) -> None:
    status, stderr, message, fix = CASES[case]
    error = diagnose(ENDPOINT, CLI.format(status=status, stderr=stderr))
    assert isinstance(error, SshError) and message in error.message and ENDPOINT in error.message
    assert fix in error.hint


def test_other_failures_are_not_read_as_ssh_failures() -> None:
    pull = "Error response from daemon: Get http://10.0.0.1:5000/v2/: dial tcp 10.0.0.1:5000: connect: connection refused"
    assert diagnose(ENDPOINT, pull) is None
    assert diagnose("unix:///var/run/docker.sock", CLI.format(status=255, stderr="Host key verification failed.")) is None


SOCKET = "unix:///tmp/swarmkit-ssh-x/docker/0123456789abcdef.sock"


class Answering(SshMux):
    """A mux whose server's docker says ``said`` when asked (nothing is contacted)."""

    def __init__(self, said: str) -> None:
        self.directory, self.share, self.said = Path("/tmp/swarmkit-ssh-x"), True, said
        self.asked: list[tuple[str, str]] = []

    def ask(self, endpoint: str, command: str) -> str:
        self.asked.append((endpoint, command))
        return self.said


@pytest.mark.parametrize(
    "said",
    [
        f"Cannot connect to the Docker daemon at {SOCKET}. Is the docker daemon running?",
        'error during connect: Get "http://%2Ftmp%2Fswarmkit-ssh-x%2Fdocker%2F0123456789abcdef.sock/v1.47/info": EOF',
    ],
)
def test_a_daemon_the_forward_cannot_reach_is_asked_about(said: str) -> None:
    """Through the forwarded socket the CLI cannot say why: the server's own docker is asked."""
    mux = Answering("permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock")
    error = diagnose(ENDPOINT, said, mux)
    assert error is not None and "may not use Docker on kafka2.example.net" in error.message
    assert [endpoint for endpoint, _ in mux.asked] == [ENDPOINT]


def test_an_engines_own_error_through_the_forward_is_not_asked_about() -> None:
    mux = Answering("")
    assert diagnose(ENDPOINT, "Error response from daemon: No such container: x", mux) is None
    assert mux.asked == []


def test_targets_keep_user_host_and_port() -> None:
    assert SshTarget.parse("ssh://ops@10.0.0.5:2222").args() == ["-l", "ops", "-p", "2222", "--", "10.0.0.5"]
    assert str(SshTarget.parse("ssh://ops@kafka1")) == "ops@kafka1"


@pytest.fixture(autouse=True)
def own_control_directory(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Kept masters in a short directory of the test's own (a socket's path is short), never the user's; the
    persist setting as by default."""
    runtime = Path(tempfile.mkdtemp(prefix="sk-", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.delenv(PERSIST_ENV, raising=False)
    yield runtime / "swarmkit-ssh"
    shutil.rmtree(runtime)


TWO_HOSTS = Inventory(hosts=(Host("a", ENDPOINT, "10.0.0.2", "manager"), Host("b", ENDPOINT + ":2222", "10.0.0.3", "worker")))


def test_hosts_are_local_sockets_in_the_users_own_directory_made_by_the_first_call(own_control_directory: Path) -> None:
    with DockerHosts.from_inventory(TWO_HOSTS) as docker:
        assert docker.mux is not None and docker.mux.directory == own_control_directory and docker.mux.persist == 60
        hosts = [docker[h].address for h in TWO_HOSTS.hosts]
        assert len(set(hosts)) == 2 and all(h and h.startswith(f"unix://{own_control_directory}/") for h in hosts)
        assert not own_control_directory.exists()  # nothing made, nothing contacted before a call


def test_without_persistence_the_sockets_live_in_a_private_directory_removed_on_close(
    monkeypatch: pytest.MonkeyPatch, own_control_directory: Path
) -> None:
    monkeypatch.setenv(PERSIST_ENV, "0")
    with DockerHosts.from_inventory(TWO_HOSTS) as docker:
        assert docker.mux is not None and docker.mux.persist == 0
        directory = docker.mux.directory
        assert directory != own_control_directory and stat.S_IMODE(directory.stat().st_mode) == 0o700
        assert docker[TWO_HOSTS.hosts[0]].address == f"unix://{docker.mux.files(ENDPOINT).docker}"
    assert not directory.exists() and not own_control_directory.exists()


def test_a_failed_connection_fails_every_call_to_that_host_without_reconnecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first call opens the connection; later calls get the same error, not one more attempt each."""
    (tmp_path / "ssh_config").write_text("Host *\n    Hostname 127.0.0.1\n    Port 1\n")
    inventory = Inventory(hosts=(Host("a", ENDPOINT, "10.0.0.2", "manager"),), ssh_config=str(tmp_path / "ssh_config"))
    with DockerHosts.from_inventory(inventory) as docker:
        assert docker.mux is not None
        started = []
        monkeypatch.setattr(docker.mux, "_start", lambda *args, start=docker.mux._start: started.append(1) or start(*args))
        engine = docker[inventory.hosts[0]]  # its CLI client is made on the forward, opened first
        with pytest.raises(SshError, match="nothing answers SSH on kafka2.example.net port 22") as first:
            engine.client.system.info()
        with pytest.raises(SshError) as second:
            engine.client.container.list()
        assert second.value.message == first.value.message and started == [1]
        files = docker.mux.files(ENDPOINT)
        assert stat.S_IMODE(files.directory.stat().st_mode) == 0o700
        assert not files.control.exists() and not files.docker.exists()


@pytest.mark.parametrize("docker_host", ["tcp://10.0.0.5:2375", "ssh://other@host", "unix://relative.sock"])
def test_a_server_docker_not_on_a_unix_socket_is_named_with_its_fix(docker_host: str) -> None:
    with pytest.raises(SshError, match=f"talks to {docker_host}") as raised:
        _remote_socket(SshTarget.parse(ENDPOINT), docker_host)
    assert "unset DOCKER_HOST" in raised.value.hint


def test_a_server_docker_socket_is_forwarded_by_its_path() -> None:
    assert _remote_socket(SshTarget.parse(ENDPOINT), "unix:///run/user/1000/docker.sock") == "/run/user/1000/docker.sock"


def test_a_forward_the_server_refuses_is_named_with_its_fix() -> None:
    said = "channel 3: open failed: administratively prohibited: open failed"
    error = diagnose(ENDPOINT, f"error during connect: EOF {SOCKET}", Answering(said))
    assert error is not None and "does not let ops forward the Docker socket" in error.message
    assert "AllowStreamLocalForwarding yes" in error.hint


def test_no_ssh_directory_without_ssh_hosts() -> None:
    inventory = Inventory(hosts=(Host("a", "unix:///run/docker.sock", "10.0.0.2", "manager"),))
    assert DockerHosts.from_inventory(inventory).mux is None


def test_the_inventory_names_an_ssh_config_relative_to_itself(tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text("Host *\n")
    document = {
        "ssh_config": "ssh_config",
        "hosts": [{"name": "a", "endpoint": ENDPOINT, "address": "10.0.0.2", "role": "manager"}],
    }
    assert parse_inventory(document, base_dir=tmp_path).ssh_config == str(tmp_path / "ssh_config")
    document["ssh_config"] = "missing"
    with pytest.raises(InventoryError, match="field 'ssh_config': no such file"):
        parse_inventory(document, base_dir=tmp_path)
