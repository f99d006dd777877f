"""`swarmkit metrics status`: what the metrics stack watches, what fires, and where it was sent.

Read over HTTP from the APIs `metrics up` publishes on the first manager (their ports are in the services'
``swarmkit.published-port`` labels): Prometheus for its targets and the alerts it holds (pending or firing),
Alertmanager for the alerts it received and the receivers each went to, and its own counters of
notifications sent and failed per integration.  The parsing is pure (tested on recorded answers).
"""

from __future__ import annotations

import json
import re
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any

from swarmkit.errors import OperationError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.session import Session
from swarmkit.stack import alertmanager, prometheus

TIMEOUT_S = 5.0
COUNTER = re.compile(r'^alertmanager_notifications(_failed)?_total\{[^}]*integration="([^"]+)"[^}]*\}\s+(\S+)$')


@dataclass(frozen=True)
class Alert:
    name: str
    state: str  # pending | firing (Prometheus) ; firing alerts Alertmanager holds carry their receivers
    severity: str
    summary: str
    since: str
    receivers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Deliveries:
    integration: str  # webhook | email
    sent: int
    failed: int


@dataclass(frozen=True)
class MetricsStatus:
    stack: str
    prometheus_url: str
    alerts_url: str
    targets: dict[str, tuple[int, int]]  # job -> (answering, known)
    alerts: tuple[Alert, ...]
    deliveries: tuple[Deliveries, ...]

    @property
    def firing(self) -> tuple[Alert, ...]:
        return tuple(alert for alert in self.alerts if alert.state == "firing")

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self), "targets": {job: list(counts) for job, counts in self.targets.items()}}


def targets(answer: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Pure: the ``up`` query's result as (answering, known) per job."""
    counts: dict[str, list[int]] = {}
    for series in answer:
        job = counts.setdefault(series["metric"].get("job", ""), [0, 0])
        job[0] += series["value"][1] == "1"
        job[1] += 1
    return {job: (up, known) for job, (up, known) in sorted(counts.items())}


def _summary(alert: dict[str, Any]) -> str:
    return str((alert.get("annotations") or {}).get("summary", ""))


def prometheus_alerts(answer: list[dict[str, Any]]) -> list[Alert]:
    """Pure: Prometheus's ``/api/v1/alerts`` (pending and firing), without receivers."""
    return [
        Alert(a["labels"]["alertname"], a["state"], a["labels"].get("severity", ""), _summary(a), a.get("activeAt", ""))
        for a in answer
    ]


def manager_alerts(answer: list[dict[str, Any]]) -> list[Alert]:
    """Pure: Alertmanager's ``/api/v2/alerts``: what it holds as firing, and the receivers each went to."""
    return [
        Alert(
            a["labels"]["alertname"],
            "firing",
            a["labels"].get("severity", ""),
            _summary(a),
            a.get("startsAt", ""),
            tuple(r["name"] for r in a.get("receivers", ()) if r["name"] != alertmanager.SILENT),
        )
        for a in answer
        if (a.get("status") or {}).get("state") == "active"
    ]


def merged(held: list[Alert], received: list[Alert]) -> tuple[Alert, ...]:
    """Prometheus's pending alerts and Alertmanager's firing ones (with receivers); a firing alert Alertmanager
    has not received yet is shown as Prometheus sees it."""
    sent = {(a.name, a.summary) for a in received}
    rest = [a for a in held if a.state != "firing" or (a.name, a.summary) not in sent]
    return tuple(sorted([*received, *rest], key=lambda a: (a.state != "firing", a.name, a.summary)))


def deliveries(text: str) -> tuple[Deliveries, ...]:
    """Pure: notifications sent and failed per integration, from Alertmanager's own metrics page."""
    counts: dict[str, list[int]] = {}
    for line in text.splitlines():
        if found := COUNTER.match(line):
            failed, integration, value = found.groups()
            counts.setdefault(integration, [0, 0])[1 if failed else 0] += int(float(value))
    return tuple(Deliveries(name, sent, failed) for name, (sent, failed) in sorted(counts.items()) if sent or failed)


def _get(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
            return response.read()
    except OSError as error:
        raise OperationError(
            f"no answer from {url}: {error}", hint="is the metrics stack up? `swarmkit metrics up -i INV`"
        ) from None


def _api(url: str, path: str) -> Any:
    return json.loads(_get(f"{url}{path}"))


def _published(session: Session, stack: str, service: str) -> str:
    host = session.inventory.first_manager
    spec = dockerapi.service_spec(session.docker[host], f"{stack}_{service}")
    if spec is None or prometheus.PORT_LABEL not in spec.labels:
        raise OperationError(f"stack {stack} has no {service} service", hint="deploy it: swarmkit metrics up -i INV")
    return f"http://{host.address}:{spec.labels[prometheus.PORT_LABEL]}/"


def metrics_status(session: Session, kafka_stack: str = "kafka") -> MetricsStatus:
    stack = prometheus.stack_name(kafka_stack)
    server, alerts_url = _published(session, stack, prometheus.SERVICE), _published(session, stack, alertmanager.SERVICE)
    up = targets(_api(server, "api/v1/query?query=up")["data"]["result"])
    held = prometheus_alerts(_api(server, "api/v1/alerts")["data"]["alerts"])
    received = manager_alerts(_api(alerts_url, "api/v2/alerts"))
    sent = deliveries(_get(f"{alerts_url}metrics").decode("utf-8", "replace"))
    return MetricsStatus(stack, server, alerts_url, up, merged(held, received), sent)
