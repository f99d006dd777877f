"""TLS and SASL in the stack (pure): which secrets brokers and controllers get, and how clients connect.

Certificates, keys and passwords reach containers only as swarm secrets (files under
``/run/secrets``), never as environment variables or in the stack text: the stack names each secret,
and ``swarmkit deploy`` hands the content to ``docker stack deploy`` from a private directory.  Like
configs, a secret's name ends with a hash of its content, so a rotated certificate is a new secret
and a rolling update, an unchanged one changes nothing.

``ClientSecurity`` is the one place a client configuration is built: the Kafka adapter, the
``client-config`` command and the Spark job all take it.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from swarmkit import files, names
from swarmkit.errors import SpecError
from swarmkit.security.certs import CertKey

SECRETS_DIR = "/run/secrets"
CA_TARGET = "swarmkit-ca.crt"
INTERNAL_TARGET = "swarmkit-internal.pem"  # mutual TLS between brokers and controllers
SCRAM_TARGET = "swarmkit-scram"  # the controllers' `kafka-storage format --add-scram` argument
BROKER_TARGET = "swarmkit-broker-{broker_id}.pem"  # the entrypoint picks its own by BROKER_ID
MECHANISM = "SCRAM-SHA-512"
ADMIN_USER = "swarmkit-admin"
# A SCRAM user nobody logs in as, never removed, whose Java String.hashCode() is 0 (see swarmkit/ops/users.py)
KEEPER_USER = "swarmkit-keeper-acpfufhs"
INTERNAL_NAME = "swarmkit-internal"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


def settings_text(settings: dict[str, str]) -> str:
    """A client configuration file: ``key=value`` lines (Java properties and librdkafka alike)."""
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def parse_settings(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if "=" in line and not line.lstrip().startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def write_private(path: Path, content: str) -> None:
    """Write a file only this user can read (keys, passwords)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(content)


def secret_path(target: str) -> str:
    return f"{SECRETS_DIR}/{target}"


@dataclass(frozen=True)
class SecretFile:
    """One swarm secret: its stack key, where it is mounted, and its content (never shown)."""

    key: str
    target: str
    content: str = field(repr=False)

    @property
    def name(self) -> str:
        digest = hashlib.sha256(self.content.encode("utf-8")).hexdigest()[:8]
        return f"{self.key}-{digest}"

    @property
    def filename(self) -> str:
        """Where ``deploy`` writes it, beside the stack file, for ``docker stack deploy`` to create it."""
        return f"secrets/{self.name}"


@dataclass(frozen=True)
class SecurityMaterial:
    """What a secure cluster's containers need, made by ``swarmkit.security.pki`` from the local store."""

    ca_pem: str
    internal: CertKey
    brokers: tuple[tuple[int, CertKey], ...]  # (broker id, its certificate for the external listener)
    admin_password: str = field(repr=False)

    def _common(self) -> list[SecretFile]:
        return [
            SecretFile("swarmkit-ca", CA_TARGET, self.ca_pem),
            SecretFile(INTERNAL_NAME, INTERNAL_TARGET, self.internal.keystore),
        ]

    def broker_secrets(self) -> tuple[SecretFile, ...]:
        own = [
            SecretFile(f"swarmkit-broker-{broker_id}", BROKER_TARGET.format(broker_id=broker_id), cert.keystore)
            for broker_id, cert in self.brokers
        ]
        return tuple(self._common() + own)

    def controller_secrets(self, sasl: bool) -> tuple[SecretFile, ...]:
        scram = f"{MECHANISM}=[name={ADMIN_USER},password={self.admin_password}]"
        return tuple(self._common() + ([SecretFile("swarmkit-scram", SCRAM_TARGET, scram)] if sasl else []))

    def all_secrets(self, sasl: bool) -> tuple[SecretFile, ...]:
        seen = {s.name: s for s in (*self.broker_secrets(), *self.controller_secrets(sasl))}
        return tuple(seen.values())


