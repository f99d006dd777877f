"""Docker engines reached over SSH (``ssh://user@host[:port]``): one connection per host, kept for the next
command, and plain errors.

Left to itself the Docker CLI runs ``ssh ... docker system dial-stdio`` for every call: an SSH
session and a remote docker process each time (and a new connection, unless shared), for the
hundreds of calls of a command.  Instead an ``SshMux`` opens, at the first call to a host, one
OpenSSH master connection (``BatchMode``: never a prompt), asks the server's docker which socket it
uses (``DOCKER_HOST`` or context there; ``/var/run/docker.sock`` by default), and forwards that
socket over the same connection to a local unix socket (``ssh -O forward`` through the master's
control socket): from then on the host is a unix-socket engine for the Docker CLI.  On the server
sshd opens the socket as the user, so the user needs the socket's group (``docker``) as for
``docker`` there, and sshd must allow unix-socket forwarding (its default).  Forwardings of the
user's ssh config (``LocalForward``...) are not set up on these masters.

The master is kept for ``persist`` idle seconds after the command (OpenSSH ``ControlPersist``; see
``sshmasters`` for where and how): the next command whose call finds the host's forwarded socket
answering uses it with no handshake; a dead or broken master is replaced.  While a command runs it
holds one connection open through each host's forward (a Docker event stream that never sends
anything), so no master idles out under it; when the command ends, also killed, that connection
closes and the idle time starts.  ``persist=0``: the masters live in a private directory of the
command, ended and removed by ``close`` (or at garbage collection or interpreter exit; a killed
swarmkit's masters end one idle second later).  Nothing is contacted before the first call.
"""

from __future__ import annotations

import json
import os
import selectors
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import quote, urlsplit

from swarmkit import fanout
from swarmkit.errors import EngineError, SshError
from swarmkit.hosts import sshmasters
from swarmkit.hosts.inventory import Inventory
from swarmkit.hosts.sshmasters import MasterFiles

CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 15  # a server that stops answering is given up after 3 missed keep-alives
OPEN_TIMEOUT_S = 30.0
REUSE_TIMEOUT_S = 10.0  # a kept master whose forward does not answer by then is replaced
# The master's first session: the socket the server's docker uses, then held open until the forward answers.
WHICH_SOCKET = "docker context inspect --format '{{.Endpoints.docker.Host}}' && exec cat >/dev/null"
# A Docker event stream no event matches: answered at once (the engine is there), then open as long as it is held.
HOLD = f"GET /events?filters={quote(json.dumps({'event': ['swarmkit-hold']}))} HTTP/1.1\r\nHost: docker\r\n\r\n".encode()


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


def _shut(holds: dict[str, socket.socket], private: Path | None, ssh: str) -> None:
    """Let go of the kept masters (their idle time starts); a command's private masters end, their directory goes."""
    for held in holds.values():
        held.close()
    if private is not None:
        for master in sshmasters.kept_masters(private):
            sshmasters.end_master(ssh, master.files)
        shutil.rmtree(private, ignore_errors=True)


def _private_directory() -> Path:
    """A new directory only this user can enter (its sockets give Docker on the servers), short enough
    for a socket's path, so a long TMPDIR falls back to /tmp."""
    base = tempfile.gettempdir()
    if len(base) > sshmasters.DIRECTORY_MAX - len("/swarmkit-ssh-XXXXXXXX"):
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="swarmkit-ssh-", dir=base))


