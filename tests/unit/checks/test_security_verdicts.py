"""TLS and SASL failures are verdicts of their own (pure): each librdkafka message names one cause."""

from __future__ import annotations

import pytest

from swarmkit.checks import verify
from swarmkit.checks.diagnose import (
    FIX_CERTIFICATE,
    FIX_CLIENT_CONFIG,
    BrokerCheck,
    Probe,
    judge_bootstrap,
    judge_broker,
    security_failure,
)
from swarmkit.checks.verify import VerifyOptions
from swarmkit.security import certs
from swarmkit.security.settings import ClientSecurity


@pytest.mark.parametrize(
    ("message", "verdict"),
    [
        ("SSL handshake failed: certificate verify failed: Hostname mismatch", "hostname mismatch"),
        ("SSL handshake failed: error:0A000086:SSL routines::certificate verify failed", "unknown CA"),
        ("SASL authentication error: Authentication failed during authentication due to invalid credentials", "authentication"),
        ("Disconnected while requesting ApiVersion: might be caused by incorrect security.protocol", "TLS handshake"),
        (  # seen on the sandbox: an ssl-mode listener and a client without its certificate
            "Receive failed: error:0A000412:SSL routines::ssl/tls alert bad certificate: SSL alert number 42",
            "client certificate refused",
        ),
    ],
)
def test_each_failure_has_its_verdict(message: str, verdict: str) -> None:
    found = security_failure(f"no Kafka metadata from se1:9094 within 5s: {message}")
    assert found is not None and found[0].startswith(verdict)


def test_other_failures_are_not_security_verdicts() -> None:
    assert security_failure("Connection refused") is None


def test_a_broker_and_a_bootstrap_name_the_failure() -> None:
    probe = Probe("se1", 9094, ("10.0.0.1",), connect="ok", metadata_error="certificate verify failed: Hostname mismatch")
    check = judge_broker(1, probe, client_local=False)
    assert not check.ok and check.cause.startswith("hostname mismatch") and check.fix == FIX_CERTIFICATE
    wrong = Probe("se1", 9094, ("10.0.0.1",), connect="ok", metadata_error="SASL authentication error: Authentication failed")
    assert judge_bootstrap(wrong).fix == FIX_CLIENT_CONFIG


@pytest.fixture
def ca() -> certs.CertKey:
    return certs.new_ca("cluster CA")


def presenting(monkeypatch: pytest.MonkeyPatch, cert: certs.CertKey) -> None:
    monkeypatch.setattr(verify.pki, "presented_certificate", lambda host, port, timeout: cert.cert_pem)


def judged(ca: certs.CertKey) -> BrokerCheck:
    options = VerifyOptions(security=ClientSecurity("SASL_SSL", ca.cert_pem))
    return verify._with_certificate(BrokerCheck(1, "se1:9094", True, True, True, ""), "se1", 9094, options)


def test_a_certificate_naming_the_advertised_host_passes(monkeypatch: pytest.MonkeyPatch, ca: certs.CertKey) -> None:
    presenting(monkeypatch, certs.issue(ca, "b1", ["se1"]))
    check = judged(ca)
    assert check.ok and "for se1" in check.detail and "days left" in check.detail


def test_a_certificate_for_another_name_or_from_another_ca_fails(monkeypatch: pytest.MonkeyPatch, ca: certs.CertKey) -> None:
    presenting(monkeypatch, certs.issue(ca, "b1", ["elsewhere"]))
    assert judged(ca).cause == "hostname mismatch" and not judged(ca).ok
    presenting(monkeypatch, certs.issue(certs.new_ca("other"), "b1", ["se1"]))
    assert judged(ca).cause == "unknown CA"


def test_a_certificate_about_to_expire_warns(monkeypatch: pytest.MonkeyPatch, ca: certs.CertKey) -> None:
    presenting(monkeypatch, certs.issue(ca, "b1", ["se1"], days=10))
    check = judged(ca)
    assert check.ok and "warning" in check.detail
