"""``--allow`` specs (pure): every valid spec parses into the grants it names and back, every malformed one is
refused with a SpecError saying what is wrong; and the SCRAM keeper user really is first in Java's HashMap order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swarmkit.errors import SpecError
from swarmkit.security.acls import OPERATIONS, Grant, describe, parse_allow, parse_grants
from swarmkit.security.settings import ADMIN_USER, KEEPER_USER
from swarmkit.stack.kafka_settings import AUTHORIZER, security_settings
from swarmkit.stack.listeners import ListenerPlan

BUDGET = settings(max_examples=200, deadline=None)
names = st.text(st.sampled_from("abcXYZ019._-"), min_size=1, max_size=30)
resources = st.sampled_from(sorted(OPERATIONS))


@st.composite
def specs(draw: st.DrawFn) -> tuple[str, str, str, bool, list[str]]:
    resource = draw(resources)
    name = draw(names)
    prefixed = draw(st.booleans())
    operations = draw(st.lists(st.sampled_from(OPERATIONS[resource]), min_size=1, max_size=4))
    spelled = [op.upper() if draw(st.booleans()) else op for op in operations]
    return f"{resource}:{name}{'*' if prefixed else ''}:{','.join(spelled)}", resource, name, prefixed, operations


@BUDGET
@given(specs())
def test_a_valid_spec_gives_one_grant_per_operation(spec: tuple[str, str, str, bool, list[str]]) -> None:
    text, resource, name, prefixed, operations = spec
    grants = parse_allow(text)
    assert grants == tuple(Grant(resource, name, prefixed, op) for op in dict.fromkeys(operations))
    assert parse_grants([describe(grants)]) == tuple(sorted(grants))  # the shown form parses back


def test_examples() -> None:
    assert parse_allow("topic:orders:read,write") == (
        Grant("topic", "orders", False, "read"),
        Grant("topic", "orders", False, "write"),
    )
    assert parse_allow("topic:orders-*:read") == (Grant("topic", "orders-", True, "read"),)
    assert parse_allow("group:*:read") == (Grant("group", "*", False, "read"),)
    assert describe(parse_grants(["group:billing:read", "topic:orders-*:write,read"])) == (
        "group:billing:read topic:orders-*:read,write"
    )
    assert describe(()) == "(no grants)"


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("topic:orders", "2 part(s)"),
        ("topic:orders:read:write", "4 part(s)"),
        ("cluster:kafka:alter", "resource type 'cluster'"),
        ("topic:orders:fly", "'fly' not among"),
        ("group:billing:write", "'write' not among read, describe, delete, all for a group"),
        ("topic:orders:", "'' not among"),
        ("topic::read", "'' is not a name"),
        ("topic:*orders:read", "'*orders' is not a name"),
        ("topic:ord*ers:read", "is not a name"),
        ("topic:orders/eu:read", "is not a name"),
        ("topic:**:read", "is not a name"),
    ],
)
def test_a_malformed_spec_is_refused_saying_why(spec: str, problem: str) -> None:
    with pytest.raises(SpecError, match="--allow") as refused:
        parse_allow(spec)
    assert problem in refused.value.message and "topic:orders:read,write" in refused.value.hint
    assert refused.value.exit_code == 2


@BUDGET
@given(st.text(max_size=40))
def test_any_text_parses_or_is_a_spec_error(text: str) -> None:
    try:
        grants = parse_allow(text)
    except SpecError as error:
        assert error.message.startswith("--allow")
    else:
        assert grants and all(grant.operation in OPERATIONS[grant.resource] for grant in grants)


def java_hash(text: str) -> int:
    """java.lang.String.hashCode(), as an unsigned 32-bit number."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) % 2**32
    return value


def bucket(text: str, size: int = 16) -> int:
    """java.util.HashMap's bucket of a key in a table of ``size``."""
    value = java_hash(text)
    return (value ^ (value >> 16)) & (size - 1)


def test_the_keeper_user_is_in_bucket_0_of_every_java_hashmap() -> None:
    """A bucket is 0 for every table size only when the hash is 0."""
    assert java_hash(KEEPER_USER) == 0
    assert all(bucket(KEEPER_USER, 2**bits) == 0 for bits in range(4, 31))
    assert bucket("alice") == 9 and bucket(ADMIN_USER) == 14  # the bug's case: alice's removal walked first


def test_the_authorizer_runs_on_sasl_ssl_brokers_and_controllers_only() -> None:
    for role in ("broker", "controller"):
        settings_ = security_settings(ListenerPlan.build(security="sasl_ssl"), role)
        assert settings_["authorizer.class.name"] == AUTHORIZER
        assert settings_["super.users"] == f"User:{ADMIN_USER};User:CN=swarmkit-internal"
        assert "authorizer.class.name" not in security_settings(ListenerPlan.build(security="ssl"), role)
