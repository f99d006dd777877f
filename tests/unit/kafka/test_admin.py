"""KafkaAdmin settles every request's futures one way: an answer, or an error that is raised or reported."""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import confluent_kafka as ck
import pytest

from swarmkit import fanout
from swarmkit.errors import BrokerError
from swarmkit.kafka.admin import KafkaAdmin
from swarmkit.security.acls import Grant
from swarmkit.stack.topics import TopicSpec


def settled(value: object = None, error: BaseException | None = None) -> Future:
    future: Future = Future()
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(value)
    return future


class Pending(Future):
    def result(self, timeout: float | None = None) -> object:
        raise TimeoutError


REFUSED = ck.KafkaException(ck.KafkaError(ck.KafkaError.TOPIC_AUTHORIZATION_FAILED, "Topic authorization failed"))


def test_each_future_settles_to_its_answer_or_a_named_error() -> None:
    kafka = KafkaAdmin("k1:9094", timeout=0.1)
    answers = kafka._settle({"a": settled({"x": 1}), "b": settled(error=REFUSED), "c": Pending()})
    assert answers["a"] == {"x": 1}
    assert answers["b"]["error"]["name"] == "TOPIC_AUTHORIZATION_FAILED"
    assert answers["c"]["error"]["name"] == "TIMED_OUT"


def test_a_request_with_failures_raises_one_error_naming_each() -> None:
    kafka = KafkaAdmin("k1:9094", timeout=0.1)
    with pytest.raises(BrokerError, match="adding partitions through k1:9094 failed: b: .*; c: no answer") as raised:
        kafka._all("adding partitions", {"a": settled(), "b": settled(error=REFUSED), "c": Pending()})
    assert raised.value.hint
    with pytest.raises(BrokerError, match="describing the cluster through k1:9094 failed"):
        kafka._one("describing the cluster", settled(error=REFUSED))


class ElectingController:
    """create_topics as a broker answers it while the quorum elects its leader: timed out once, then created."""

    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    def create_topics(self, new: list, **_: object) -> dict[str, Future]:
        self.asked.append([topic.topic for topic in new])
        waiting = ck.KafkaError(ck.KafkaError.REQUEST_TIMED_OUT, "Timed out waiting for controller", retriable=True)
        if len(self.asked) == 1:
            return {topic.topic: settled(error=ck.KafkaException(waiting)) for topic in new}
        return {topic.topic: settled() for topic in new}


def test_a_creation_the_controller_did_not_answer_is_sent_again_and_a_refused_one_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kafka = KafkaAdmin("k1:9094", timeout=0.1)
    electing, refusing = ElectingController(), Refusing()
    monkeypatch.setattr(kafka, "_client", SimpleNamespace(admin=electing))
    assert kafka._create([TopicSpec("orders", 3, 3)])["orders"].status == "created"
    assert electing.asked == [["orders"], ["orders"]]
    monkeypatch.setattr(kafka, "_client", SimpleNamespace(admin=refusing))
    assert kafka._create([TopicSpec("orders", 3, 3)])["orders"].status == "failed"
    assert refusing.asked == 1


def test_a_client_that_timed_out_waiting_for_its_controller_is_replaced_before_the_next_try(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kafka = KafkaAdmin("k1:9094", timeout=0.1)
    stuck, answering = StuckOnOneBroker(), StuckOnOneBroker(stuck=0)
    clients = iter([client(answering)])
    monkeypatch.setattr(kafka, "_client", client(stuck))
    monkeypatch.setattr(kafka, "_metadata_answer", lambda: setattr(kafka, "_client", next(clients)))
    assert kafka._create([TopicSpec("orders", 3, 3)])["orders"].status == "created"
    assert (stuck.asked, answering.asked) == (1, 1)


def test_a_creation_still_stuck_at_the_end_names_the_broker_librdkafka_could_not_reach(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kafka = KafkaAdmin("k1:9094", timeout=0.1)
    monkeypatch.setattr("swarmkit.kafka.admin.CREATE_RETRY_S", 0.01)
    monkeypatch.setattr(kafka, "_client", client(StuckOnOneBroker()))
    result = kafka._create([TopicSpec("orders", 3, 3)])["orders"]
    assert result.status == "failed" and result.detail == f"Timed out waiting for controller ({UNREACHABLE}; {FENCED})"
    assert kafka._client is None


UNREACHABLE = "k3:9094/3: Connect to ipv4#10.0.0.3:9094 failed: Connection refused"
FENCED = "metadata names no controller: the broker that answered knows no unfenced broker"


def client(admin: object) -> SimpleNamespace:
    return SimpleNamespace(admin=admin, last_error=lambda: UNREACHABLE, named_controller=lambda: FENCED)


class StuckOnOneBroker:
    """create_topics from a client whose metadata named, as controller, a broker it could not reach in time."""

    def __init__(self, stuck: int = 1_000) -> None:
        self.stuck, self.asked = stuck, 0

    def create_topics(self, new: list, **_: object) -> dict[str, Future]:
        self.asked += 1
        if self.asked > self.stuck:
            return {topic.topic: settled() for topic in new}
        waiting = ck.KafkaError(ck.KafkaError._TIMED_OUT, "Timed out waiting for controller", retriable=True)
        return {topic.topic: settled(error=ck.KafkaException(waiting)) for topic in new}


class Refusing:
    asked = 0

    def create_topics(self, new: list, **_: object) -> dict[str, Future]:
        self.asked += 1
        return {topic.topic: settled(error=REFUSED) for topic in new}


class LaggingBroker:
    """ACLs as a cluster answers them right after a change: the broker that answers the read has not applied the
    controllers' record yet for the first ``lag`` reads after it."""

    def __init__(self, lag: int) -> None:
        self.bindings: set = set()
        self.applied: set = set()
        self.lag = lag
        self.reads = 0

    def create_acls(self, bindings: list, **_: object) -> dict:
        self.bindings |= set(bindings)
        return {binding: settled() for binding in bindings}

    def describe_acls(self, _filter: object, **__: object) -> Future:
        self.reads += 1
        if self.bindings != self.applied:
            self.lag -= 1
            if self.lag < 0:
                self.applied = set(self.bindings)
        return settled(list(self.applied))


def test_grants_are_read_back_once_the_answering_broker_has_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """`users add alice --allow …` printed "(no grants)" when its read-back came before the broker applied them."""
    kafka = KafkaAdmin("k1:9094", timeout=5)
    broker = LaggingBroker(lag=2)
    monkeypatch.setattr(kafka, "_client", SimpleNamespace(admin=broker))
    monkeypatch.setattr(fanout, "pause", lambda seconds: None)
    grant = Grant("topic", "orders", False, "write")
    assert kafka.set_grants("alice", [grant]) == (grant,)
    assert broker.reads == 4  # one before the change, three until it shows: none more for the answer
    assert kafka.user_grants("alice") == (grant,)


def test_grants_no_broker_shows_fail_with_the_wait_named(monkeypatch: pytest.MonkeyPatch) -> None:
    kafka = KafkaAdmin("k1:9094", timeout=0.2)
    monkeypatch.setattr(kafka, "_client", SimpleNamespace(admin=LaggingBroker(lag=10**6)))
    with pytest.raises(BrokerError, match="alice's grants not yet answered as changed through k1:9094"):
        kafka.set_grants("alice", [Grant("topic", "orders", False, "write")])
