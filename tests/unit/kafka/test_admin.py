"""KafkaAdmin settles every request's futures one way: an answer, or an error that is raised or reported."""

from __future__ import annotations

from concurrent.futures import Future

import confluent_kafka as ck
import pytest

from swarmkit.errors import BrokerError
from swarmkit.kafka.admin import KafkaAdmin


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
