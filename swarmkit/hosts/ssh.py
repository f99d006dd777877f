"""Docker engines reached over SSH (``ssh://user@host[:port]``): shared connections and plain errors.

For every call the Docker CLI runs ``ssh -l USER -p PORT -- HOST docker system dial-stdio``, with
the ``ssh`` it finds on PATH; without help each call is a new SSH connection (TCP, key exchange,
authentication), and swarmkit makes hundreds of calls per command.  An ``SshMux`` is a private
directory holding an ``ssh`` wrapper that adds OpenSSH connection sharing (``ControlMaster``, the
control sockets in that directory) and ``BatchMode`` (never a prompt: a failure is an error), and
the PATH the Docker CLI is started with.  The first call to a host opens its master connection
(calls to that host meanwhile wait for it); ``close`` ends them all and removes the directory
(also at garbage collection or interpreter exit, for library callers that never call it).
Nothing is contacted before the first call.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from swarmkit.errors import EngineError, SshError

CONNECT_TIMEOUT_S = 10
PERSIST_S = 120  # a master left behind by a killed swarmkit ends itself after this long idle
OPEN_TIMEOUT_S = 30.0
SOCKET_PATH_MAX = 104  # bytes in a unix socket's path, less on some systems than Linux's 107


@dataclass(frozen=True)
class SshTarget:
    """Where an ``ssh://`` endpoint points: user, host and port, as ssh's own arguments."""

    user: str
    host: str
    port: int | None = None

    @classmethod
    def parse(cls, endpoint: str) -> SshTarget:
        parts = urlsplit(endpoint)
        return cls(parts.username or "", parts.hostname or "", parts.port)

    def args(self) -> list[str]:
        port = ["-p", str(self.port)] if self.port else []
        return ["-l", self.user, *port, "--", self.host]

    def __str__(self) -> str:
        return f"{self.user}@{self.host}" + (f":{self.port}" if self.port else "")


def is_ssh(endpoint: str) -> bool:
    return endpoint.startswith("ssh://")


def _shut(directory: Path, ssh: str) -> None:
    """End every master connection (``ssh -O exit`` on its control socket), then remove the directory."""
    for socket in (directory / "control").glob("*"):
        subprocess.run([ssh, "-o", f"ControlPath={socket}", "-O", "exit", "swarmkit"], capture_output=True, timeout=10)
    shutil.rmtree(directory, ignore_errors=True)


def _private_directory() -> Path:
    """A new directory only this user can enter, short enough for a control socket's path.

    A socket's path has at most 107 bytes; ``control/`` and ssh's 40-character %C hash take 49,
    so a long TMPDIR falls back to /tmp."""
    base = tempfile.gettempdir()
    if len(base) > SOCKET_PATH_MAX - len("/swarmkit-ssh-XXXXXXXX/control/") - 40:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="swarmkit-ssh-", dir=base))


WRAPPER = """#!/bin/sh
# The ssh swarmkit gives the Docker CLI: every call to a host goes through one master connection.
# The first call to a host opens it while other calls to that host wait (a mkdir lock per host), so
# a burst of parallel calls still opens one connection; a failed open reports as ssh does.
shared() {{ {ssh} "$@"; }}
if ! shared -O check "$@" 2>/dev/null; then
    key=$(printf '%s' "$*" | cksum)
    lock={locks}/"${{key%% *}}"
    tries=0
    until mkdir "$lock" 2>/dev/null || [ "$tries" -gt 400 ]; do tries=$((tries + 1)); sleep 0.05; done
    shared -O check "$@" 2>/dev/null || shared -o ControlMaster=yes -f -N "$@" || {{ status=$?; rmdir "$lock"; exit "$status"; }}
    rmdir "$lock"
fi
exec {ssh} "$@"
"""


