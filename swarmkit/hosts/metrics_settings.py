"""The inventory's ``metrics:`` block: where alerts go and when the consumer-lag and disk rules fire.

```yaml
metrics:
  alerts:
    webhook: https://hooks.example.net/kafka            # or {url: URL, token_file: PATH}
    email: {to: oncall@example.net, from: kafka@example.net, smarthost: smtp.example.net:587,
            username: kafka, password_file: secrets/smtp-password}
    group_wait: 30          # seconds: how long the first alert of a group waits for others
    group_interval: 300     # seconds between notifications of a group that changed
    repeat_interval: 14400  # seconds before a group that still fires is sent again
  lag_minutes: 10           # ConsumerLagGrowing fires after the lag grew this long
  disk_full: 0.8            # KafkaDiskFilling fires above this fraction of a log directory's file system
```

Secrets (the SMTP password, the webhook's bearer token) are never written in the inventory: it names files
(relative to the inventory's directory) whose content `metrics up` hands to the swarm as secrets.  Contacts
nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from swarmkit.errors import InventoryError

METRICS_FIELDS = ("alerts", "lag_minutes", "disk_full")
ALERT_FIELDS = ("webhook", "email", "group_wait", "group_interval", "repeat_interval")
WEBHOOK_FIELDS = ("url", "token_file")
EMAIL_FIELDS = ("to", "from", "smarthost", "username", "password_file", "require_tls")
REQUIRED_EMAIL_FIELDS = ("to", "from", "smarthost")
HINT = "see the metrics: block in docs/metrics.md#alerts-that-reach-someone"
Fail = Callable[[str, str], InventoryError]  # (field, problem) -> the inventory's one-line error


@dataclass(frozen=True)
class Webhook:
    url: str
    token_file: str = ""  # resolved path of a file holding a bearer token (a secret), or ""


@dataclass(frozen=True)
class Email:
    to: str
    sender: str
    smarthost: str  # host:port
    username: str = ""
    password_file: str = ""  # resolved path of a file holding the SMTP password (a secret), or ""
    require_tls: bool = True


@dataclass(frozen=True)
class Alerting:
    webhook: Webhook | None = None
    email: Email | None = None
    group_wait_s: int = 30
    group_interval_s: int = 300
    repeat_interval_s: int = 4 * 3600


@dataclass(frozen=True)
class MetricsSettings:
    alerts: Alerting = field(default_factory=Alerting)
    lag_minutes: int = 10
    disk_full: float = 0.8


def parse_metrics(raw: object, base_dir: Path, fail: Fail) -> MetricsSettings:
    if raw is None:
        return MetricsSettings()
    mapping = _mapping(raw, "metrics", METRICS_FIELDS, fail)
    lag = _whole(mapping.get("lag_minutes", 10), "metrics.lag_minutes", fail, minimum=1)
    disk = mapping.get("disk_full", 0.8)
    if isinstance(disk, bool) or not isinstance(disk, (int, float)) or not 0 < disk < 1:
        raise fail("metrics.disk_full", f"{disk!r} is not a fraction between 0 and 1 (e.g. 0.8)")
    return MetricsSettings(_alerting(mapping.get("alerts"), base_dir, fail), lag, float(disk))


def _alerting(raw: object, base_dir: Path, fail: Fail) -> Alerting:
    if raw is None:
        return Alerting()
    mapping = _mapping(raw, "metrics.alerts", ALERT_FIELDS, fail)
    timing = {
        key: _whole(mapping.get(key, default), f"metrics.alerts.{key}", fail, minimum=1)
        for key, default in (("group_wait", 30), ("group_interval", 300), ("repeat_interval", 4 * 3600))
    }
    webhook = _webhook(mapping["webhook"], base_dir, fail) if "webhook" in mapping else None
    email = _email(mapping["email"], base_dir, fail) if "email" in mapping else None
    return Alerting(webhook, email, timing["group_wait"], timing["group_interval"], timing["repeat_interval"])


def _webhook(raw: object, base_dir: Path, fail: Fail) -> Webhook:
    mapping = {"url": raw} if isinstance(raw, str) else _mapping(raw, "metrics.alerts.webhook", WEBHOOK_FIELDS, fail)
    url = mapping.get("url")
    if not isinstance(url, str):
        raise fail("metrics.alerts.webhook", f"{url!r} is not an http(s) URL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise fail("metrics.alerts.webhook", f"{url!r} is not an http(s) URL")
    if parts.password:
        raise fail("metrics.alerts.webhook", "the URL holds a password: put a token in a file and name it as token_file")
    token = _secret_file(mapping.get("token_file"), "metrics.alerts.webhook.token_file", base_dir, fail)
    return Webhook(url, token)


def _email(raw: object, base_dir: Path, fail: Fail) -> Email:
    mapping = _mapping(raw, "metrics.alerts.email", EMAIL_FIELDS, fail)
    text = {}
    for key in ("to", "from", "smarthost", "username"):
        value = mapping.get(key, "")
        if not isinstance(value, str) or (key in REQUIRED_EMAIL_FIELDS and not value):
            raise fail(f"metrics.alerts.email.{key}", "is missing" if not value else f"{value!r} is not a string")
        text[key] = value
    host, _, port = text["smarthost"].rpartition(":")
    if not host or not port.isdigit():
        raise fail("metrics.alerts.email.smarthost", f"{text['smarthost']!r} is not HOST:PORT (e.g. smtp.example.net:587)")
    require_tls = mapping.get("require_tls", True)
    if not isinstance(require_tls, bool):
        raise fail("metrics.alerts.email.require_tls", f"{require_tls!r} is not true or false")
    password = _secret_file(mapping.get("password_file"), "metrics.alerts.email.password_file", base_dir, fail)
    return Email(text["to"], text["from"], text["smarthost"], text["username"], password, require_tls)


def _secret_file(raw: object, where: str, base_dir: Path, fail: Fail) -> str:
    """A file named in the inventory, resolved against its directory; its content is a secret, never read here."""
    if raw is None:
        return ""
    if not isinstance(raw, str) or not raw:
        raise fail(where, f"{raw!r} is not a path")
    resolved = base_dir / Path(raw).expanduser()
    if not resolved.is_file():
        raise fail(where, f"no such file: {resolved}")
    return str(resolved)


def _mapping(raw: object, where: str, known: tuple[str, ...], fail: Fail) -> dict:
    if not isinstance(raw, dict):
        raise fail(where, f"must be a mapping ({', '.join(known)})")
    for key in raw:
        if key not in known:
            raise fail(f"{where}.{key}", f"unknown field (known: {', '.join(known)})")
    return raw


def _whole(raw: object, where: str, fail: Fail, minimum: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or raw < minimum:
        raise fail(where, f"{raw!r} is not a whole number of at least {minimum}")
    return raw