class SshMux:
    """One SSH connection per host for the Docker CLI calls of a command, kept for the next (see the module doc)."""

    def __init__(self, config: str = "", share: bool = True, persist: int = 0, environ: Mapping[str, str] | None = None) -> None:
        """``persist``: idle seconds a master is kept after the command (0: none); ``share=False``: the CLI's own
        ``ssh`` per call, no connection kept (to measure what sharing saves)."""
        ssh = shutil.which("ssh")
        if ssh is None:
            raise EngineError(
                "the inventory names ssh:// endpoints but this machine has no ssh client", hint="install openssh-client"
            )
        self.persist = persist if share else 0
        private = None if self.persist else _private_directory()
        self._environ = os.environ if environ is None else environ
        self.directory = private or sshmasters.control_path(self._environ)  # made (and checked) by the first call
        self.options = [
            *(["-F", config] if config else []),
            *("-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}"),
        ]
        self.config, self.share = config, share
        self._ssh = ssh
        self._holds: dict[str, socket.socket] = {}  # by endpoint: the connection that keeps its master in use
        self._opened: dict[str, SshError | None] = {}  # by endpoint: None once forwarded, else why not
        self._locks: dict[str, fanout.Lock] = {}
        self._finalizer = weakref.finalize(self, _shut, self._holds, private, ssh)

    def cli_options(self, endpoint: str) -> dict[str, Any]:
        """How the host's Docker CLI client reaches it: its forwarded local socket, after opening the host's
        connection and forward (once per host, as the Engine API client does)."""
        if not self.share:
            return {"host": endpoint, "client_call": self._per_call_ssh()}
        self.open(endpoint)
        return {"host": self.forwarded(endpoint)}

    def forwarded(self, endpoint: str) -> str:
        """Where the host's Docker socket is (or will be) forwarded to, as a ``unix://`` URL for the Engine API."""
        return f"unix://{self.files(endpoint).docker}"

    def _per_call_ssh(self) -> list[str]:
        """The Docker CLI started with an ``ssh`` first on its PATH that shares nothing."""
        wrapper = self.directory / "bin" / "ssh"
        wrapper.parent.mkdir(mode=0o700, exist_ok=True)
        wrapper.write_text(f'#!/bin/sh\nexec {shlex.join([self._ssh, *self.options, "-o", "ControlPath=none"])} "$@"\n')
        wrapper.chmod(0o700)
        return ["env", f"PATH={wrapper.parent}{os.pathsep}{os.environ.get('PATH', '')}", "docker"]

    def files(self, endpoint: str) -> MasterFiles:
        return MasterFiles.of(self.directory, self.config, endpoint)

    def open(self, endpoint: str) -> None:
        """The host's connection and forward, made once (calls to the host meanwhile wait); a failure stays."""
        with self._locks.setdefault(endpoint, fanout.Lock()):
            if endpoint not in self._opened:
                try:
                    self._holds[endpoint] = self._forward(endpoint)
                    self._opened[endpoint] = None
                except SshError as error:
                    self._opened[endpoint] = error
        failed = self._opened[endpoint]
        if failed is not None:
            raise SshError(failed.message, hint=failed.hint)

    def _forward(self, endpoint: str) -> socket.socket:
        """The host's kept master when its forward answers, else a new one in its place; held for this command."""
        if self.persist:
            sshmasters.control_directory(self._environ)
        files = self.files(endpoint)
        with sshmasters.locked(files, f"{self.config}\n{endpoint}\n"):
            held = _hold(files.docker, REUSE_TIMEOUT_S) if files.control.exists() else None
            if held is None:
                sshmasters.end_master(self._ssh, files)
                held = self._start(endpoint, files)
        return held

    def _start(self, endpoint: str, files: MasterFiles) -> socket.socket:
        """A new master (kept ``persist`` idle seconds, at least one) whose first session lasts until its forward
        answers; a master that fails is ended."""
        shared = ["-o", f"ControlPath={files.control}", "-o", "ControlMaster=yes", "-o", f"ControlPersist={self.persist or 1}"]
        with tempfile.TemporaryFile() as log:
            master = subprocess.Popen(
                [self._ssh, *self.options, *shared, "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}"]
                + ["-o", "ClearAllForwardings=yes", "-o", "StreamLocalBindUnlink=yes", "-T"]
                + [*SshTarget.parse(endpoint).args(), WHICH_SOCKET],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
            )
            try:
                return self._forwarded(endpoint, files, master, log)
            except SshError:
                sshmasters.end_master(self._ssh, files)
                raise
            finally:
                _end_session(master)

    def _forwarded(self, endpoint: str, files: MasterFiles, master: subprocess.Popen[bytes], log: IO[bytes]) -> socket.socket:
        """The server's Docker socket forwarded through the new master, and held."""
        assert master.stdout is not None  # noqa: S101  # a pipe, asked for above
        answer = _first_line(master.stdout, OPEN_TIMEOUT_S)
        if not answer:
            master.terminate()
            master.wait(timeout=5)
            raise self._failed(endpoint, _text(log))
        target = SshTarget.parse(endpoint)
        remote = _remote_socket(target, answer)
        forward = [self._ssh, *self.options, "-o", f"ControlPath={files.control}", "-O", "forward"]
        forward += ["-L", f"{files.docker}:{remote}", *target.args()]
        done = subprocess.run(forward, capture_output=True, text=True, timeout=OPEN_TIMEOUT_S, stdin=subprocess.DEVNULL)
        held = _hold(files.docker, OPEN_TIMEOUT_S) if done.returncode == 0 else None
        if held is None:
            raise self._failed(endpoint, done.stderr + _text(log) + self.ask(endpoint, ASK_DOCKER))
        return held

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
        place = str(self.directory)
        return self.share and (place.lower() in text or quote(place, safe="").lower() in text)

    def ask(self, endpoint: str, command: str) -> str:
        """Run a command on the host (over its connection, when open); what it printed on stderr (for diagnosis)."""
        shared = ["-o", f"ControlPath={self.files(endpoint).control}", "-o", "ControlMaster=no"]
        asked = [self._ssh, *self.options, *shared, *SshTarget.parse(endpoint).args(), command]
        try:
            return subprocess.run(asked, capture_output=True, text=True, timeout=OPEN_TIMEOUT_S, stdin=subprocess.DEVNULL).stderr
        except subprocess.TimeoutExpired:
            return ""

    def close(self) -> None:
        self._finalizer()


