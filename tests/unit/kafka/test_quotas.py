"""Client quotas through kafka-python (pure): an answer read, an alteration written."""

from __future__ import annotations

import pytest

from swarmkit.errors import BrokerError
from swarmkit.kafka.quotas import alteration, entity_of, quotas_from


def entry(pairs: list[tuple[str, str | None]], **values: float) -> dict:
    return {
        "entity": [{"entity_type": kind, "entity_name": name} for kind, name in pairs],
        "values": [{"key": key, "value": value} for key, value in values.items()],
    }


def test_named_clients_are_read_defaults_and_ip_quotas_are_not() -> None:
    answer = {
        "error_code": 0,
        "entries": [
            entry([("client-id", "bulk")], producer_byte_rate=262144.0),
            entry([("client-id", "orders"), ("user", "orders-app")], request_percentage=12.5),
            entry([("user", None)], consumer_byte_rate=1.0),
            entry([("ip", "10.0.0.1")], connection_creation_rate=5.0),
        ],
    }
    assert quotas_from(answer) == {
        (("client-id", "bulk"),): {"producer_byte_rate": 262144.0},
        (("user", "orders-app"), ("client-id", "orders")): {"request_percentage": 12.5},
    }
    assert quotas_from({"error_code": 0, "entries": None}) == {}
    assert entity_of([]) is None


def test_a_refused_description_is_a_broker_error() -> None:
    with pytest.raises(BrokerError, match="describing client quotas failed: not authorized"):
        quotas_from({"error_code": 29, "error_message": "not authorized", "entries": None})


def test_an_alteration_sets_and_removes() -> None:
    (written,) = alteration({(("user", "a"), ("client-id", "b")): {"producer_byte_rate": 1024.0, "request_percentage": None}})
    assert written.to_dict() == {
        "entity": [{"entity_type": "user", "entity_name": "a"}, {"entity_type": "client-id", "entity_name": "b"}],
        "ops": [
            {"key": "producer_byte_rate", "value": 1024.0, "remove": False},
            {"key": "request_percentage", "value": 0.0, "remove": True},
        ],
    }
