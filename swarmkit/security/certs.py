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

from cryptography import exceptions as crypto_errors
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509 import oid

from swarmkit.errors import SpecError

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


def _ca_builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, ends: datetime.datetime
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(_now() - datetime.timedelta(minutes=5))
        .not_valid_after(ends)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
    )


def _pem(cert: x509.Certificate) -> str:
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


def new_ca(common_name: str, days: int = CA_DAYS, subject: x509.Name | None = None) -> CertKey:
    """A self-signed CA that may sign leaf certificates only (path length 0)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name, ends = subject or _name(common_name), _now() + datetime.timedelta(days=days)
    return CertKey(_pem(_ca_builder(name, name, key.public_key(), ends).sign(key, hashes.SHA256())), _key_pem(key))


def successor(ca: CertKey, days: int = CA_DAYS) -> tuple[CertKey, str]:
    """The CA that replaces ``ca`` (a new key under the same name), and each CA's certificate cross-signed by
    the other (a bundle of two).

    A node presents its own certificate followed by its issuer's cross-signed certificate, so a client that
    trusts only the other CA still builds a path.  The same name keeps a cross-signed certificate
    self-issued, so a CA's path length 0 does not count it (OpenSSL checks it on the trust anchor too),
    and the key identifiers tell the two CAs of one name apart."""
    old_cert, _ = _load_ca(ca)
    made = new_ca("", days, subject=old_cert.subject)
    return made, cross_signed(made.cert_pem, ca) + cross_signed(ca.cert_pem, made)


def cross_signed(ca_pem: str, signer: CertKey) -> str:
    """``ca_pem``'s name and key certified by ``signer`` (both CAs of one name), for as long as both last."""
    certified = x509.load_pem_x509_certificate(ca_pem.encode())
    signer_cert, signer_key = _load_ca(signer)
    ends = min(certified.not_valid_after_utc, signer_cert.not_valid_after_utc)
    builder = _ca_builder(certified.subject, signer_cert.subject, certified.public_key(), ends)  # type: ignore[arg-type]
    return _pem(builder.add_extension(_authority_key_id(signer_cert), critical=False).sign(signer_key, hashes.SHA256()))


def _authority_key_id(ca_cert: x509.Certificate) -> x509.AuthorityKeyIdentifier:
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key())  # type: ignore[arg-type]
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)


def _load_ca(ca: CertKey) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey]:
    ca_cert = x509.load_pem_x509_certificate(ca.cert_pem.encode())
    ca_key = serialization.load_pem_private_key(ca.key_pem.encode(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
        raise SpecError("ca.key: not an EC or RSA private key", hint="give the CA's PEM private key, unencrypted")
    return ca_cert, ca_key


def _san(host: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        return x509.DNSName(host)


def issue(ca: CertKey, common_name: str, sans: Sequence[str], days: int = LEAF_DAYS) -> CertKey:
    """A leaf certificate signed by ``ca`` for both ends of a TLS connection (server and client auth); its
    authority key identifier names the CA's key (two CAs of one name during a CA rotation)."""
    ca_cert, ca_key = _load_ca(ca)
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
        .add_extension(_authority_key_id(ca_cert), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName([_san(host) for host in sans]), critical=False)
    return CertKey(_pem(builder.sign(ca_key, hashes.SHA256())), _key_pem(key))


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
    """Whole days until the certificate (the first, in a chain or bundle) expires."""
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    return (cert.not_valid_after_utc - (now or _now())).days


def fewest_days(pems: Sequence[str], now: datetime.datetime | None = None) -> int | None:
    """The days left of the certificate that expires first among every certificate in ``pems``."""
    found = [days_left(_pem(cert), now) for pem in pems for cert in x509.load_pem_x509_certificates(pem.encode())]
    return min(found) if found else None


def bundle(*pems: str) -> str:
    """A trust bundle: every certificate in ``pems`` once, in the order given."""
    seen: dict[bytes, str] = {}
    for pem in pems:
        for cert in x509.load_pem_x509_certificates(pem.encode()) if pem else ():
            seen.setdefault(cert.fingerprint(hashes.SHA256()), _pem(cert))
    return "".join(seen.values())


def cross_signatures(bundle_pem: str, ca_pem: str) -> str:
    """The certificates in ``bundle_pem`` that certify ``ca_pem``'s key but are not ``ca_pem`` itself (what a
    node presents after its own certificate during and after a CA rotation)."""
    ca_cert = x509.load_pem_x509_certificate(ca_pem.encode())
    key = ca_cert.public_key().public_bytes(*_spki())
    found = x509.load_pem_x509_certificates(bundle_pem.encode()) if bundle_pem else []
    return "".join(_pem(c) for c in found if c.public_key().public_bytes(*_spki()) == key and c != ca_cert)


def signed_by(cert_pem: str, ca_pem: str) -> bool:
    """Whether a CA in ``ca_pem`` (one certificate or a bundle) issued ``cert_pem`` (its signature checks out)."""
    cert = x509.load_pem_x509_certificate(cert_pem.encode())
    for ca_cert in x509.load_pem_x509_certificates(ca_pem.encode()):
        try:
            cert.verify_directly_issued_by(ca_cert)
        except (ValueError, TypeError, crypto_errors.InvalidSignature):
            continue
        return True
    return False
