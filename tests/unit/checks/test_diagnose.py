"""The listener verdicts, as pure functions of what was observed (no network)."""

from __future__ import annotations

import socket
import time
from dataclasses import replace

import pytest

from swarmkit.checks import diagnose
from swarmkit.checks.diagnose import (
    Probe,
    classify_host,
    judge_bootstrap,
    judge_broker,
    judge_cluster,
    split_endpoint,
)
from swarmkit.errors import SpecError
from swarmkit.kafka.admin import BrokerInfo, ClusterMetadata

EC2_INTERNAL = "ip-172-31-18-160.us-west-2.compute.internal"


def healthy(host: str, port: int = 9094, node_id: int = 1, cluster: str = "c1") -> Probe:
    return Probe(
        host,
        port,
        addresses=("54.191.84.122",),
        connect="ok",
        answered=True,
        answered_cluster_id=cluster,
        answered_brokers=((node_id, f"{host}:{port}"),),
    )


@pytest.mark.parametrize(
    ("host", "kind"),
    [
        ("0.0.0.0", "wildcard"),
        ("::", "wildcard"),
        ("localhost", "loopback"),
        ("127.0.1.1", "loopback"),
        ("::1", "loopback"),
        ("3f4e2a1b9c0d", "container-id"),
        ("3f4e2a1b9c0d" + "a" * 52, "container-id"),
        (EC2_INTERNAL, "internal-name"),
        ("kafka.svc.cluster.local", "internal-name"),
        ("node2", "bare-name"),
        ("kafka0", "bare-name"),
        ("10.231.0.11", "ip"),
        ("ec2-54-191-84-122.us-west-2.compute.amazonaws.com", "name"),
    ],
)
def test_classify_host(host: str, kind: str) -> None:
    assert classify_host(host) == kind


def test_split_endpoint() -> None:
    assert split_endpoint("broker1:9094") == ("broker1", 9094)
    assert split_endpoint("[::1]:9094") == ("::1", 9094)
    for bad in ("broker1", "broker1:", ":9094", "b:99999", "b:x"):
        with pytest.raises(SpecError):
            split_endpoint(bad)


def test_healthy_broker_is_ok() -> None:
    check = judge_broker(1, healthy("broker1.example.com"), client_local=False, cluster_id="c1")
    assert check.ok and check.resolves and check.reachable and check.metadata_ok
    assert check.cause == "" and check.fix == ""
    assert check.to_dict()["ok"] is True


def test_a_slow_sasl_login_within_the_timeout_is_a_warning_that_names_it() -> None:
    probe = replace(healthy("b1.example.com"), metadata_ms=2100.0, allowed_s=5.0, login="SASL_SSL")
    check = judge_broker(1, probe, client_local=False, cluster_id="c1")
    assert check.ok
    assert "warning: answered in 2.1 s: slow SASL handshake" in check.detail


def test_an_answer_after_the_timeout_is_a_slow_broker_not_an_unreachable_one() -> None:
    probe = replace(healthy("b1.example.com"), metadata_ms=7400.0, allowed_s=5.0, login="SASL_SSL")
    check = judge_broker(1, probe, client_local=False, cluster_id="c1")
    assert not check.ok and check.reachable and check.metadata_ok
    assert check.detail.startswith("b1.example.com:9094 answered in 7.4 s, more than the 5 s allowed: slow SASL handshake")
    assert check.fix == diagnose.FIX_SLOW_LOGIN
    plain = judge_broker(1, replace(probe, login=""), client_local=False, cluster_id="c1")
    assert "slow broker" in plain.detail and plain.fix == diagnose.FIX_SLOW


def test_a_quick_answer_carries_no_slowness_note() -> None:
    probe = replace(healthy("b1.example.com"), metadata_ms=90.0, allowed_s=5.0, login="SASL_SSL")
    assert "slow" not in judge_broker(1, probe, client_local=False, cluster_id="c1").detail


def test_unresolvable_internal_name_is_the_seeds_failure() -> None:
    probe = Probe(EC2_INTERNAL, 9092, resolve_error="Name or service not known")
    check = judge_broker(0, probe, client_local=False)
    assert not check.ok and not check.resolves and not check.reachable
    assert check.advertised == f"{EC2_INTERNAL}:9092"
    assert "internal hostname" in check.cause
    assert "advertised.listeners" in check.fix and "HOSTNAME_COMMAND" in check.fix
    assert "inventory-address" in check.fix


def test_container_id_and_bare_name() -> None:
    container = judge_broker(1, Probe("3f4e2a1b9c0d", 9092, resolve_error="not known"), client_local=False)
    assert "container id" in container.cause
    bare = judge_broker(2, Probe("node2", 9094, resolve_error="not known"), client_local=False)
    assert "bare host" in bare.cause and "advertised.listeners" in bare.fix


def test_bare_name_that_resolves_is_fine() -> None:
    assert judge_broker(1, healthy("node2"), client_local=False).ok


def test_localhost_is_wrong_for_a_remote_client_even_if_something_answers() -> None:
    check = judge_broker(0, healthy("localhost", node_id=0), client_local=False)
    assert not check.ok and check.reachable
    assert "localhost" in check.cause and "own machine" in check.cause


def test_localhost_is_fine_when_the_client_is_on_the_broker_machine() -> None:
    assert judge_broker(0, healthy("127.0.0.1", node_id=0), client_local=True).ok


def test_wildcard_is_never_a_valid_advertised_address() -> None:
    check = judge_broker(0, healthy("0.0.0.0", node_id=0), client_local=True)
    assert not check.ok and "bind-all" in check.cause


