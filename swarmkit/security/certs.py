"""Certificates for TLS listeners (pure, with the ``cryptography`` package): a cluster CA and what it signs.

Kafka reads PEM directly (``ssl.keystore.type=PEM``): a keystore is one file holding an unencrypted
PKCS#8 private key followed by its certificate, a truststore the CA's certificate.  Keys are ECDSA
P-256: quick to make, and both the JVM and librdkafka accept them.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmkit.errors import SpecError
from swarmkit.lazy import lazy

if TYPE_CHECKING:
    from cryptography import exceptions as crypto_errors
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509 import oid
else:
    crypto_errors = lazy("cryptography.exceptions")
    x509 = lazy("cryptography.x509")
    hashes = lazy("cryptography.hazmat.primitives.hashes")
    serialization = lazy("cryptography.hazmat.primitives.serialization")
    ec = lazy("cryptography.hazmat.primitives.asymmetric.ec")
    rsa = lazy("cryptography.hazmat.primitives.asymmetric.rsa")
    oid = lazy("cryptography.x509.oid")

CA_DAYS = 3650
LEAF_DAYS = 825  # what browsers and most CAs allow for a server certificate


@dataclass(frozen=True)
class CertKey:
    """A certificate and its private key, both PEM; the key is never shown in a repr."""

    cert_pem: str
    key_pem: str = field(repr=False)

    @property
    def keystore(self) -> str:
        """What Kafka's PEM keystore file holds: the key, then the certificate."""
        return self.key_pem + self.cert_pem


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> str:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode(
        "ascii"
    )


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(oid.NameOID.COMMON_NAME, common_name)])


def new_ca(common_name: str, days: int = CA_DAYS) -> CertKey:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertKey(cert.public_bytes(serialization.Encoding.PEM).decode("ascii"), _key_pem(key))


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue(ca: CertKey, common_name: str, sans: Sequence[str], days: int = LEAF_DAYS) -> CertKey:
    """A leaf certificate signed by ``ca`` for both ends of a TLS connection (server and client auth)."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.encode())
    ca_key = serialization.load_pem_private_key(ca.key_pem.encode(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise SpecError("ca.key: not an EC or RSA private key", hint="give the CA's PEM private key, unencrypted")
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(min(now + datetime.timedelta(days=days), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            x509.ExtendedKeyUsage([oid.ExtendedKeyUsageOID.SERVER_AUTH, oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName([_san(host) for host in sans]), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return CertKey(cert.public_bytes(serialization.Encoding.PEM).decode("ascii"), _key_pem(key))


def check_ca(ca: CertKey) -> CertKey:
    """A user's CA: a CA certificate whose key matches; SpecError otherwise (nothing is issued)."""
    try:
        cert = x509.load_pem_x509_certificate(ca.cert_pem.encode())
        key = serialization.load_pem_private_key(ca.key_pem.encode(), password=None)
    except (ValueError, TypeError) as error:
        raise SpecError(f"ca.crt/ca.key: not a PEM certificate and unencrypted key ({error})", hint="give PEM files") from None
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value if _has_constraints(cert) else None
    if constraints is None or not constraints.ca:
        raise SpecError("ca.crt: not a CA certificate (no basicConstraints CA:TRUE)", hint="give the certificate of a CA")
    if key.public_key().public_bytes(*_spki()) != cert.public_key().public_bytes(*_spki()):
        raise SpecError("ca.key: does not belong to ca.crt", hint="give the key the CA certificate was made with")
    return ca


def _has_constraints(cert: x509.Certificate) -> bool:
    try:
        cert.extensions.get_extension_for_class(x509.BasicConstraints)
    except x509.ExtensionNotFound:
        return False
    return True


def _spki() -> tuple[serialization.Encoding, serialization.PublicFormat]:
    return serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo


def sans_of(cert_pem: str) -> tuple[str, ...]:
    """The DNS names and IP addresses a certificate is valid for."""
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    try:
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return ()
    return tuple(names.get_values_for_type(x509.DNSName)) + tuple(str(ip) for ip in names.get_values_for_type(x509.IPAddress))


def days_left(cert_pem: str, now: datetime.datetime | None = None) -> int:
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    return (cert.not_valid_after_utc - (now or _now())).days


def signed_by(cert_pem: str, ca_pem: str) -> bool:
    """Whether ``ca_pem`` issued ``cert_pem`` (its signature checks out)."""
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    ca_cert = x509.load_pem_x509_certificate(ca_pem.encode())
    try:
        cert.verify_directly_issued_by(ca_cert)
    except (ValueError, TypeError, crypto_errors.InvalidSignature):
        return False
    return True
