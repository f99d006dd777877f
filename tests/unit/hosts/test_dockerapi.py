"""Which tasks run the service's present spec: the fingerprint of a container spec."""

from __future__ import annotations

from swarmkit.hosts.dockerapi import _container_fingerprint


def spec(secret: str) -> dict:
    return {"Image": "kafka", "Secrets": [{"SecretName": secret, "File": {"Name": "/run/secrets/broker.pem"}}]}


def test_a_renewed_secret_makes_a_task_of_another_spec() -> None:
    assert _container_fingerprint(spec("swarmkit-broker-1-aaaa")) != _container_fingerprint(spec("swarmkit-broker-1-bbbb"))
    assert _container_fingerprint(spec("swarmkit-broker-1-aaaa")) == _container_fingerprint(spec("swarmkit-broker-1-aaaa"))
