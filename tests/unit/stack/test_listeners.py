"""The listener model: settings strings and Kafka's start-up checks, with errors naming the setting."""

from __future__ import annotations

from dataclasses import replace

import pytest

from swarmkit.errors import SpecError
from swarmkit.stack.kafka_settings import (
    advertised_listeners,
    broker_settings,
    controller_settings,
    listeners_setting,
    security_protocol_map,
)
from swarmkit.stack.listener_checks import validate_plan
from swarmkit.stack.listeners import ADVERTISED_HOST, INTERNAL_HOST, Listener, ListenerPlan


def test_defaults():
    plan = validate_plan(ListenerPlan())
    assert plan.internal_listener == Listener("INTERNAL", 9092)
    assert plan.external_listener == Listener("EXTERNAL", 9094)
    assert plan.controller_listener == Listener("CONTROLLER", 9093)
    assert plan.inter_broker == "INTERNAL"
    assert plan.controller == "CONTROLLER"


def test_broker_settings_with_hosts():
    settings = broker_settings(ListenerPlan(), "node1", "kafka_broker.abc.def")
    assert settings == {
        "listeners": "INTERNAL://:9092,EXTERNAL://:9094",
        "advertised.listeners": "INTERNAL://kafka_broker.abc.def:9092,EXTERNAL://node1:9094",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "controller.listener.names": "CONTROLLER",
    }


def test_placeholders_are_the_default_hosts():
    assert advertised_listeners(ListenerPlan()) == f"INTERNAL://{INTERNAL_HOST}:9092,EXTERNAL://{ADVERTISED_HOST}:9094"


def test_controller_settings_have_no_advertised_listeners():
    assert controller_settings(ListenerPlan()) == {
        "listeners": "CONTROLLER://:9093",
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
    }


def test_build_changes_ports_and_protocols():
    plan = ListenerPlan.build(internal_port=19092, external_port=29094, controller_port=19093, external_protocol="SASL_SSL")
    validate_plan(plan)
    assert listeners_setting(plan) == "INTERNAL://:19092,EXTERNAL://:29094"
    assert listeners_setting(plan, "controller") == "CONTROLLER://:19093"
    assert "EXTERNAL:SASL_SSL" in security_protocol_map(plan)


def test_ipv6_advertised_host_is_bracketed():
    assert advertised_listeners(ListenerPlan(), "fd00::1", "b") == "INTERNAL://b:9092,EXTERNAL://[fd00::1]:9094"


def test_for_node_fills_hosts_and_validates():
    plan = validate_plan(ListenerPlan().for_node("node1", "task1"))
    assert plan.external_listener.advertised_host == "node1"
    assert plan.internal_listener.advertised_host == "task1"
    assert advertised_listeners(plan) == "INTERNAL://task1:9092,EXTERNAL://node1:9094"


def _with(plan: ListenerPlan, which: str, **changes) -> ListenerPlan:
    return replace(plan, listeners=tuple(replace(item, **changes) if item.name == which else item for item in plan.listeners))


BASE = ListenerPlan()


@pytest.mark.parametrize(
    "plan, setting, words",
    [
        (_with(BASE, "EXTERNAL", port=9092), "listeners:", "port 9092 is used by both INTERNAL and EXTERNAL"),
        (_with(BASE, "EXTERNAL", port=0), "listeners:", "port 0 of EXTERNAL"),
        (_with(BASE, "EXTERNAL", port=70000), "listeners:", "not in 1..65535"),
        (_with(BASE, "EXTERNAL", name="INTERNAL"), "listeners:", "'INTERNAL' is used twice"),
        (_with(BASE, "EXTERNAL", name="bad name"), "listeners:", "'bad name' is not valid"),
        (_with(BASE, "EXTERNAL", protocol="TLS"), "listener.security.protocol.map:", "'TLS' of EXTERNAL"),
        (_with(BASE, "EXTERNAL", advertised_host="0.0.0.0"), "advertised.listeners:", "non-routable address '0.0.0.0'"),
        (_with(BASE, "INTERNAL", advertised_host="::"), "advertised.listeners:", "non-routable"),
        (replace(BASE, advertised=("INTERNAL", "EXTERNAL", "OTHER")), "advertised.listeners:", "'OTHER' is not in listeners"),
        (replace(BASE, advertised=("INTERNAL", "EXTERNAL", "CONTROLLER")), "advertised.listeners:", "must not be advertised"),
        (replace(BASE, advertised=("INTERNAL",)), "advertised.listeners:", "external listener 'EXTERNAL' is not advertised"),
        (replace(BASE, advertised=("INTERNAL", "EXTERNAL", "EXTERNAL")), "advertised.listeners:", "advertised twice"),
        (replace(BASE, inter_broker="NOPE"), "inter.broker.listener.name:", "'NOPE'"),
        (replace(BASE, inter_broker="CONTROLLER"), "inter.broker.listener.name:", "'CONTROLLER'"),
        (replace(BASE, advertised=("EXTERNAL",)), "inter.broker.listener.name:", "is not advertised"),
        (replace(BASE, controller=None), "controller.listener.names:", "not defined"),
        (replace(BASE, controller="KRAFT"), "controller.listener.names:", "'KRAFT' is not defined"),
        (replace(BASE, external="OUTSIDE"), "listeners:", "external listener 'OUTSIDE' is not defined"),
        (replace(BASE, external="INTERNAL", advertised=("INTERNAL",)), "listeners:", "both the internal and the external"),
    ],
)
def test_validation_names_the_setting(plan, setting, words):
    with pytest.raises(SpecError) as err:
        validate_plan(plan)
    assert err.value.message.startswith(setting)
    assert words in err.value.message
    assert err.value.hint


def test_controller_is_optional_without_kraft():
    validate_plan(replace(BASE, controller=None), kraft=False)


def test_bool_is_not_a_port():
    with pytest.raises(SpecError):
        validate_plan(_with(BASE, "EXTERNAL", port=True))
