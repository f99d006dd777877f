"""The cluster's certificates and passwords, kept beside the inventory where only this user reads them.

``.swarmkit/<inventory>.<stack>.pki/`` (mode 0700, files 0600) holds the cluster CA (``ca.crt``,
``ca.key``: put your own there before the first deploy to use it), the internal certificate
brokers and controllers authenticate each other with, one certificate per broker id, and SCRAM
passwords.  Swarm secrets cannot be read back, so this is where swarmkit finds them again: an
unchanged certificate keeps its secret's name and restarts nothing.  A broker certificate is
issued again when what its broker advertises changed, when another CA is in place, or when it
expires within ``RENEW_DAYS`` (a new secret, and a rolling update).  During a CA rotation
(``swarmkit.security.rotation``) the store also holds the next or the previous CA, and the trust
bundle and the chain brokers present follow the rotation's step.
"""

from __future__ import annotations

import secrets
import socket
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from swarmkit import files, names
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Inventory
from swarmkit.security import certs, rotation
from swarmkit.security.certs import CertKey
from swarmkit.security.settings import (
    ADMIN_USER,
    INTERNAL_NAME,
    ClientSecurity,
    SecurityMaterial,
    write_private,
)

RENEW_DAYS = 30


def store_dir(inventory: Inventory, stack_name: str) -> Path:
    """``.swarmkit/<inventory>.<stack>.pki`` beside the inventory (a checked stack name: never outside it)."""
    source = Path(inventory.path or "inventory.yaml")
    return source.parent / ".swarmkit" / f"{source.stem}.{names.stack_name(stack_name)}.pki"


@dataclass(frozen=True)
class Pki:
    directory: Path

    def _write(self, name: str, content: str) -> None:
        """Whole or not at all: a run interrupted here, or a reader meanwhile, never finds half a file
        (``ca-rotation.json`` is how the next run resumes)."""
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        staged = self.directory / f".{name}.new"
        write_private(staged, content)
        staged.replace(self.directory / name)

    def _read(self, name: str) -> str | None:
        path = self.directory / name
        return files.read_kept(path)

    def _pair(self, stem: str) -> CertKey | None:
        cert, key = self._read(f"{stem}.crt"), self._read(f"{stem}.key")
        return CertKey(cert, key) if cert and key else None

    def _put_pair(self, stem: str, pair: CertKey) -> None:
        self._write(f"{stem}.key", pair.key_pem)
        self._write(f"{stem}.crt", pair.cert_pem)

    def kept_ca(self) -> CertKey:
        """The CA in the store, checked; SpecError when it is missing or broken (nothing is made)."""
        kept = self._pair("ca")
        if kept is None:
            raise SpecError(
                f"{self.directory}: no cluster CA (ca.crt and ca.key) kept here",
                hint="run from the directory of the inventory the cluster was deployed with; its store keeps the CA",
            )
        return certs.check_ca(kept)

    def rotation(self) -> rotation.Rotation | None:
        """The CA rotation under way (None: none)."""
        return rotation.parse_state(self._read(rotation.STATE_FILE))

    def trust(self) -> str:
        """The CA bundle nodes and clients trust now: the CA, and during a rotation the other one."""
        state = self.rotation()
        pairs = [self._pair(stem) if stem != rotation.CURRENT else self.ca() for stem in rotation.trusted(state)]
        return certs.bundle(*(pair.cert_pem for pair in pairs if pair))

    def trust_file(self, trust: str) -> str:
        """``trust.crt`` in the store, holding ``trust``: what a client configuration printed here names."""
        if self._read("trust.crt") != trust:
            self._write("trust.crt", trust)
        return str(self.directory / "trust.crt")

    def chain(self) -> str:
        """What a node presents after its own certificate: its CA certified by the other CA of the last rotation."""
        return certs.cross_signatures(self._read(rotation.CROSS) or "", self.ca().cert_pem)

    def begin_step(self, step: int) -> None:
        """The store's part of a rotation step (idempotent: an interrupted step is entered again)."""
        if step == 1 and self._pair(rotation.NEXT) is None:
            made, cross = certs.successor(self.kept_ca())
            self._write(rotation.CROSS, cross)
            self._put_pair(rotation.NEXT, made)
        if step == 2 and (following := self._pair(rotation.NEXT)) is not None:
            if self._pair(rotation.OLD) is None:
                self._put_pair(rotation.OLD, self.kept_ca())
            self._put_pair(rotation.CURRENT, following)
            for suffix in (".crt", ".key"):
                (self.directory / f"{rotation.NEXT}{suffix}").unlink(missing_ok=True)
        self._write(rotation.STATE_FILE, rotation.state_text(rotation.Rotation(step, rolled=False)))

    def step_rolled(self, step: int) -> None:
        """The cluster runs ``step``; after the last one the old CA's files go."""
        if step == rotation.STEPS[-1]:
            for suffix in (".crt", ".key"):
                (self.directory / f"{rotation.OLD}{suffix}").unlink(missing_ok=True)
            (self.directory / rotation.STATE_FILE).unlink(missing_ok=True)
            return
        self._write(rotation.STATE_FILE, rotation.state_text(rotation.Rotation(step, rolled=True)))

    def ca(self) -> CertKey:
        """The kept (or user-given) CA; a new one on first use."""
        kept = self._pair("ca")
        if kept is not None:
            return certs.check_ca(kept)
        if self._read("ca.crt") or self._read("ca.key"):
            raise SpecError(f"{self.directory}: ca.crt without ca.key (or the reverse)", hint="give both PEM files")
        made = certs.new_ca(f"swarmkit cluster CA ({self.directory.name})")
        self._put_pair("ca", made)
        return made

    def leaf(self, stem: str, common_name: str, sans: Sequence[str], renew: bool = False) -> CertKey:
        """The kept certificate ``stem`` if it still fits (and not ``renew``), else a new one (kept for next time)."""
        ca = self.ca()
        kept = self._pair(stem)
        if (
            not renew
            and kept is not None
            and sorted(certs.sans_of(kept.cert_pem)) == sorted(sans)
            and certs.signed_by(kept.cert_pem, ca.cert_pem)
            and certs.days_left(kept.cert_pem) > RENEW_DAYS
        ):
            return kept
        made = certs.issue(ca, common_name, sans)
        self._put_pair(stem, made)
        return made

    def password(self, user: str, create: bool = True) -> str | None:
        """The user's SCRAM password, made on first use when ``create``."""
        kept = self._read(f"user-{names.user_name(user)}.password")
        if kept is not None or not create:
            return kept
        made = secrets.token_urlsafe(24)
        self._write(f"user-{user}.password", made)
        return made

    def forget(self, user: str) -> None:
        (self.directory / f"user-{names.user_name(user)}.password").unlink(missing_ok=True)

    def users(self) -> list[str]:
        found = self.directory.glob("user-*.password") if self.directory.is_dir() else []
        return sorted(path.name[len("user-") : -len(".password")] for path in found)