def close_kept(inventory: Inventory | None, environ: Mapping[str, str] | None = None) -> list[sshmasters.ClosedMaster]:
    """End now the masters kept for the inventory's ssh:// hosts (with its ssh config), or every kept master (None)."""
    if inventory is None:
        return sshmasters.close_masters(os.environ if environ is None else environ, lambda master: True)
    endpoints = {h.endpoint for h in inventory.hosts if is_ssh(h.endpoint)}
    return sshmasters.close_masters(
        os.environ if environ is None else environ,
        lambda master: master.config == inventory.ssh_config and master.endpoint in endpoints,
    )


def _end_session(master: subprocess.Popen[bytes]) -> None:
    """End the master's first session (its stdin closes); the master itself stays, kept or ended by the caller."""
    if master.stdin is not None and not master.stdin.closed:
        master.stdin.close()
    try:
        master.wait(timeout=5)
    except subprocess.TimeoutExpired:
        master.kill()
        master.wait()


def _text(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")


def _first_line(stream: IO[bytes], timeout: float) -> str:
    """The first line a master's session printed (empty when it ended first or took too long)."""
    data, deadline = b"", time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:  # epoll: select() refuses a descriptor numbered past 1023
        selector.register(stream, selectors.EVENT_READ)
        while not data.endswith(b"\n") and time.monotonic() < deadline:
            readable = selector.select(max(0.0, deadline - time.monotonic()))
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


def _hold(path: Path, timeout: float) -> socket.socket | None:
    """A connection through the forward that the engine answered and that stays open (the master is in use while
    it is), or None: no master behind the socket, sshd refused to forward, or the user may not use the socket."""
    connection = socket.socket(socket.AF_UNIX)
    try:
        connection.settimeout(timeout)
        connection.connect(str(path))
        connection.sendall(HOLD)
        if b" 200 " in connection.recv(4096).split(b"\r\n", 1)[0]:
            return connection
    except OSError:
        pass
    connection.close()
    return None


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
