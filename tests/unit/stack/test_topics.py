"""Topic specs: the seed's KAFKA_CREATE_TOPICS format, parsed and validated like Kafka would."""

from __future__ import annotations

import pytest

from swarmkit.errors import SpecError
from swarmkit.stack.topics import TopicSpec, creation_configs, format_topic_specs, parse_topic_specs, validate_topic_specs


def test_seed_example_parses():
    assert parse_topic_specs("myTopic:3:3,anotherTopic:2:2") == [
        TopicSpec("myTopic", 3, 3),
        TopicSpec("anotherTopic", 2, 2),
    ]


def test_blank_text_gives_no_topics_and_only_commas_are_refused():
    assert parse_topic_specs("") == []
    assert parse_topic_specs("   ") == []
    for commas in ("  ,  ", ",,,"):
        with pytest.raises(SpecError, match="name no topic"):
            parse_topic_specs(commas)


@pytest.mark.parametrize(
    "spec",
    [
        "a:\u0661:1",
        "a:99999999999999999999:1",
        "a:1:\u00b2",
        "a:1:1:min.insync.replicas=\u00b2",
        "a:1:1:retention.ms=\u0661\u0662",
    ],
)
def test_numbers_kafka_reads_are_ascii_digits_within_its_limits(spec: str) -> None:
    with pytest.raises(SpecError):
        validate_topic_specs(parse_topic_specs(spec), None)


def test_whitespace_and_trailing_comma_are_tolerated():
    assert parse_topic_specs(" a:1:1 , b:2:1 ,") == [TopicSpec("a", 1, 1), TopicSpec("b", 2, 1)]


def test_bare_fourth_field_is_cleanup_policy():
    (spec,) = parse_topic_specs("logs:3:3:compact")
    assert spec.configs == (("cleanup.policy", "compact"),)


def test_key_value_settings():
    (spec,) = parse_topic_specs("events:6:2:retention.ms=86400000:cleanup.policy=delete")
    assert spec.configs == (("retention.ms", "86400000"), ("cleanup.policy", "delete"))
    assert spec.config_dict["retention.ms"] == "86400000"


def test_compact_delete_policy_survives_the_comma_separator():
    specs = parse_topic_specs("a:1:1:cleanup.policy=compact,delete,b:2:1")
    assert specs == [TopicSpec("a", 1, 1, (("cleanup.policy", "compact,delete"),)), TopicSpec("b", 2, 1)]
    validate_topic_specs(specs, 3)


@pytest.mark.parametrize(
    "text",
    ["a:1:1", "a:3:3:compact", "a:1:2:retention.ms=1000:cleanup.policy=compact,delete,b.c-d_e:10:1"],
)
def test_round_trip(text):
    specs = parse_topic_specs(text)
    assert parse_topic_specs(format_topic_specs(specs)) == specs
    for spec in specs:
        assert parse_topic_specs(spec.to_spec_string()) == [spec]


@pytest.mark.parametrize(
    "text, words",
    [
        ("a", "expected name:partitions:replicas"),
        ("a:1", "expected name:partitions:replicas"),
        ("x:three:1", "partitions 'three' is not a whole number"),
        ("x:1:", "replicas '' is not a whole number"),
        ("x:1:1:compact:oops", "'oops' is not key=value"),
        ("x:1:1:=v", "needs a key and a value"),
        ("x:1:1:k=", "needs a key and a value"),
        ("x:1:1:k=1:k=2", "'k' is given twice"),
    ],
)
def test_syntax_errors_name_the_spec(text, words):
    with pytest.raises(SpecError) as err:
        parse_topic_specs(text)
    assert words in err.value.message
    assert err.value.hint


