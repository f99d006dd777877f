"""Docker engines reached over SSH (``ssh://user@host[:port]``): one connection per host, and plain errors.

Left to itself the Docker CLI runs ``ssh ... docker system dial-stdio`` for every call: an SSH
session and a remote docker process each time (and a new connection, unless shared), for the
hundreds of calls of a command.  Instead an ``SshMux`` opens, at the first call to a host, one
OpenSSH master connection (``BatchMode``: never a prompt), asks the server's docker which socket it
uses (``DOCKER_HOST`` or context there; ``/var/run/docker.sock`` by default), and forwards that
socket over the same connection to a local unix socket in a private directory (``ssh -O forward``
through the master's control socket): from then on the host is a unix-socket engine for the Docker
CLI.  On the server sshd opens the socket as the user, so the user needs the socket's group
(``docker``) as for ``docker`` there, and sshd must allow unix-socket forwarding (its default).
Forwardings of the user's ssh config (``LocalForward``...) are not set up on these masters.
``close`` ends the masters and removes the directory (also at garbage collection or interpreter
exit); a master whose swarmkit died sees its stdin close and ends too.  Nothing is contacted
before the first call.
"""

from __future__ import annotations

import functools
import hashlib
import os
import select
import shlex
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import quote, urlsplit

from swarmkit.errors import EngineError, SshError
from swarmkit.lazy import lazy

if TYPE_CHECKING:
    import python_on_whales as whales
    from python_on_whales import client_config as whales_config
else:
    whales = lazy("python_on_whales")
    whales_config = lazy("python_on_whales.client_config")

CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 15  # a server that stops answering is given up after 3 missed keep-alives
OPEN_TIMEOUT_S = 30.0
SOCKET_PATH_MAX = 104  # bytes in a unix socket's path, less on some systems than Linux's 107
# The master's one session: the socket the server's docker uses, then held open until swarmkit ends
# (its stdin closes, also when swarmkit is killed: then the master ends as well).
WHICH_SOCKET = "docker context inspect --format '{{.Endpoints.docker.Host}}' && exec cat >/dev/null"
PING = b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n"


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


def _shut(directory: Path, masters: list[subprocess.Popen[bytes]]) -> None:
    """End every master connection, then remove the directory."""
    for master in masters:
        master.terminate()
    for master in masters:
        try:
            master.wait(timeout=5)
        except subprocess.TimeoutExpired:
            master.kill()
    shutil.rmtree(directory, ignore_errors=True)


def _private_directory() -> Path:
    """A new directory only this user can enter (its sockets give Docker on the servers), short enough
    for a socket's path: at most 107 bytes, of which the directory's own name and ``/docker/NAME.sock``
    take 51, so a long TMPDIR falls back to /tmp."""
    base = tempfile.gettempdir()
    if len(base) > SOCKET_PATH_MAX - len("/swarmkit-ssh-XXXXXXXX/docker/0123456789abcdef.sock"):
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="swarmkit-ssh-", dir=base))


@functools.cache
def _forwarded_config() -> type[whales_config.ClientConfig]:
    """python-on-whales' client settings, opening the host's forward before the first command is built."""

    class ForwardedConfig(whales_config.ClientConfig):
        opener: Callable[[], None] = staticmethod(lambda: None)

        @property
        def docker_cmd(self) -> whales_config.Command:
            self.opener()
            return super().docker_cmd

    return ForwardedConfig


