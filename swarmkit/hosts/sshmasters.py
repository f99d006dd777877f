"""The OpenSSH masters swarmkit keeps between commands: where they live, who may touch them, how they end.

A kept master outlives its command by an idle time (OpenSSH ``ControlPersist``), so the next command
to the same host skips the handshake.  Its control socket and its forwarded Docker socket live in
the user's own directory (0700: the forwarded socket gives Docker on the server to whoever can open
it), ``$XDG_RUNTIME_DIR/swarmkit-ssh``, else ``~/.cache/swarmkit/ssh``.  Each host's files are named
after its endpoint and ssh config (a hash: a socket's path is short), and its lock file, held while
a master is checked, opened or closed (another swarmkit process waits), records both, so masters can
be closed by inventory or by sandbox without contacting anything.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from swarmkit import files, numbers, waits
from swarmkit.errors import SpecError, SshError

PERSIST_S = 60  # as Ansible's ControlPersist
PERSIST_ENV = "SWARMKIT_SSH_PERSIST"
SOCKET_PATH_MAX = 104  # bytes in a unix socket's path, less on some systems than Linux's 107
# ssh binds a master's control socket as NAME.ctl plus a random 17-byte suffix, then renames it
DIRECTORY_MAX = SOCKET_PATH_MAX - len("/0123456789abcdef.ctl.0123456789abcdef")
EXIT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class MasterFiles:
    """One host's files in a control directory: control socket, forwarded Docker socket, lock (and record)."""

    directory: Path
    name: str

    @classmethod
    def of(cls, directory: Path, config: str, endpoint: str) -> MasterFiles:
        return cls(directory, hashlib.sha256(f"{config}\n{endpoint}".encode()).hexdigest()[:16])

    @property
    def control(self) -> Path:
        return self.directory / f"{self.name}.ctl"

    @property
    def docker(self) -> Path:
        return self.directory / f"{self.name}.sock"

    @property
    def lock(self) -> Path:
        return self.directory / f"{self.name}.lock"


@dataclass(frozen=True)
class KeptMaster:
    """A master as its lock file records it: the endpoint and ssh config it reaches the host with."""

    endpoint: str
    config: str
    files: MasterFiles


@dataclass(frozen=True)
class ClosedMaster:
    endpoint: str
    pid: int | None  # the master that was ended; None: it had ended already (its files were removed)

    def to_dict(self) -> dict[str, object]:
        return {"endpoint": self.endpoint, "pid": self.pid}


def persist_seconds(configured: int | None, environ: Mapping[str, str]) -> int:
    """How long an idle master is kept: $SWARMKIT_SSH_PERSIST, else the inventory's ``ssh_persist``, else 60 s."""
    raw = environ.get(PERSIST_ENV, "").strip()
    if not raw:
        return PERSIST_S if configured is None else configured
    try:
        return numbers.whole(raw, 0, numbers.INT32_MAX)
    except SpecError:
        raise SpecError(
            f"{PERSIST_ENV}={raw!r} is not a whole number of seconds in ASCII digits",
            hint=f"e.g. {PERSIST_ENV}=0 to close SSH connections with each command, or unset it (60 s)",
        ) from None


def control_path(environ: Mapping[str, str]) -> Path:
    """Where this user's kept masters live (not created here); /tmp/swarmkit-ssh-UID when the others are too long."""
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    candidates = [Path(runtime) / "swarmkit-ssh"] if runtime and Path(runtime).is_absolute() else []
    candidates += [Path.home() / ".cache" / "swarmkit" / "ssh", Path(f"/tmp/swarmkit-ssh-{os.getuid()}")]
    return next(c for c in candidates if len(bytes(c)) <= DIRECTORY_MAX)


def control_directory(environ: Mapping[str, str]) -> Path:
    """The directory of kept masters, made 0700; one this user does not own is refused, never used."""
    directory = control_path(environ)
    try:
        directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        found = directory.lstat()
    except OSError as error:
        raise SshError(
            f"cannot make {directory}, where swarmkit keeps its SSH connections: {error.strerror}",
            hint=f"set XDG_RUNTIME_DIR to a directory of your own, or {PERSIST_ENV}=0 to keep no connection",
        ) from None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
        raise SshError(
            f"{directory}, where swarmkit keeps its SSH connections, is not a directory of this user",
            hint="remove it, or set XDG_RUNTIME_DIR to a directory of your own",
        )
    if stat.S_IMODE(found.st_mode) != 0o700:
        directory.chmod(0o700)
    return directory


@contextlib.contextmanager
def locked(files: MasterFiles, record: str = "") -> Iterator[None]:
    """The host's files to this caller alone (other swarmkit processes wait); the lock records ``record`` if given."""
    while True:
        fd = os.open(files.lock, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if os.stat(files.lock).st_ino == os.fstat(fd).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)  # a close removed the file meanwhile: lock the new one
    try:
        if record:
            os.ftruncate(fd, 0)
            os.write(fd, record.encode())
        yield
    finally:
        os.close(fd)


def _control(ssh: str, control: Path, operation: str) -> subprocess.CompletedProcess[str]:
    """``ssh -O OPERATION`` on a control socket (the user's ssh config is not read: only the socket counts)."""
    command = [ssh, "-F", "/dev/null", "-o", f"ControlPath={control}", "-O", operation, "swarmkit"]
    return subprocess.run(command, capture_output=True, text=True, timeout=EXIT_TIMEOUT_S, stdin=subprocess.DEVNULL)


def master_pid(ssh: str, files: MasterFiles) -> int | None:
    """The pid of the host's running master (``ssh -O check``), None when there is none."""
    if not files.control.exists():
        return None
    running = re.search(r"pid=(\d+)", _control(ssh, files.control, "check").stderr)
    return int(running.group(1)) if running else None


def end_master(ssh: str, files: MasterFiles) -> int | None:
    """End the host's master if one runs (``ssh -O exit``, waiting until it is gone) and remove its sockets."""
    pid = master_pid(ssh, files)
    if pid is not None:
        _control(ssh, files.control, "exit")
        _wait_gone(pid)
    files.control.unlink(missing_ok=True)
    files.docker.unlink(missing_ok=True)
    return pid


def _wait_gone(pid: int) -> None:
    """Until the ended master's process is gone; one that lingers is terminated (it is this user's own ssh)."""

    def gone() -> bool | waits.NotYet:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return waits.NotYet()

    if isinstance(waits.until(gone, EXIT_TIMEOUT_S / 2, first=0.02, longest=0.5), waits.NotYet):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, 15)


def kept_masters(directory: Path) -> list[KeptMaster]:
    """The masters a control directory records, running or not."""
    found = []
    for lock in sorted(directory.glob("*.lock")) if directory.is_dir() else []:
        with contextlib.suppress(FileNotFoundError, files.FileProblem):  # gone meanwhile, or not a record of ours
            config, _, rest = files.read_text(lock).partition("\n")
            found.append(KeptMaster(rest.strip(), config, MasterFiles(directory, lock.stem)))
    return found


def close_masters(environ: Mapping[str, str], which: Callable[[KeptMaster], bool]) -> list[ClosedMaster]:
    """End the kept masters ``which`` selects and remove their files (a master in use: its command loses it)."""
    ssh = shutil.which("ssh") or "ssh"
    closed = []
    for master in kept_masters(control_path(environ)):
        if which(master):
            with locked(master.files):
                closed.append(ClosedMaster(master.endpoint, end_master(ssh, master.files)))
                master.files.lock.unlink(missing_ok=True)
    return closed
