"""A stand-in for swarmkit.kafka.admin.KafkaAdmin in callers' unit tests: each method answers from a script.

``FakeKafka(partition_states=[answer, BrokerError(...), ...])``: each call of the method takes the next
answer (an exception is raised), or calls the script when it is a function; the calls made are kept in ``calls``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Script = Iterable[Any] | Callable[..., Any]


class FakeKafka:
    def __init__(self, bootstrap: str = "fake:9092", security: object = None, timeout: float = 5.0, **scripts: Script) -> None:
        self.bootstrap, self.security, self.timeout = bootstrap, security, timeout
        self.scripts: dict[str, Any] = {}
        for name, answers in scripts.items():
            self.script(name, answers)
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.closed = False

    def __enter__(self) -> FakeKafka:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.closed = True

    def script(self, name: str, answers: Script) -> None:
        self.scripts[name] = answers if callable(answers) else iter(answers)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name not in self.scripts:
            raise AttributeError(f"FakeKafka has no script for {name}")

        def call(*args: Any) -> Any:
            self.calls.append((name, args))
            script = self.scripts[name]
            answer = script(*args) if callable(script) else next(script)
            if isinstance(answer, BaseException):
                raise answer
            return answer

        return call