class SshMux:
    """One shared SSH connection per host for the Docker CLI calls of one command (see the module doc)."""

    def __init__(self, config: str = "", share: bool = True) -> None:
        """``share=False``: the same ssh settings, but a connection per call (to measure what sharing saves)."""
        ssh = shutil.which("ssh")
        if ssh is None:
            raise EngineError(
                "the inventory names ssh:// endpoints but this machine has no ssh client", hint="install openssh-client"
            )
        self.directory = _private_directory()
        for part in ("control", "locks", "bin"):
            (self.directory / part).mkdir(mode=0o700)
        sharing = ["-o", f"ControlPath={self.directory}/control/%C", "-o", f"ControlPersist={PERSIST_S}"]
        self.options = [
            *(["-F", config] if config else []),
            *(sharing if share else ["-o", "ControlPath=none"]),
            *("-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"),
        ]
        command = shlex.join([ssh, *self.options])
        wrapper = self.directory / "bin" / "ssh"
        script = WRAPPER.format(ssh=command, locks=shlex.quote(str(self.directory / "locks")))
        wrapper.write_text(script if share else f'#!/bin/sh\nexec {command} "$@"\n')
        wrapper.chmod(0o700)
        self._ssh = ssh
        self._finalizer = weakref.finalize(self, _shut, self.directory, ssh)

    @property
    def client_call(self) -> list[str]:
        """How python-on-whales starts the Docker CLI: with the wrapper first on its PATH."""
        return ["env", f"PATH={self.directory / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "docker"]

    def ask(self, endpoint: str, command: str) -> str:
        """Run a command on the host over its shared connection; what it printed on stderr (for diagnosis)."""
        asked = [self._ssh, *self.options, *SshTarget.parse(endpoint).args(), command]
        try:
            return subprocess.run(asked, capture_output=True, text=True, timeout=OPEN_TIMEOUT_S, stdin=subprocess.DEVNULL).stderr
        except subprocess.TimeoutExpired:
            return ""

    def close(self) -> None:
        self._finalizer()


# --- what went wrong: the usual SSH failures, each with its fix --------------------------------

DOCKER_DENIED = "permission denied while trying to connect to the docker"
NO_DAEMON_SEEN = "cannot connect to the docker daemon at http://docker.example.com"  # the CLI's SSH placeholder URL
ASK_DOCKER = "docker version --format '{{.Server.Version}}'"


def diagnose(endpoint: str, stderr: str, mux: SshMux | None = None) -> SshError | None:
    """The Docker CLI's stderr for an ``ssh://`` endpoint, read as one of the usual SSH failures (or None).

    The CLI reports a failed ``ssh ... docker system dial-stdio`` with that command line (or its
    placeholder URL, http://docker.example.com) and what ssh, or the remote shell and docker, printed.  When SSH worked but the remote docker could not
    reach its daemon, the CLI says only that it cannot connect: then the server's own docker is
    asked, through ``mux``, and what it says is read instead."""
    if not is_ssh(endpoint):
        return None
    text = stderr.lower()
    if NO_DAEMON_SEEN in text and mux is not None:
        return _classify(SshTarget.parse(endpoint), endpoint, mux.ask(endpoint, ASK_DOCKER).lower())
    if "dial-stdio" not in text and "docker.example.com" not in text:
        return None  # not the SSH leg: e.g. a registry that refuses connections is the engine's error
    return _classify(SshTarget.parse(endpoint), endpoint, text)


def _classify(target: SshTarget, endpoint: str, text: str) -> SshError | None:
    port = target.port or 22
    for markers, message, hint in (
        (
            ("remote host identification has changed",),
            f"the SSH host key of {target.host} has CHANGED since it was recorded",
            f"if the server was really reinstalled, check its new key with its admin, then: ssh-keygen -R {target.host}",
        ),
        (
            ("host key verification failed", "no matching host key", "host key for"),
            f"the SSH host key of {target.host} is not known on this machine",
            f"check the key's fingerprint with the server's admin, then record it: ssh-keyscan -p {port} {target.host}"
            " >> ~/.ssh/known_hosts (or the UserKnownHostsFile your ssh config names)",
        ),
        (
            ("permission denied (publickey", "too many authentication failures"),
            f"{target.host} refused the SSH key for user {target.user}",
            f"add this machine's public key to ~{target.user}/.ssh/authorized_keys on {target.host}"
            f" (ssh-copy-id {target}), or name the key with IdentityFile in your ssh config",
        ),
        (
            (DOCKER_DENIED, "connect: permission denied"),
            f"user {target.user} may not use Docker on {target.host}",
            f"on {target.host}: sudo usermod -aG docker {target.user} (the group owning the Docker socket)",
        ),
        (
            ("docker: not found", "docker: command not found", "exit status 127"),
            f"the docker command is missing on {target.host} (for user {target.user}'s non-interactive SSH sessions)",
            f"install Docker Engine (18.09 or later) on {target.host}; `ssh {target} docker version` must work",
        ),
        (
            ("cannot connect to the docker daemon at unix",),
            f"Docker does not run on {target.host} (its docker found no daemon at its socket)",
            f"start Docker on {target.host} (e.g. sudo systemctl start docker); `ssh {target} docker version` must work",
        ),
        (
            ("connection refused", "connection timed out", "no route to host", "operation timed out"),
            f"nothing answers SSH on {target.host} port {port}",
            f"start sshd on {target.host} or open port {port}/tcp to it from this machine"
            " (or give the right port: ssh://USER@HOST:PORT)",
        ),
        (
            ("could not resolve hostname",),
            f"this machine cannot resolve {target.host}",
            "fix the endpoint's host name (or its DNS / /etc/hosts entry)",
        ),
    ):
        if any(marker in text for marker in markers):
            return SshError(f"{message} ({endpoint})", hint=hint)
    return None