class SshMux:
    """One SSH connection per host for the Docker CLI calls of one command (see the module doc)."""

    def __init__(self, config: str = "", share: bool = True) -> None:
        """``share=False``: the CLI's own ``ssh`` per call, no connection kept (to measure what sharing saves)."""
        ssh = shutil.which("ssh")
        if ssh is None:
            raise EngineError(
                "the inventory names ssh:// endpoints but this machine has no ssh client", hint="install openssh-client"
            )
        self.directory = _private_directory()
        for part in ("control", "docker", "log", "bin"):
            (self.directory / part).mkdir(mode=0o700)
        self.options = [
            *(["-F", config] if config else []),
            *("-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"),
        ]
        self.share = share
        self._ssh = ssh
        self._masters: list[subprocess.Popen[bytes]] = []
        self._opened: dict[str, SshError | None] = {}  # by endpoint: None once forwarded, else why not
        self._locks: dict[str, threading.Lock] = {}
        self._finalizer = weakref.finalize(self, _shut, self.directory, self._masters)

    def client(self, endpoint: str) -> whales.DockerClient:
        """The host's Docker client: its forwarded local socket, opened by the first command built."""
        if not self.share:
            return whales.DockerClient(host=endpoint, client_call=self._per_call_ssh())
        config = _forwarded_config()(host=f"unix://{self._path('docker', endpoint)}")
        config.opener = functools.partial(self.open, endpoint)  # type: ignore[attr-defined]
        return whales.DockerClient(client_config=config)

    def socket(self, endpoint: str) -> str:
        """The host's Docker socket as a ``unix://`` URL for the Engine API, forwarded over its one connection."""
        self.open(endpoint)
        return self.forwarded(endpoint)

    def forwarded(self, endpoint: str) -> str:
        """Where the host's Docker socket is (or will be) forwarded to, as a ``unix://`` URL."""
        return f"unix://{self._path('docker', endpoint)}"

    def _per_call_ssh(self) -> list[str]:
        """The Docker CLI started with an ``ssh`` first on its PATH that shares nothing."""
        wrapper = self.directory / "bin" / "ssh"
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.join([self._ssh, *self.options, "-o", "ControlPath=none"])} "$@"\n')
        wrapper.chmod(0o700)
        return ["env", f"PATH={wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}", "docker"]

    def _path(self, part: str, endpoint: str) -> Path:
        name = hashlib.sha256(endpoint.encode()).hexdigest()[:16]
        return self.directory / part / (f"{name}.sock" if part == "docker" else name)

    def open(self, endpoint: str) -> None:
        """The host's connection and forward, made once (calls to the host meanwhile wait); a failure stays."""
        with self._locks.setdefault(endpoint, threading.Lock()):
            if endpoint not in self._opened:
                try:
                    self._forward(endpoint)
                    self._opened[endpoint] = None
                except SshError as error:
                    self._opened[endpoint] = error
        failed = self._opened[endpoint]
        if failed is not None:
            raise SshError(failed.message, hint=failed.hint)

    def _forward(self, endpoint: str) -> None:
        target, local, log = SshTarget.parse(endpoint), self._path("docker", endpoint), self._path("log", endpoint)
        shared = ["-o", f"ControlPath={self._path('control', endpoint)}"]
        with log.open("wb") as stderr:
            master = subprocess.Popen(
                [self._ssh, *self.options, *shared, "-o", "ControlMaster=yes", "-o", "ControlPersist=no"]
                + ["-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}", "-o", "ClearAllForwardings=yes", "-T"]
                + [*target.args(), WHICH_SOCKET],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
            )
        self._masters.append(master)
        assert master.stdout is not None  # noqa: S101  # a pipe, asked for above
        answer = _first_line(master.stdout, OPEN_TIMEOUT_S)
        if not answer:
            master.terminate()
            master.wait(timeout=5)
            raise self._failed(endpoint, log.read_text(errors="replace"))
        remote = _remote_socket(target, answer)
        forward = [self._ssh, *self.options, *shared, "-O", "forward", "-L", f"{local}:{remote}", *target.args()]
        done = subprocess.run(forward, capture_output=True, text=True, timeout=OPEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
        if done.returncode != 0 or not _answers_ping(local):
            raise self._failed(endpoint, done.stderr + log.read_text(errors="replace") + self.ask(endpoint, ASK_DOCKER))

    def _failed(self, endpoint: str, said: str) -> SshError:
        """What went wrong opening a host's connection, with its fix (what ssh said, when not a usual failure)."""
        known = _classify(SshTarget.parse(endpoint), endpoint, said.lower())
        last = said.strip().splitlines()[-1] if said.strip() else "nothing"
        return known or SshError(
            f"could not reach Docker on {SshTarget.parse(endpoint).host} over SSH ({endpoint}): ssh said {last}",
            hint=f"`ssh {SshTarget.parse(endpoint)} docker version` must work from this machine, without a prompt",
        )

    def carried(self, text: str) -> bool:
        """Whether a Docker CLI message names one of this mux's forwarded sockets (plain or URL-escaped)."""
        place = str(self.directory / "docker")
        return self.share and (place.lower() in text or quote(place, safe="").lower() in text)

    def ask(self, endpoint: str, command: str) -> str:
        """Run a command on the host (over its connection, when open); what it printed on stderr (for diagnosis)."""
        shared = ["-o", f"ControlPath={self._path('control', endpoint)}", "-o", "ControlMaster=no"]
        asked = [self._ssh, *self.options, *shared, *SshTarget.parse(endpoint).args(), command]
        try:
            return subprocess.run(asked, capture_output=True, text=True, timeout=OPEN_TIMEOUT_S, stdin=subprocess.DEVNULL).stderr
        except subprocess.TimeoutExpired:
            return ""

    def close(self) -> None:
        self._finalizer()


def _first_line(stream: IO[bytes], timeout: float) -> str:
    """The first line a master's session printed (empty when it ended first or took too long)."""
    data, deadline = b"", time.monotonic() + timeout
    while not data.endswith(b"\n") and time.monotonic() < deadline:
        readable, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(stream.fileno(), 4096) if readable else b""
        if not chunk:
            break
        data += chunk
    return data.decode(errors="replace").strip() if data.endswith(b"\n") else ""


def _remote_socket(target: SshTarget, docker_host: str) -> str:
    """The path of the unix socket the server's docker uses; another kind of endpoint cannot be forwarded."""
    path = docker_host.removeprefix("unix://")
    if path == docker_host or ":" in path or not path.startswith("/"):
        raise SshError(
            f"the docker of {target.user} on {target.host} talks to {docker_host}, not to a local unix socket",
            hint=f"swarmkit forwards the server's Docker socket: unset DOCKER_HOST/DOCKER_CONTEXT for {target.user}'s"
            f" SSH sessions on {target.host} (or point them at unix:///var/run/docker.sock)",
        )
    return path


def _answers_ping(path: Path) -> bool:
    """The engine answers through the forward (sshd may refuse to forward, or the user may not use the socket)."""
    try:
        with socket.socket(socket.AF_UNIX) as connection:
            connection.settimeout(OPEN_TIMEOUT_S)
            connection.connect(str(path))
            connection.sendall(PING)
            return b" 200 " in connection.recv(4096).split(b"\r\n", 1)[0]
    except OSError:
        return False


# --- what went wrong: the usual SSH failures, each with its fix --------------------------------

DOCKER_DENIED = "permission denied while trying to connect to the docker"
NO_DAEMON_SEEN = "cannot connect to the docker daemon at http://docker.example.com"  # the CLI's SSH placeholder URL
ASK_DOCKER = "docker version --format '{{.Server.Version}}'"


def diagnose(endpoint: str, stderr: str, mux: SshMux | None = None) -> SshError | None:
    """The Docker CLI's stderr for an ``ssh://`` endpoint, read as one of the usual SSH failures (or None).

    Through a forwarded socket (``mux``) the CLI says only that it could not talk to that socket:
    then the server's own docker is asked and what it says is read instead.  Without sharing, the
    CLI reports a failed ``ssh ... docker system dial-stdio`` with that command line (or its
    placeholder URL, http://docker.example.com) and what ssh, or the remote shell and docker, printed."""
    if not is_ssh(endpoint):
        return None
    text = stderr.lower()
    if mux is not None and (mux.carried(text) or NO_DAEMON_SEEN in text):
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
            ("administratively prohibited",),
            f"the sshd of {target.host} does not let {target.user} forward the Docker socket",
            f"in {target.host}'s sshd_config: AllowStreamLocalForwarding yes (its default) and no DisableForwarding"
            f" for {target.user}; swarmkit talks to Docker through its one SSH connection",
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
