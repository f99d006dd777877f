"""ssh:// endpoints: the Docker CLI's ssh failures read as their cause, and the shared-connection
directory made and removed without contacting anything."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from swarmkit.errors import InventoryError, SshError
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Host, Inventory, parse_inventory
from swarmkit.hosts.ssh import SshMux, SshTarget, diagnose

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


def test_a_daemon_the_remote_docker_cannot_reach_is_asked_about() -> None:
    """The CLI hides why the remote docker could not connect: the server's own docker is asked."""

    class Asked(SshMux):
        def __init__(self) -> None:
            self.asked: list[tuple[str, str]] = []

        def ask(self, endpoint: str, command: str) -> str:
            self.asked.append((endpoint, command))
            return "permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock"

    mux = Asked()
    said = "Cannot connect to the Docker daemon at http://docker.example.com. Is the docker daemon running?"
    error = diagnose(ENDPOINT, said, mux)
    assert error is not None and "may not use Docker on kafka2.example.net" in error.message
    assert [endpoint for endpoint, _ in mux.asked] == [ENDPOINT]


def test_targets_keep_user_host_and_port() -> None:
    assert SshTarget.parse("ssh://ops@10.0.0.5:2222").args() == ["-l", "ops", "-p", "2222", "--", "10.0.0.5"]
    assert str(SshTarget.parse("ssh://ops@kafka1")) == "ops@kafka1"


def test_shared_connections_live_in_a_private_directory_removed_on_close() -> None:
    inventory = Inventory(hosts=(Host("a", ENDPOINT, "10.0.0.2", "manager"),))
    with DockerHosts.from_inventory(inventory) as docker:
        assert docker.mux is not None
        directory = docker.mux.directory
        assert (directory.stat().st_mode & 0o077) == 0 and os.access(directory / "bin" / "ssh", os.X_OK)
        assert docker[inventory.hosts[0]].client.client_config.client_call[1] == f"PATH={directory / 'bin'}:{os.environ['PATH']}"
        assert list((directory / "control").iterdir()) == []  # nothing contacted before a call
    assert not directory.exists()


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
