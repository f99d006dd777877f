"""TLS and SASL failures are verdicts of their own (pure): each librdkafka message names one cause."""

from __future__ import annotations

import pytest

from swarmkit.cluster.diagnose import FIX_CERTIFICATE, FIX_CLIENT_CONFIG, Probe, judge_bootstrap, judge_broker, security_failure


@pytest.mark.parametrize(
    ("message", "verdict"),
    [
        ("SSL handshake failed: certificate verify failed: Hostname mismatch", "hostname mismatch"),
        ("SSL handshake failed: error:0A000086:SSL routines::certificate verify failed", "unknown CA"),
        ("SASL authentication error: Authentication failed during authentication due to invalid credentials", "authentication"),
        ("Disconnected while requesting ApiVersion: might be caused by incorrect security.protocol", "TLS handshake"),
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
