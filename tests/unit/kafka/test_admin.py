"""KafkaAdmin itself: one client made on the first call serves every later call of the command."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import NamedTuple

import pytest

from swarmkit.kafka import admin

BOOTSTRAP = "node1:9094"
METADATA = {  # the shape swarmkit.kafka.answers.metadata gives (tests/unit/kafka/recorded/ holds real ones)
    "cluster_id": "c1",
    "controller_id": 1,
    "brokers": [{"id": i, "host": f"node{i}", "port": 9094} for i in (3, 1, 2)],
    "topics": [
        {
            "topic": name,
            "error": {},
            "partitions": [{"id": p, "leader": 1 + p, "replicas": [1, 2, 3], "isrs": [1, 2, 3], "error": {}} for p in range(n)],
        }
        for name, n in (("t", 3), ("__consumer_offsets", 1))
    ],
}


class Resource(NamedTuple):
    name: str


class _FakeClient:
    """What KafkaAdmin asks of its client, answering the recorded metadata and min ISR 2 for every topic."""

    made = 0

    def __init__(self, bootstrap: str, timeout: float, security: object) -> None:
        type(self).made += 1
        self.bootstrap, self.admin = bootstrap, self

    def metadata(self, timeout: float) -> dict:
        return METADATA

    def describe_configs(self, resources: list, request_timeout: float) -> dict:
        entry = SimpleNamespace(value="2", source=5, is_default=False, is_sensitive=False)
        return {r: _done({"min.insync.replicas": entry}) for r in resources}


def _done(value: object) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def test_one_client_serves_every_call_of_a_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """One TLS handshake and login per broker per command: the client is made on the first call, then reused."""
    monkeypatch.setattr(admin, "_Client", _FakeClient)
    monkeypatch.setattr(admin.ck_admin, "ConfigResource", lambda kind, name: Resource(name))
    with admin.KafkaAdmin(BOOTSTRAP) as kafka:
        assert [t.name for t in kafka.metadata().topics] == ["t"]
        registered, states = kafka.partition_states()
        assert registered == (1, 2, 3) and {s.min_isr for s in states} == {2}
        assert kafka.topic_configs(["t"]) == {"t": {"min.insync.replicas": "2"}}
    assert _FakeClient.made == 1