@dataclass(frozen=True)
class Expiry:
    """Days until the first CA in the trust bundle and the first broker certificate expire (None: none kept)."""

    ca_days: int | None
    broker_days: int | None

    def text(self) -> str:
        def days(value: int | None) -> str:
            return "none kept" if value is None else f"{value} days left"

        return f"CA: {days(self.ca_days)}; broker certificates: {days(self.broker_days)} (the first to expire)"


def expiry(pki: Pki) -> Expiry:
    """From the store alone (what the cluster was last given); reads, never makes or checks a CA."""
    trusted = [pki.directory / f"{stem}.crt" for stem in rotation.trusted(pki.rotation())]
    cas = [text for path in trusted if (text := files.read_kept(path))]
    leaves = [text for path in sorted(pki.directory.glob("broker-*.crt")) if (text := files.read_kept(path))]
    return Expiry(certs.fewest_days(cas), certs.fewest_days(leaves))


def presented_certificate(host: str, port: int, timeout: float) -> str:
    """The PEM certificate a TLS listener presents (read, not trusted: the caller checks it)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection((host, port), timeout=timeout) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    if not der:
        raise OSError(f"{host}:{port} presented no certificate")
    return ssl.DER_cert_to_PEM_cert(der)


def material(pki: Pki, brokers: Sequence[tuple[int, Sequence[str]]], renew: bool = False) -> SecurityMaterial:
    """Everything the stack mounts: each broker's certificate for exactly the names it advertises (all of them
    issued again when ``renew``), followed by the chain to the CA; the trust bundle of the rotation's step."""
    chain = pki.chain()

    def presented(stem: str, name: str, sans: Sequence[str]) -> CertKey:
        leaf = pki.leaf(stem, name, sans, renew)
        return replace(leaf, cert_pem=leaf.cert_pem + chain)

    return SecurityMaterial(
        ca_pem=pki.trust(),
        internal=presented("internal", INTERNAL_NAME, ()),
        brokers=tuple(
            (broker_id, presented(f"broker-{broker_id}", f"swarmkit broker {broker_id}", sans)) for broker_id, sans in brokers
        ),
        admin_password=pki.password(ADMIN_USER) or "",
    )


def for_stack(inventory: Inventory, stack_name: str, security: str, user: str = ADMIN_USER) -> ClientSecurity | None:
    """How ``user`` (swarmkit's admin by default) connects to a stack in ``security`` mode; None in plaintext."""
    if security == "plaintext":
        return None
    return client_security(Pki(store_dir(inventory, stack_name)), security, user)


def by_address(security: ClientSecurity | None) -> ClientSecurity | None:
    """For a client dialling a host's address: a broker's certificate names what it advertises, not the address."""
    return replace(security, verify_hostname=False) if security else None


def admin_by_address(inventory: Inventory, stack_name: str, security: str) -> ClientSecurity | None:
    """swarmkit's admin login to a stack deployed in ``security`` mode, for dialling its hosts' addresses (day-2)."""
    return by_address(for_stack(inventory, stack_name, security))


def client_security(pki: Pki, security: str, user: str = ADMIN_USER) -> ClientSecurity:
    """How ``user`` connects: SCRAM (sasl_ssl) or the user's own client certificate (ssl)."""
    trust = pki.trust()
    ca_file = pki.trust_file(trust)
    if security == "ssl":
        client = pki.leaf(f"client-{names.user_name(user)}", user, ())
        return ClientSecurity("SSL", trust, ca_file, client=replace(client, cert_pem=client.cert_pem + pki.chain()))
    password = pki.password(user, create=user == ADMIN_USER)
    if password is None:
        raise SpecError(f"no password kept for user '{user}'", hint=f"add it with: swarmkit users add {user}")
    return ClientSecurity("SASL_SSL", trust, ca_file, username=user, password=password)