@dataclass(frozen=True)
class ClientSecurity:
    """How a client reaches a secure cluster's external listener."""

    protocol: str  # SSL | SASL_SSL
    ca_pem: str
    ca_file: str = ""  # where the CA was written for clients that need a path
    username: str = ""
    password: str = field(default="", repr=False)
    client: CertKey | None = None  # SSL (mutual TLS): the client's own certificate
    verify_hostname: bool = True  # False only to bootstrap through a node's address (its name is checked next)

    def librdkafka(self) -> dict[str, str]:
        """confluent-kafka / kcat settings, with the CA and certificate inline (no files needed)."""
        settings = {
            "security.protocol": self.protocol.lower(),
            "ssl.ca.pem": self.ca_pem,
            "ssl.endpoint.identification.algorithm": "https" if self.verify_hostname else "none",
        }
        if self.protocol == "SASL_SSL":
            settings |= {"sasl.mechanisms": MECHANISM, "sasl.username": self.username, "sasl.password": self.password}
        if self.client is not None:
            settings |= {"ssl.certificate.pem": self.client.cert_pem, "ssl.key.pem": self.client.key_pem}
        return settings

    def file_settings(self, java: bool, keystore_file: str = "") -> dict[str, str]:
        """What a properties file holds: paths instead of inline PEM (``ca_file``, ``keystore_file``)."""
        if not java:
            settings = {k: v for k, v in self.librdkafka().items() if not k.endswith(".pem")}
            settings["ssl.ca.location"] = self.ca_file
            if self.client is not None:
                settings |= {"ssl.certificate.location": keystore_file, "ssl.key.location": keystore_file}
            return settings
        settings = {
            "security.protocol": self.protocol,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": self.ca_file,
        }
        if self.protocol == "SASL_SSL":
            login = f'{SCRAM_LOGIN[:-1]} username="{self.username}" password="{self.password}";'
            settings |= {"sasl.mechanism": MECHANISM, "sasl.jaas.config": login}
        if self.client is not None:
            settings |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": keystore_file}
        return settings

    def write_files(self, directory: Path) -> tuple[Path, Path]:
        """The CA, the client's keystore and both configurations (librdkafka, Java) in ``directory``, readable
        by this user alone; returns the two configuration files (what the Spark job takes)."""
        here = replace(self, ca_file=str(directory / "ca.crt"))
        Path(here.ca_file).write_text(self.ca_pem, encoding="utf-8")
        keystore = directory / "client.pem"
        if self.client is not None:
            write_private(keystore, self.client.keystore)
        paths = directory / "client.conf", directory / "client.properties"
        for path, java in zip(paths, (False, True)):
            write_private(path, settings_text(here.file_settings(java, str(keystore))))
        return paths


PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----\n?", re.S)
CLIENT_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_SSL")  # what client-config writes; SASL_PLAINTEXT is never served
JAAS_FIELD = re.compile(r'(username|password)="([^"]*)"')


def read_client_config(path: Path) -> tuple[str, ClientSecurity | None]:
    """(bootstrap.servers, the login) from a client configuration in either format ``client-config`` writes
    (Java properties or librdkafka); no login for plain text."""
    settings = parse_settings(files.read_input(path, "the client configuration"))
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in CLIENT_PROTOCOLS:
        raise SpecError(
            f"{path}: security.protocol {names.shown(settings['security.protocol'])} is not one swarmkit connects with",
            hint=f"use one of {', '.join(CLIENT_PROTOCOLS)} (as `swarmkit client-config` writes it)",
        )
    if protocol == "PLAINTEXT":
        return settings.get("bootstrap.servers", ""), None
    ca_file = settings.get("ssl.ca.location") or settings.get("ssl.truststore.location", "")
    if not ca_file:
        raise SpecError(f"{path} names no CA file", hint="set ssl.ca.location (librdkafka) or ssl.truststore.location")
    login: dict[str, str] = dict(JAAS_FIELD.findall(settings.get("sasl.jaas.config", "")))
    key_files = {settings.get(k, "") for k in ("ssl.keystore.location", "ssl.certificate.location", "ssl.key.location")}
    pem = "".join(_pem_file(name, path) for name in sorted(key_files - {""}))
    client = _cert_key(pem) if pem else None
    security = ClientSecurity(
        protocol,
        _pem_file(ca_file, path),
        ca_file,
        username=settings.get("sasl.username", login.get("username", "")),
        password=settings.get("sasl.password", login.get("password", "")),
        client=client,
        verify_hostname=settings.get("ssl.endpoint.identification.algorithm", "https") not in ("", "none"),
    )
    return settings.get("bootstrap.servers", ""), security


def _pem_file(name: str, config: Path) -> str:
    """A PEM file a configuration names (relative to the configuration's folder)."""
    return files.read_input(config.parent / name, f"{config} names", hint="check the file it names")


def _cert_key(pem: str) -> CertKey:
    blocks = {match.group(1): match.group(0) for match in PEM_BLOCK.finditer(pem)}
    keys = [block for kind, block in blocks.items() if kind.endswith("PRIVATE KEY")]
    if "CERTIFICATE" not in blocks or not keys:
        raise SpecError("the client keystore holds no certificate and key", hint="give the PEM file client-config wrote")
    return CertKey(blocks["CERTIFICATE"], keys[0])
