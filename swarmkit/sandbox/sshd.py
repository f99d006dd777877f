"""A sandbox reached over SSH, as real servers are (``swarmkit sandbox up --endpoint ssh``).

- One user, ``sk-NAME``: not root, no password (keys only), its home in the sandbox's directory.
- On each host a group ``skd-NAME-HOST`` owns that host's Docker socket (``dockerd --group``), and
  the user is in it: the user may use Docker there as a member of ``docker`` may on a server.
- On each host an OpenSSH server on ADDRESS:22, in the host's namespace, with its own host key,
  accepting only that user and only keys.  In its private /run, ``/run/docker.sock`` (the Docker
  CLI's default, ``/var/run`` being ``/run``) is the host's socket: the server's ``docker`` names
  it and sshd forwards it to swarmkit with no setting, as on a server.
- On this machine, in the sandbox's ``ssh/`` directory: the key pair, a known_hosts file written
  from the hosts' own public keys (nothing is learnt on first use) and an ssh_config naming both,
  which the inventory names (``ssh_config``).

``down`` removes the user and the groups by their names (also after a crash).
"""

from __future__ import annotations

import grp
import os
import pwd
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from swarmkit.errors import SandboxError
from swarmkit.hosts import sshmasters
from swarmkit.sandbox.system import run, spawn_in_host, wait_for

if TYPE_CHECKING:
    from swarmkit.sandbox.state import SandboxHost

SSH_PORT = 22
SSHD = "/usr/sbin/sshd"
COMMANDS = ("ssh", "ssh-keygen", SSHD, "useradd", "userdel", "groupadd", "groupdel", "gpasswd")
START_TIMEOUT = 20.0
ACCEPTED = "Accepted publickey for "


def user_name(sandbox: str) -> str:
    return f"sk-{sandbox}"


def group_name(sandbox: str, host: str) -> str:
    return f"skd-{sandbox}-{host}"


def client_directory(sandbox_directory: Path) -> Path:
    """This machine's side: key pair, known_hosts, ssh_config (and the user's home, for authorized_keys)."""
    return sandbox_directory / "ssh"


def client_config(sandbox_directory: Path) -> Path:
    return client_directory(sandbox_directory) / "ssh_config"


def check_new(sandbox: str) -> None:
    """Before anything is created: the user is not taken (by another run or another program)."""
    try:
        pwd.getpwnam(user_name(sandbox))
    except KeyError:
        return
    raise SandboxError(
        f"user {user_name(sandbox)} already exists on this machine",
        hint=f"a crashed sandbox left it: swarmkit sandbox down --name {sandbox}",
    )


def create_user(sandbox: str, sandbox_directory: Path) -> None:
    """The user, its home with the key pair's public half in authorized_keys (sshd's StrictModes hold)."""
    directory = client_directory(sandbox_directory)
    directory.mkdir(parents=True, exist_ok=True)
    key = directory / "id_ed25519"
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"swarmkit sandbox {sandbox}", "-f", str(key))
    user, home = user_name(sandbox), directory / "home"
    run("useradd", "--home-dir", str(home), "--no-create-home", "--shell", "/bin/sh", "--user-group", "--password", "*", user)
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text(key.with_suffix(".pub").read_text())
    run("chown", "-R", f"{user}:{user}", str(home))
    run("chmod", "-R", "go-rwx", str(home))


def add_host_group(sandbox: str, host: str) -> None:
    """The host's docker group, with the user in it; before the host's dockerd starts (it chowns its socket)."""
    run("groupadd", group_name(sandbox, host))
    run("gpasswd", "--add", user_name(sandbox), group_name(sandbox, host))


def _server_config(sandbox: str, host: SandboxHost, host_key: Path) -> str:
    return "\n".join(
        [
            f"# sshd of sandbox host {host.name} (written by swarmkit): keys only, only {user_name(sandbox)}",
            f"ListenAddress {host.address}:{SSH_PORT}",
            f"HostKey {host_key}",
            f"AllowUsers {user_name(sandbox)}",
            "AuthorizedKeysFile .ssh/authorized_keys",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "PermitRootLogin no",
            "UsePAM no",
            "StrictModes yes",
            "X11Forwarding no",
            "PrintMotd no",
            "LogLevel INFO",
            "",
        ]
    )


def start_server(sandbox: str, host: SandboxHost) -> int:
    """sshd on the host's address, port 22, with /run/docker.sock the host's socket; returns its pid."""
    directory = Path(host.directory)
    host_key = directory / "ssh_host_ed25519_key"
    if not host_key.exists():
        run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"{host.name} host key", "-f", str(host_key))
    config = directory / "sshd_config"
    config.write_text(_server_config(sandbox, host, host_key))
    script = f"mkdir -m 755 /run/sshd && ln -s {directory}/docker.sock /run/docker.sock && exec {SSHD} -D -e -f {config}"
    pid = spawn_in_host(host.netns, host.name, script, directory / "sshd.log")
    wait_for(lambda: _answers(host.address), START_TIMEOUT, f"sshd on {host.name} (see {directory / 'sshd.log'})")
    return pid


def _answers(address: str) -> bool:
    try:
        with socket.create_connection((address, SSH_PORT), timeout=1):
            return True
    except OSError:
        return False


def write_client_files(sandbox: str, sandbox_directory: Path, hosts: tuple[SandboxHost, ...]) -> Path:
    """known_hosts from the hosts' public keys and the ssh_config the inventory names; returns its path."""
    directory = client_directory(sandbox_directory)
    known_hosts = directory / "known_hosts"
    lines = []
    for host in hosts:
        key = " ".join((Path(host.directory) / "ssh_host_ed25519_key.pub").read_text().split()[:2])
        lines.append(f"{host.name},{host.address} {key}")
    known_hosts.write_text("\n".join(lines) + "\n")
    config = client_config(sandbox_directory)
    config.write_text(
        f"# ssh settings for the hosts of swarmkit sandbox '{sandbox}' (the inventory's ssh_config)\n"
        "Host *\n"
        f"    IdentityFile {directory / 'id_ed25519'}\n"
        "    IdentitiesOnly yes\n"
        f"    UserKnownHostsFile {known_hosts}\n"
        "    GlobalKnownHostsFile /dev/null\n"
        "    StrictHostKeyChecking yes\n"
        "    PasswordAuthentication no\n"
    )
    return config


def connections(host: SandboxHost) -> int:
    """SSH connections the host's sshd accepted so far (one log line per authenticated connection)."""
    log = Path(host.directory) / "sshd.log"
    return log.read_text(errors="replace").count(ACCEPTED) if log.exists() else 0


def close_connections(sandbox_directory: Path) -> list[str]:
    """End the SSH connections swarmkit keeps to the sandbox's hosts (those made with its ssh_config)."""
    config = client_config(sandbox_directory).resolve()
    closed = sshmasters.close_masters(os.environ, lambda master: Path(master.config).resolve() == config)
    return [f"SSH connection {master.endpoint}" for master in closed]


def remove_accounts(sandbox: str) -> list[str]:
    """The user (its own group goes with it) and the hosts' docker groups, found by name."""
    removed = []
    user = user_name(sandbox)
    try:
        pwd.getpwnam(user)
    except KeyError:
        pass
    else:
        run("userdel", user)
        removed.append(f"user {user}")
    for group in sorted(g.gr_name for g in grp.getgrall() if g.gr_name.startswith(f"skd-{sandbox}-")):
        run("groupdel", group)
        removed.append(f"group {group}")
    return removed
