"""A webhook receiver for Alertmanager's notifications, served by the test on the sandbox bridge's address.

Alertmanager (in a container on a sandbox host) reaches the bridge's address as Prometheus reaches a
`verify --every` loop there.  Every POST is kept with when it arrived and the Authorization header it came
with (the bearer token `metrics up` hands to Alertmanager as a swarm secret).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Notification:
    arrived: float  # time.monotonic()
    authorization: str
    body: dict[str, Any]

    def alerts(self, name: str, status: str) -> Iterator[dict[str, Any]]:
        """The alerts of this notification with that name and status (firing, resolved)."""
        for alert in self.body.get("alerts", ()):
            if alert["labels"].get("alertname") == name and alert["status"] == status:
                yield alert


@dataclass
class Receiver:
    server: ThreadingHTTPServer
    received: list[Notification] = field(default_factory=list)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/alerts"

    def first(self, name: str, status: str, since: float = 0.0, **labels: str) -> tuple[float, dict[str, Any]] | None:
        """When the first notification after ``since`` with that alert arrived, and the alert."""
        for notification in list(self.received):
            if notification.arrived < since:
                continue
            for alert in notification.alerts(name, status):
                if all(alert["labels"].get(key) == value for key, value in labels.items()):
                    return notification.arrived, alert
        return None

    def wait(self, name: str, status: str, since: float, timeout: float, **labels: str) -> tuple[float, dict[str, Any]]:
        """Wait for ``first``; returns the seconds from ``since`` to its arrival, and the alert."""
        deadline = time.monotonic() + timeout
        while (found := self.first(name, status, since, **labels)) is None:
            assert time.monotonic() < deadline, f"no {status} {name} {labels} within {timeout:g} s: {self.summary()}"
            time.sleep(1)
        return found[0] - since, found[1]

    def summary(self) -> list[str]:
        return [
            f"{a['status']} {a['labels'].get('alertname')} {a['labels'].get('nodename', '')}"
            for n in self.received
            for a in n.body.get("alerts", ())
        ]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start(address: str) -> Receiver:
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            receiver.received.append(Notification(time.monotonic(), self.headers.get("Authorization", ""), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Quiet."""

    server = ThreadingHTTPServer((address, 0), Handler)
    receiver = Receiver(server)
    threading.Thread(target=server.serve_forever, name="alert-receiver", daemon=True).start()
    return receiver