def test_refused_is_the_wrong_listener_or_a_dead_broker() -> None:
    probe = Probe("node1", 9092, addresses=("10.231.0.11",), connect="refused", connect_error="refused")
    check = judge_broker(1, probe, client_local=False)
    assert check.resolves and not check.reachable and not check.ok
    assert "wrong listener" in check.cause and "private address" in check.cause
    assert "9094" in check.fix


def test_timeout_names_the_firewall() -> None:
    probe = Probe("broker1.example.com", 9094, addresses=("54.191.84.122",), connect="timeout")
    check = judge_broker(1, probe, client_local=False)
    assert "time out" in check.detail and "security group" in check.cause
    assert "private address" not in check.cause


def test_connects_but_no_kafka() -> None:
    probe = Probe("b1.example.com", 9094, addresses=("54.191.84.122",), connect="ok", metadata_error="timed out")
    check = judge_broker(1, probe, client_local=False)
    assert check.reachable and not check.metadata_ok and "not a Kafka listener" in check.cause


def test_answers_as_a_different_broker() -> None:
    probe = healthy("b1.example.com", node_id=2)
    check = judge_broker(1, probe, client_local=False, cluster_id="c1")
    assert not check.ok and "different broker" in check.cause


def test_answers_for_another_cluster() -> None:
    check = judge_broker(1, healthy("b1.example.com", cluster="other"), client_local=False, cluster_id="c1")
    assert not check.ok and "another cluster" in check.cause


def metadata(*brokers: BrokerInfo) -> ClusterMetadata:
    return ClusterMetadata("b1.example.com:9094", "c1", brokers[0].node_id, brokers, ())


def test_cluster_ok_only_when_every_broker_is() -> None:
    good = BrokerInfo(1, "b1.example.com", 9094)
    bad = BrokerInfo(2, EC2_INTERNAL, 9094)
    probes = {1: healthy("b1.example.com"), 2: Probe(EC2_INTERNAL, 9094, resolve_error="not known")}
    report = judge_cluster("b1.example.com:9094", metadata(good, bad), probes)
    assert not report.ok
    assert [b.ok for b in report.brokers] == [True, False]
    data = report.to_dict()
    assert data["brokers"][1]["advertised"] == f"{EC2_INTERNAL}:9094"
    assert data["cluster_id"] == "c1" and data["bootstrap_check"] is None
    all_good = judge_cluster("b1.example.com:9094", metadata(good), {1: healthy("b1.example.com")})
    assert all_good.ok


def test_two_brokers_advertising_one_address() -> None:
    brokers = (BrokerInfo(1, "kafka", 9094), BrokerInfo(2, "kafka", 9094))
    probes = {1: healthy("kafka", node_id=1), 2: healthy("kafka", node_id=1)}
    report = judge_cluster("kafka:9094", metadata(*brokers), probes)
    assert not report.ok
    assert all("all advertise kafka:9094" in b.cause for b in report.brokers)


def test_no_metadata_explains_the_bootstrap() -> None:
    report = judge_cluster("gone.example.com:9094", None, {}, Probe("gone.example.com", 9094, resolve_error="x"))
    assert not report.ok and report.brokers == ()
    assert report.bootstrap_check is not None and "does not resolve" in report.bootstrap_check.cause
    assert report.to_dict()["bootstrap_check"]["node_id"] == -1


def test_every_bootstrap_address_that_gave_nothing_is_named() -> None:
    refused = Probe("127.0.0.1", 9, addresses=("127.0.0.1",), connect="refused")
    report = judge_cluster("127.0.0.1:9,b:2", None, {}, refused, [Probe("b", 2, resolve_error="no such name")])
    assert report.bootstrap_check is not None
    assert report.bootstrap_check.detail == "127.0.0.1:9 refuses connections; b:2 does not resolve from here: no such name"


def test_bootstrap_verdicts() -> None:
    refused = judge_bootstrap(Probe("b1", 9094, addresses=("10.0.0.5",), connect="refused"))
    assert "nothing listens" in refused.cause
    filtered = judge_bootstrap(Probe("b1", 9094, addresses=("10.0.0.5",), connect="timeout"))
    assert "firewall" in filtered.cause and "private address" in filtered.cause
    silent = judge_bootstrap(Probe("b1", 9094, addresses=("10.0.0.5",), connect="ok", metadata_error="x"))
    assert "not a Kafka listener" in silent.cause
    slow = judge_bootstrap(Probe("b1", 9094, addresses=("10.0.0.5",), connect="ok", answered=True))
    assert "slowly" in slow.cause and not slow.ok


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_refused_bootstrap_is_reported_at_once_not_after_the_timeout() -> None:
    started = time.monotonic()
    report = diagnose.diagnose(f"127.0.0.1:{_closed_port()},127.0.0.1:{_closed_port()}", timeout=20)
    assert time.monotonic() - started < 5
    assert not report.ok and report.bootstrap_check is not None and "refuses connections" in report.bootstrap_check.detail


@pytest.mark.parametrize("text", ["a:1,,b:2", "a:0", "a:70000", "a:\u0661", "a b:1", ":1", "a:1,b"])
def test_every_bootstrap_address_is_checked(text: str) -> None:
    with pytest.raises(SpecError, match="is not HOST:PORT"):
        diagnose.split_bootstrap(text)
    assert diagnose.split_bootstrap("a:1, [::1]:2") == [("a", 1), ("::1", 2)]
