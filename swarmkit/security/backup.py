"""A stack's kept state (the store of ``security.pki``) as one file sealed with a passphrase, and back (pure).

What the store holds cannot be read back from the swarm: the CA's key, the SCRAM passwords, every broker's
certificate (a certificate issued again is a new secret and a restart), a CA rotation's step.  Without it
nobody can add a user, rotate a certificate or even log in to a sasl_ssl cluster; exported, it is what a
second operator (or a new laptop) imports.

The file is a header (``MAGIC``, the format's version, the scrypt cost, salt, a passphrase check, nonce)
followed by the payload, JSON, sealed with AES-256-GCM under a key scrypt derives from the passphrase; the
header is the AEAD's associated data, so a changed byte anywhere is found.  The scrypt output also gives
the passphrase check kept in the header: a wrong passphrase is told apart from a damaged file.  Everything
is checked before anything is written: the header, the passphrase, the seal, the payload's fields, the
names of its files and its CA.
"""

from __future__ import annotations

import hmac
import json
import os
import re
import secrets
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt

from swarmkit import files, names
from swarmkit.errors import SpecError
from swarmkit.security import certs, rotation
from swarmkit.security.certs import CertKey
from swarmkit.security.settings import write_private

MAGIC = b"SWARMKIT-STATE\n"
VERSION = 1
HEADER = struct.Struct(">15sBBBB16s32s12s")  # magic, version, log2(n), r, p, salt, passphrase check, nonce
SCRYPT = (15, 8, 1)  # log2(n), r, p: about 32 MiB and a fraction of a second
READ_COST = range(14, 21)  # log2(n) a file may ask for: more is a damaged (or hostile) header, never run
MAX_BYTES = 16 * 1024 * 1024
MIN_PASSPHRASE = 12
KEPT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", re.ASCII)
DERIVED = ("trust.crt",)  # made again from the CAs on first use
HINT = "give a file `swarmkit state export` wrote"


@dataclass(frozen=True)
class State:
    """A stack's store as exported: its files (name -> text) and the KRaft cluster id it belongs to."""

    stack: str
    cluster_id: str | None
    files: dict[str, str]
    exported: str = ""

    def cas(self) -> tuple[str, ...]:
        """The CA certificates kept (the current one, and during a rotation the next or the previous one)."""
        stems = (rotation.CURRENT, rotation.NEXT, rotation.OLD)
        return tuple(text for stem in stems if (text := self.files.get(f"{stem}.crt")))

    def users(self) -> list[str]:
        return sorted(name[len("user-") : -len(".password")] for name in self.files if name.startswith("user-"))

    def to_json(self) -> str:
        data = {"format": VERSION, "stack": self.stack, "cluster_id": self.cluster_id, "exported": self.exported}
        return json.dumps({**data, "files": self.files}, sort_keys=True)


def read_store(directory: Path) -> dict[str, str]:
    """The store's files (name -> text), those made again on use left out; {} when there is none."""
    if not directory.is_dir():
        return {}
    kept = {}
    for path in sorted(directory.iterdir()):
        if KEPT_NAME.fullmatch(path.name) and path.name not in DERIVED and (text := files.read_kept(path)) is not None:
            kept[path.name] = text
    return kept


def seal(state: State, passphrase: str, cost: tuple[int, int, int] = SCRYPT) -> bytes:
    check_passphrase(passphrase)
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    key, check = _derive(passphrase, salt, cost)
    header = HEADER.pack(MAGIC, VERSION, *cost, salt, check, nonce)
    return header + AESGCM(key).encrypt(nonce, state.to_json().encode("utf-8"), header)


def check_passphrase(passphrase: str) -> str:
    if len(passphrase) < MIN_PASSPHRASE:
        raise SpecError(
            f"the passphrase has {len(passphrase)} characters, fewer than {MIN_PASSPHRASE}",
            hint="this file opens the cluster's CA key and passwords: choose a long passphrase and keep it apart from the file",
        )
    return passphrase


def _derive(passphrase: str, salt: bytes, cost: tuple[int, int, int]) -> tuple[bytes, bytes]:
    log2n, r, p = cost
    derived = Scrypt(salt=salt, length=64, n=2**log2n, r=r, p=p).derive(passphrase.encode("utf-8"))
    return derived[:32], derived[32:]


@dataclass(frozen=True)
class Sealed:
    """A state file's header, checked, and its sealed payload: what can be known before the passphrase."""

    header: bytes
    cost: tuple[int, int, int]
    salt: bytes
    check: bytes
    nonce: bytes
    body: bytes


