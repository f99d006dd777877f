"""Certificates made for one test: a CA, a server certificate for an engine's address, a client pair.

Made with ``cryptography`` into a directory the test owns (pytest's tmp_path), so nothing outlives
the test and no real key material is involved.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from swarmkit.hosts.inventory import TlsFiles

VALID_FOR = datetime.timedelta(days=1)
_CA_USAGE = x509.KeyUsage(
    digital_signature=False,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=True,
    crl_sign=True,
    encipher_only=False,
    decipher_only=False,
)


@dataclass(frozen=True)
class Authority:
    """A CA: its certificate file and what signs with it."""

    cert_path: Path
    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey


@dataclass(frozen=True)
class EngineCerts:
    server: TlsFiles  # for dockerd: the CA its clients must come from, its own certificate and key
    client: TlsFiles  # for an inventory's tls: block: the CA of the engine, a client certificate and key


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _builder(subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALID_FOR)
    )


def authority(directory: Path, name: str) -> Authority:
    """A self-signed CA written to DIRECTORY/NAME.pem."""
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        _builder(_name(name), _name(name), key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_CA_USAGE, critical=True)
        .sign(key, hashes.SHA256())
    )
    path = directory / f"{name}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Authority(path, cert, key)


def _issue(ca: Authority, directory: Path, name: str, usage: x509.ObjectIdentifier, address: str = "") -> tuple[str, str]:
    """A certificate signed by ``ca`` for one usage (server or client); returns (cert path, key path)."""
    key = ec.generate_private_key(ec.SECP256R1())
    builder = _builder(_name(name), ca.cert.subject, key).add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if address:
        san = x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))])
        builder = builder.add_extension(san, critical=False)
    cert_path, key_path = directory / f"{name}-cert.pem", directory / f"{name}-key.pem"
    cert_path.write_bytes(builder.sign(ca.key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))
    _write_key(key_path, key)
    return str(cert_path), str(key_path)


def engine_certs(directory: Path, address: str) -> EngineCerts:
    """One CA signing both the engine's certificate (its address as IP SAN) and a client's."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = authority(directory, "ca")
    server_cert, server_key = _issue(ca, directory, "server", ExtendedKeyUsageOID.SERVER_AUTH, address)
    client_cert, client_key = _issue(ca, directory, "client", ExtendedKeyUsageOID.CLIENT_AUTH)
    return EngineCerts(
        server=TlsFiles(ca=str(ca.cert_path), cert=server_cert, key=server_key),
        client=TlsFiles(ca=str(ca.cert_path), cert=client_cert, key=client_key),
    )
