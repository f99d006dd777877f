"""A stand-in for swarmkit.kafka.admin.KafkaAdmin in callers' unit tests: each method answers from a script.

``FakeKafka(partition_states=[answer, BrokerError(...), ...])``: each call of the method takes the next
answer (an exception is raised); the calls made are kept in ``calls``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


class FakeKafka:
    def __init__(self, bootstrap: str = "fake:9092", security: object = None, **scripts: Iterable[Any]) -> None:
        self.bootstrap, self.security, self.timeout = bootstrap, security, 5.0
        self.scripts = {name: iter(answers) for name, answers in scripts.items()}
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.closed = False

    def __enter__(self) -> FakeKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True

    def script(self, name: str, answers: Iterable[Any]) -> None:
        self.scripts[name] = iter(answers)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in self.scripts:
            raise AttributeError(f"FakeKafka has no script for {name}")

        def call(*args: Any) -> Any:
            self.calls.append((name, args))
            answer = next(self.scripts[name])
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return call
