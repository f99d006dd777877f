"""Client quotas in the declared state (pure): the inventory's stack.quotas, what `up` changes, what plan refuses."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swarmkit.errors import InventoryError, SpecError
from swarmkit.hosts.inventory import QUOTA_RATES, DeclaredQuota, Host, Inventory, StackDefaults, parse_inventory
from swarmkit.ops.declared import Changes, QuotaChange, diff_quotas
from swarmkit.ops.plan import DeployOptions, plan

HOSTS = [{"name": "k1", "endpoint": "unix:///k1.sock", "address": "10.0.0.1", "role": "manager"}]
BULK = (("client-id", "bulk"),)
ORDERS_APP = (("user", "orders-app"), ("client-id", "orders"))


def quotas_of(raw: object) -> tuple[DeclaredQuota, ...] | None:
    return parse_inventory({"stack": {"quotas": raw}, "hosts": HOSTS}).stack.quotas


def test_the_stack_block_declares_quotas_per_user_and_or_client_id() -> None:
    declared = quotas_of(
        [
            {"client_id": "bulk", "producer_byte_rate": 262144},
            {"user": "orders-app", "client_id": "orders", "consumer_byte_rate": 1048576, "request_percentage": 12.5},
        ]
    )
    assert declared == (
        DeclaredQuota("", "bulk", (("producer_byte_rate", 262144.0),)),
        DeclaredQuota("orders-app", "orders", (("consumer_byte_rate", 1048576.0), ("request_percentage", 12.5))),
    )
    assert [quota.entity for quota in declared] == [BULK, ORDERS_APP]
    assert quotas_of([]) == () and quotas_of(None) == ()
    assert parse_inventory({"hosts": HOSTS}).stack.quotas is None  # not declared: the cluster's are left alone


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"bulk": 1}, "must be a list"),
        (["bulk"], "#1: must be a mapping"),
        ([{"client_id": "bulk", "producer_rate": 1}], "stack.quotas.#1.*unknown field 'producer_rate'"),
        ([{"client_id": "bulk", "producer_byte_rate": 0}], "producer_byte_rate: 0 is not a number above 0"),
        ([{"client_id": "bulk", "consumer_byte_rate": -5}], "consumer_byte_rate: -5 is not a number above 0"),
        ([{"client_id": "bulk", "producer_byte_rate": "fast"}], "'fast' is not a number above 0"),
        ([{"client_id": "bulk", "producer_byte_rate": True}], "True is not a number above 0"),
        ([{"client_id": "bulk", "producer_byte_rate": 1.5}], "1.5 is not a whole number of bytes per second"),
        ([{"client_id": "bulk", "request_percentage": 101}], "request_percentage: 101 is above 100"),
        ([{"producer_byte_rate": 1024}], "names neither a user nor a client_id"),
        ([{"user": "", "producer_byte_rate": 1024}], "user: '' is not a name"),
        ([{"client_id": "bulk"}], "sets no quota"),
        ([{"client_id": "a", "producer_byte_rate": 1}, {"client_id": "a", "consumer_byte_rate": 1}], "#2: client-id a has"),
    ],
)
def test_a_wrong_quota_is_refused_with_its_place_and_a_hint(raw: object, message: str) -> None:
    with pytest.raises(InventoryError, match=message) as raised:
        quotas_of(raw)
    assert raised.value.exit_code == 2 and raised.value.hint


def test_new_changed_and_removed_quotas() -> None:
    declared = (DeclaredQuota("", "bulk", (("producer_byte_rate", 262144.0),)),)
    actual = {BULK: {"producer_byte_rate": 1024.0, "request_percentage": 50.0}, ORDERS_APP: {"consumer_byte_rate": 1.0}}
    changes = diff_quotas(declared, actual)
    assert changes == [
        QuotaChange(BULK, (("producer_byte_rate", 1024.0, 262144.0), ("request_percentage", 50.0, None))),
        QuotaChange(ORDERS_APP, (("consumer_byte_rate", 1.0, None),)),
    ]
    assert [change.line() for change in changes] == [
        "quotas of client-id bulk: producer_byte_rate 1024 -> 262144; request_percentage 50 -> (removed)",
        "quotas of user orders-app and client-id orders: consumer_byte_rate 1 -> (removed)",
    ]
    assert diff_quotas(declared, {}) == [QuotaChange(BULK, (("producer_byte_rate", None, 262144.0),))]
    assert Changes("kafka", True, (), (), (), quotas=tuple(changes)).pending
    assert Changes("kafka", True, (), (), ()).lines() == ["no changes"]


def test_undeclared_quotas_and_other_quota_keys_are_left_alone() -> None:
    actual = {BULK: {"producer_byte_rate": 1024.0, "controller_mutation_rate": 5.0}}
    assert diff_quotas(None, actual) == []
    assert diff_quotas((DeclaredQuota("", "bulk", (("producer_byte_rate", 1024.0),)),), actual) == []


entities = st.sampled_from([BULK, ORDERS_APP, (("user", "audit"),)])
rates = st.dictionaries(st.sampled_from(QUOTA_RATES), st.integers(1, 10**9).map(float), min_size=1)


@given(st.dictionaries(entities, rates), st.dictionaries(entities, rates))
def test_after_applying_the_quota_changes_nothing_is_left(declared: dict, actual: dict) -> None:
    quotas = tuple(
        DeclaredQuota(dict(e).get("user", ""), dict(e).get("client-id", ""), tuple(r.items())) for e, r in declared.items()
    )
    after = {entity: dict(found) for entity, found in actual.items()}
    for change in diff_quotas(quotas, actual):
        held = after.setdefault(change.entity, {})
        for key, _, new in change.rates:
            held.pop(key) if new is None else held.__setitem__(key, new)
    assert diff_quotas(quotas, {entity: found for entity, found in after.items() if found}) == []


def with_quotas(engine: str, security: str, *quotas: DeclaredQuota) -> Inventory:
    hosts = (Host("k1", "unix:///k1", "10.0.0.1", "manager"),)
    return Inventory(hosts=hosts, path="inv.yaml", stack=StackDefaults(engine=engine, security=security, quotas=quotas))


def test_quotas_need_apache_brokers_and_a_user_quota_needs_clients_that_log_in() -> None:
    by_client = DeclaredQuota("", "bulk", (("producer_byte_rate", 1024.0),))
    assert plan(with_quotas("apache", "plaintext", by_client), DeployOptions()).quotas == (by_client,)
    with pytest.raises(SpecError, match="client quotas need Apache Kafka brokers, and this stack's engine is tansu"):
        plan(with_quotas("tansu", "plaintext", by_client), DeployOptions())
    with pytest.raises(SpecError, match="a quota of user orders-app needs clients that log in") as raised:
        plan(with_quotas("apache", "plaintext", DeclaredQuota("orders-app", "", (("consumer_byte_rate", 1.0),))), DeployOptions())
    assert "client_id" in raised.value.hint