@pytest.mark.parametrize(
    "text, brokers, words, hint",
    [
        ("a:3:5", 3, "5 replicas but only 3 broker(s)", "at most 3 replicas"),
        ("bad name!:1:1", 3, "illegal characters ' !'", "letters, digits"),
        ("x:0:1", 3, "partitions must be at least 1", "1 or more"),
        ("x:-2:1", 3, "partitions must be at least 1", "1 or more"),
        ("x:1:0", 3, "replicas must be at least 1", "1 or more"),
        (".:1:1", 3, "'.' is not a legal topic name", "'..'"),
        ("..:1:1", 3, "'..' is not a legal topic name", "'..'"),
        (":1:1", 3, "topic name is empty", "name"),
        ("x" * 250 + ":1:1", 3, "250 characters long", "249"),
        ("a:1:1,a:2:1", 3, "'a' is specified twice", "keep one"),
        ("a.b:1:1,a_b:1:1", 3, "collides with 'a.b'", "rename"),
        ("a:1:1:cleanup.policy=forever", 3, "cleanup.policy 'forever'", "compact"),
        ("a:1:1:tidy", 3, "cleanup.policy 'tidy'", "compact"),
    ],
)
def test_validation_errors_name_the_spec_and_say_what_to_do(text, brokers, words, hint):
    with pytest.raises(SpecError) as err:
        validate_topic_specs(parse_topic_specs(text), brokers)
    assert words in err.value.message
    assert "topic spec '" in err.value.message
    assert hint in err.value.hint


def test_valid_specs_pass_and_max_name_length_is_allowed():
    specs = parse_topic_specs("x" * 249 + ":1:1,my.topic-1_a:12:3:compact")
    assert validate_topic_specs(specs, 3) == specs


def test_unknown_broker_count_skips_replica_check():
    assert validate_topic_specs([TopicSpec("a", 1, 9)], None) == [TopicSpec("a", 1, 9)]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("orders:6:3", {"min.insync.replicas": "2"}),
        ("orders:6:5:retention.ms=1000", {"retention.ms": "1000", "min.insync.replicas": "2"}),
        ("orders:6:3:min.insync.replicas=3", {"min.insync.replicas": "3"}),
        ("orders:6:2", {}),
        ("orders:6:1:compact", {"cleanup.policy": "compact"}),
    ],
)
def test_topics_with_three_replicas_default_to_two_in_sync(text: str, expected: dict[str, str]) -> None:
    (spec,) = parse_topic_specs(text)
    assert creation_configs(spec) == expected


@pytest.mark.parametrize("setting", ["min.insync.replicas=4", "min.insync.replicas=0", "min.insync.replicas=two"])
def test_an_impossible_min_insync_replicas_is_refused(setting: str) -> None:
    with pytest.raises(SpecError, match="cannot be met") as raised:
        validate_topic_specs(parse_topic_specs(f"orders:6:3:{setting}"), broker_count=3)
    assert "1 to 3" in raised.value.hint


@pytest.mark.parametrize(
    ("spec", "ok"),
    [
        ("t:1:1:retention.ms=-1", True),
        ("t:1:1:segment.bytes=1048576:compression.type=zstd", True),
        ("t:1:1:retention.ms=1d", False),
        ("t:1:1:max.message.bytes=1.5", False),
        ("t:1:1:unclean.leader.election.enable=yes", False),
        ("t:1:1:bogus.key=1", False),  # a key Kafka has no topic setting for: refused before any deploy
        ("t:1:1:remote.storage.enable=true:min.cleanable.dirty.ratio=0.5", True),  # known, checked by the broker
    ],
)
def test_setting_values_of_a_known_type_are_checked(spec: str, ok: bool) -> None:
    specs = parse_topic_specs(spec)
    if ok:
        assert validate_topic_specs(specs, 1) == specs
    else:
        with pytest.raises(SpecError):
            validate_topic_specs(specs, 1)


def test_an_unknown_setting_key_is_refused_with_the_nearest_known_one() -> None:
    with pytest.raises(SpecError, match="'retention.msx' is not a topic setting Kafka knows") as raised:
        validate_topic_specs(parse_topic_specs("t:1:1:retention.msx=5"), 1)
    assert raised.value.hint == "did you mean retention.ms?"