def read_sealed(data: bytes, source: str) -> Sealed:
    """The file's header and body; a file that is not one swarmkit wrote, or is cut short, is bad input."""
    if not data.startswith(MAGIC[: len(data)]) or not data:
        raise SpecError(f"{source}: not a swarmkit state file (its first bytes are not swarmkit's header)", hint=HINT)
    if len(data) < HEADER.size + 16:
        raise SpecError(
            f"{source}: truncated: {len(data)} bytes, fewer than a state file's header and seal ({HEADER.size + 16})",
            hint="copy the whole file again from where it was kept",
        )
    _, version, log2n, r, p, salt, check, nonce = HEADER.unpack_from(data)
    if version != VERSION:
        raise SpecError(
            f"{source}: state file format {version}, this swarmkit reads {VERSION}", hint="import it with a newer swarmkit"
        )
    if log2n not in READ_COST or r != SCRYPT[1] or not 1 <= p <= 4:
        raise SpecError(f"{source}: damaged header (scrypt cost 2^{log2n}, r={r}, p={p})", hint=HINT)
    return Sealed(data[: HEADER.size], (log2n, r, p), salt, check, nonce, data[HEADER.size :])


def unseal(sealed: Sealed, passphrase: str, source: str) -> State:
    """The state inside, checked whole; a wrong passphrase, a damaged or cut file, a payload that is not a
    stack's store: each is bad input, and nothing has been written."""
    key, check = _derive(passphrase, sealed.salt, sealed.cost)
    if not hmac.compare_digest(check, sealed.check):
        raise SpecError(f"{source}: wrong passphrase", hint="give the passphrase the state was exported with")
    try:
        text = AESGCM(key).decrypt(sealed.nonce, sealed.body, sealed.header)
    except InvalidTag:
        raise SpecError(
            f"{source}: damaged or truncated: its content fails its integrity check (the passphrase is right)",
            hint="copy the whole file again from where it was kept; nothing was written",
        ) from None
    return parse_payload(text, source)


def parse_payload(text: bytes, source: str) -> State:
    try:
        data = json.loads(text.decode("utf-8"))
        stack, cluster_id, kept, exported = data["stack"], data["cluster_id"], data["files"], data.get("exported", "")
    except (ValueError, KeyError, TypeError):
        raise SpecError(f"{source}: the sealed content is not a swarmkit state", hint=HINT) from None
    if not isinstance(kept, dict) or not all(isinstance(v, str) for v in kept.values()):
        raise SpecError(f"{source}: the state's files are not name -> text", hint=HINT)
    bad = [name for name in kept if not isinstance(name, str) or not KEPT_NAME.fullmatch(name)]
    if bad:
        raise SpecError(f"{source}: the state names a file {names.shown(str(bad[0]))} swarmkit never keeps", hint=HINT)
    names.stack_name(str(stack))
    if cluster_id is not None:
        names.cluster_id(str(cluster_id))
    state = State(str(stack), cluster_id, dict(kept), str(exported))
    check_state_ca(state, source)
    return state


def check_state_ca(state: State, source: str) -> CertKey:
    cert, key = state.files.get("ca.crt"), state.files.get("ca.key")
    if not cert or not key:
        raise SpecError(f"{source}: the state holds no cluster CA (ca.crt and ca.key)", hint=HINT)
    try:
        return certs.check_ca(CertKey(cert, key))
    except SpecError as error:
        raise SpecError(f"{source}: the state's CA: {error.message}", hint=HINT) from None


def write_sealed(target: Path, data: bytes) -> None:
    """The file whole or not at all (0600): written beside its place, then moved in."""
    staged = target.with_name(f".{target.name}.swarmkit-new")
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    staged.replace(target)


def install(directory: Path, kept: dict[str, str]) -> None:
    """The store becomes exactly ``kept``: a new directory is filled beside it (0700, files 0600), then swapped
    in for the old one, which is removed; a failure while filling leaves the old store as it was."""
    directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    staged, replaced = (directory.with_name(f".{directory.name}.{what}") for what in ("importing", "replaced"))
    for stale in (staged, replaced):
        shutil.rmtree(stale, ignore_errors=True)
    staged.mkdir(mode=0o700)
    for name, text in kept.items():
        write_private(staged / name, text)
    if directory.exists():
        directory.rename(replaced)
    staged.rename(directory)
    shutil.rmtree(replaced, ignore_errors=True)


def changed(current: dict[str, str], incoming: dict[str, str]) -> list[str]:
    """The store's files an import would change or remove (a file only the import brings is no loss)."""
    return sorted(name for name, text in current.items() if incoming.get(name) != text)
