"""Alertmanager beside Prometheus in the metrics stack (pure): where firing and resolved alerts are sent.

Its receivers come from the inventory's ``metrics.alerts`` (``swarmkit.hosts.metrics_settings``): a webhook,
an e-mail address, or both, each a receiver of its own so that Alertmanager's API names, per alert, where it
went.  Secrets (the webhook's bearer token, the SMTP password) are swarm secrets mounted in the container
and named in ``alertmanager.yml`` by path only (``credentials_file``, ``auth_password_file``): neither the
rendered files nor ``docker service inspect`` holds them.  Without a receiver Alertmanager still runs, so
``swarmkit metrics status`` and its API show what fires.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from swarmkit.hosts.metrics_settings import Alerting
from swarmkit.security.settings import SecretFile
from swarmkit.stack.metrics import NOBODY  # the image's user, as the node exporter's

SERVICE = "alertmanager"
PORT = 9093  # inside the container; the published port is the user's (--alert-port)
DATA_DIR = "/alertmanager"
DATA_VOLUME = "alerts"
SECRETS_DIR = "/run/secrets"
WEBHOOK_TOKEN = "webhook-token"
SMTP_PASSWORD = "smtp-password"
SILENT = "nobody"  # the root route's receiver: alerts that match no other go nowhere
GROUP_BY = ["alertname", "kafka_stack"]  # one notification per kind of alert, listing every node it fires on


@dataclass(frozen=True)
class AlertSpec:
    """The receivers and their timing, and the secrets read from the files the inventory names."""

    alerting: Alerting = field(default_factory=Alerting)
    secrets: tuple[SecretFile, ...] = ()


def secret_files(alerting: Alerting, read: Callable[[str], str]) -> tuple[SecretFile, ...]:
    """The swarm secrets the receivers need; ``read(path)`` gives a file's content (stripped of a final newline)."""
    wanted = []
    if alerting.webhook and alerting.webhook.token_file:
        wanted.append((WEBHOOK_TOKEN, alerting.webhook.token_file))
    if alerting.email and alerting.email.password_file:
        wanted.append((SMTP_PASSWORD, alerting.email.password_file))
    return tuple(SecretFile(key, f"{SECRETS_DIR}/{key}", read(path)) for key, path in wanted)


def _webhook(spec: AlertSpec) -> dict[str, Any]:
    assert spec.alerting.webhook is not None
    config: dict[str, Any] = {"url": spec.alerting.webhook.url, "send_resolved": True}
    if spec.alerting.webhook.token_file:
        config["http_config"] = {"authorization": {"type": "Bearer", "credentials_file": f"{SECRETS_DIR}/{WEBHOOK_TOKEN}"}}
    return {"name": "webhook", "webhook_configs": [config]}


def _email(spec: AlertSpec) -> dict[str, Any]:
    email = spec.alerting.email
    assert email is not None
    config: dict[str, Any] = {
        "to": email.to,
        "from": email.sender,
        "smarthost": email.smarthost,
        "require_tls": email.require_tls,
        "send_resolved": True,
    }
    if email.username:
        config["auth_username"] = email.username
    if email.password_file:
        config["auth_password_file"] = f"{SECRETS_DIR}/{SMTP_PASSWORD}"
    return {"name": "email", "email_configs": [config]}


def receivers(spec: AlertSpec) -> list[dict[str, Any]]:
    found = [{"name": SILENT}]
    if spec.alerting.webhook:
        found.append(_webhook(spec))
    if spec.alerting.email:
        found.append(_email(spec))
    return found


def server_config(spec: AlertSpec) -> dict[str, Any]:
    """alertmanager.yml as data: every alert goes to every receiver (``continue``), grouped per kind of alert."""
    alerting = spec.alerting
    targets = [receiver["name"] for receiver in receivers(spec)[1:]]
    return {
        "route": {
            "receiver": SILENT,
            "group_by": GROUP_BY,
            "group_wait": f"{alerting.group_wait_s}s",
            "group_interval": f"{alerting.group_interval_s}s",
            "repeat_interval": f"{alerting.repeat_interval_s}s",
            "routes": [{"receiver": name, "continue": True} for name in targets],
        },
        "receivers": receivers(spec),
    }


def service(spec: AlertSpec, image: str, config_target: str) -> dict[str, Any]:
    """The service's settings besides placement, network and ports (the metrics stack adds those)."""
    settings: dict[str, Any] = {
        "image": image,
        "command": [
            f"--config.file={config_target}",
            f"--storage.path={DATA_DIR}",
            f"--web.listen-address=:{PORT}",
            "--cluster.listen-address=",  # one Alertmanager: no gossip port
        ],
        "volumes": [{"type": "volume", "source": DATA_VOLUME, "target": DATA_DIR}],
    }
    if spec.secrets:
        settings["secrets"] = [
            {"source": s.name, "target": s.target.rsplit("/", 1)[1], "uid": NOBODY, "gid": NOBODY, "mode": 0o400}
            for s in spec.secrets
        ]
    return settings
