"""Engines are named by EngineName and differ only through the BrokerEngine Protocol; the kinds a stack is
rendered with are StrEnums that render as Docker and Kafka spell them."""

from __future__ import annotations

import pytest
import yaml

from swarmkit import defaults
from swarmkit.defaults import EngineName
from swarmkit.errors import SpecError
from swarmkit.stack.compose import ADVERTISE_MODES, Advertise
from swarmkit.stack.engines import ENGINES, engine_for
from swarmkit.stack.kafka_settings import KafkaRole, listeners_setting, security_settings
from swarmkit.stack.listeners import ListenerPlan
from swarmkit.stack.render import _Dumper


def test_every_engine_is_registered_under_its_own_name() -> None:
    assert set(ENGINES) == set(EngineName) and all(engine.NAME is name for name, engine in ENGINES.items())
    assert engine_for("tansu") is ENGINES[EngineName.TANSU] and defaults.DEFAULT_ENGINE in ENGINES


def test_an_unknown_engine_name_is_a_spec_error() -> None:
    with pytest.raises(SpecError, match="unknown engine 'kafka'"):
        engine_for("kafka")


def test_what_tells_the_engines_apart_is_their_protocol_attributes() -> None:
    apache, tansu = ENGINES[EngineName.APACHE], ENGINES[EngineName.TANSU]
    assert (apache.KRAFT, apache.JMX_METRICS, apache.CLIENT_QUOTAS, apache.KAFKA_VERSIONED) == (True, True, True, True)
    assert (tansu.KRAFT, tansu.JMX_METRICS, tansu.CLIENT_QUOTAS, tansu.KAFKA_VERSIONED) == (False, False, False, False)
    assert apache.DATA_DIR and not tansu.DATA_DIR


@pytest.mark.parametrize("word", ["hostname", "inventory-address", "command"])
def test_advertise_modes_parse_from_the_words_the_inventory_uses(word: str) -> None:
    assert Advertise(word) == word and Advertise(word) in ADVERTISE_MODES


def test_kafka_roles_pick_their_listeners_and_security() -> None:
    plan = ListenerPlan.build(security="sasl_ssl")
    assert KafkaRole("controller") is KafkaRole.CONTROLLER
    assert listeners_setting(plan, KafkaRole.CONTROLLER) != listeners_setting(plan, KafkaRole.BROKER)
    assert set(security_settings(plan, KafkaRole.CONTROLLER)) < set(security_settings(plan, KafkaRole.BROKER))


def test_a_member_is_written_to_yaml_and_json_as_its_word() -> None:

    assert yaml.dump({"role": KafkaRole.BROKER}, Dumper=_Dumper) == "role: broker\n"
    assert f"{EngineName.TANSU}" == str(EngineName.TANSU) == "tansu"
