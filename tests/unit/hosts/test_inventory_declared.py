"""The inventory's declared state: the `stack:` block's ports, topics, broker environment, and host zones."""

from __future__ import annotations

import pytest

from swarmkit.errors import InventoryError
from swarmkit.hosts.inventory import DeclaredTopic, DeclaredUser, Inventory, check_rack, parse_inventory

HOSTS = [
    {"name": "k1", "endpoint": "unix:///k1.sock", "address": "10.0.0.1", "role": "manager", "labels": {"zone": "a"}},
    {"name": "k2", "endpoint": "unix:///k2.sock", "address": "10.0.0.2", "labels": {"zone": "b"}},
    {"name": "k3", "endpoint": "unix:///k3.sock", "address": "10.0.0.3"},
]


def inventory(stack: object) -> Inventory:
    return parse_inventory({"stack": stack, "hosts": HOSTS})


def test_the_stack_block_declares_ports_topics_and_broker_environment() -> None:
    stack = inventory(
        {
            "advertise": "inventory-address",
            "ports": {"internal": 19092, "external": 19094},
            "topics": [
                {"name": "orders", "partitions": 6, "replicas": 3, "configs": {"retention.ms": 86400000, "preallocate": True}},
                {"name": "logs", "partitions": 1, "replicas": 1},
            ],
            "broker_env": {"KAFKA_HEAP_OPTS": "-Xmx256m"},
        }
    ).stack
    assert (stack.advertise, stack.internal_port, stack.external_port) == ("inventory-address", 19092, 19094)
    assert stack.topics == (
        DeclaredTopic("orders", 6, 3, (("retention.ms", "86400000"), ("preallocate", "true"))),
        DeclaredTopic("logs", 1, 1),
    )
    assert stack.broker_env == (("KAFKA_HEAP_OPTS", "-Xmx256m"),)
    assert set(stack.given) == {"advertise", "ports", "topics", "broker_env"}


@pytest.mark.parametrize(
    ("stack", "message"),
    [
        ({"ports": {"external": 70000}}, "70000 is not a port number"),
        ({"ports": {"client": 9094}}, "stack.ports.client"),
        ({"topics": {"orders": 3}}, "must be a list"),
        ({"topics": [{"name": "orders", "partitions": "six", "replicas": 3}]}, "partitions 'six' is not a whole number"),
        ({"topics": [{"name": "orders", "partitions": 6}]}, "replicas None is not a whole number"),
        ({"topics": [{"name": "orders", "partitions": 6, "replicas": 3, "retention": 1}]}, "stack.topics.retention"),
        ({"topics": [{"name": "orders", "partitions": 6, "replicas": 3, "configs": {"a": [1]}}]}, "not a name and a plain"),
        ({"broker_env": ["KAFKA_HEAP_OPTS=-Xmx1g"]}, "must be a mapping"),
        ({"users": ["orders-app"]}, "must be a mapping of user names"),
        ({"users": {"orders app": []}}, "user name 'orders app' is not valid"),
        ({"users": {"orders-app": "topic:orders:read"}}, "user 'orders-app': 'topic:orders:read' is not a list"),
        ({"kafka_version": "4.4"}, "stack.kafka_version.*not a Kafka version X.Y.Z"),
        ({"kafka_version": 4.4}, "stack.kafka_version.*not a string"),
    ],
)
def test_a_wrong_declaration_names_the_field(stack: dict, message: str) -> None:
    with pytest.raises(InventoryError, match=message):
        inventory(stack)


def test_the_stack_block_declares_users_and_their_grants() -> None:
    stack = inventory({"security": "sasl_ssl", "users": {"orders-app": ["topic:orders:read,write"], "audit": None}}).stack
    assert stack.users == (DeclaredUser("orders-app", ("topic:orders:read,write",)), DeclaredUser("audit"))


def test_zones_come_from_the_hosts_labels() -> None:
    hosts = inventory({})
    assert hosts.zones == {"k1": "a", "k2": "b"}
    assert check_rack(hosts, "b") == "b"
    with pytest.raises(InventoryError, match="--rack c: no such zone") as raised:
        check_rack(hosts, "c")
    assert "a, b" in raised.value.hint


def test_a_zone_must_be_a_plain_name() -> None:
    hosts = [{**HOSTS[0], "labels": {"zone": "eu west"}}]
    with pytest.raises(InventoryError, match="zone 'eu west' is not valid"):
        parse_inventory({"hosts": hosts})
