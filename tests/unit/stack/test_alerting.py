"""Alertmanager beside Prometheus: the inventory's receivers, the rendered config and stack (no secret in either),
`metrics status` read from recorded answers, and the lag and disk figures: all pure, no Docker, no Kafka."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from swarmkit.checks.disk import parse_usage
from swarmkit.errors import InventoryError
from swarmkit.hosts.inventory import parse_inventory
from swarmkit.kafka.lag import PartitionLag, by_topic, lags
from swarmkit.ops import metrics_status
from swarmkit.ops.metrics import _alert_spec, receivers_of
from swarmkit.stack import prometheus
from swarmkit.stack.alertmanager import AlertSpec

HOSTS = [{"name": "n1", "endpoint": "unix:///x.sock", "address": "10.9.0.1", "role": "manager"}]
SPEC = prometheus.MetricsSpec("kafka", "kafka_internal", "kafka_broker", ("kafka_controller-1",), "abc123", 9090)


def settings(tmp_path: Path, block: dict):
    return parse_inventory({"hosts": HOSTS, "metrics": block}, "inv.yaml", tmp_path).metrics


@pytest.fixture
def secret_files(tmp_path: Path) -> Path:
    (tmp_path / "token").write_text("TOKEN-123\n")
    (tmp_path / "smtp").write_text("PASSWORD-456\n")
    return tmp_path


def full_block() -> dict:
    return {
        "alerts": {
            "webhook": {"url": "https://hooks.example.net/k", "token_file": "token"},
            "email": {"to": "a@example.net", "from": "k@example.net", "smarthost": "smtp:587", "password_file": "smtp"},
            "group_wait": 2,
        },
        "lag_minutes": 3,
        "disk_full": 0.9,
    }


def test_the_inventorys_receivers_become_alertmanagers_with_secrets_by_path_only(secret_files: Path) -> None:
    found = settings(secret_files, full_block())
    spec = replace(SPEC, alertmanager_image="am:1", alerts=_alert_spec(found), lag_minutes=3, disk_full=0.9)
    files = {f.filename: f.content for f in prometheus.config_files(spec)}
    manager = yaml.safe_load(files["alertmanager.yml"])
    assert [r["name"] for r in manager["receivers"]] == ["nobody", "webhook", "email"]
    assert [(r["receiver"], r["continue"]) for r in manager["route"]["routes"]] == [("webhook", True), ("email", True)]
    assert manager["route"]["group_wait"] == "2s" and manager["route"]["group_by"] == ["alertname", "kafka_stack"]
    webhook = manager["receivers"][1]["webhook_configs"][0]
    assert (
        webhook["send_resolved"] and webhook["http_config"]["authorization"]["credentials_file"] == "/run/secrets/webhook-token"
    )
    assert manager["receivers"][2]["email_configs"][0]["auth_password_file"] == "/run/secrets/smtp-password"
    stack = prometheus.render_stack(spec)
    everything = stack + "".join(files.values())
    assert "TOKEN-123" not in everything and "PASSWORD-456" not in everything
    document = yaml.safe_load(stack)
    assert {s["target"] for s in document["services"]["alertmanager"]["secrets"]} == {"webhook-token", "smtp-password"}
    assert all(entry == {"file": f"./secrets/{name}"} for name, entry in document["secrets"].items())
    assert [s.content for s in spec.alerts.secrets] == ["TOKEN-123", "PASSWORD-456"]  # the final newline dropped
    assert 'for: "3m"' in files["alerts.yml"] and "> 0.9" in files["alerts.yml"] and "@" not in files["alerts.yml"]
    assert prometheus.server_config(spec)["alerting"]["alertmanagers"][0]["static_configs"] == [
        {"targets": ["kafka-metrics_alertmanager:9093"]}
    ]
    assert receivers_of(found) == ("webhook https://hooks.example.net/k", "email a@example.net")


def test_without_a_metrics_block_alertmanager_holds_the_alerts_and_sends_nothing(tmp_path: Path) -> None:
    found = parse_inventory({"hosts": HOSTS}, "inv.yaml", tmp_path).metrics
    assert (found.lag_minutes, found.disk_full, found.alerts.webhook, found.alerts.email) == (10, 0.8, None, None)
    spec = replace(SPEC, alertmanager_image="am:1", alerts=AlertSpec(found.alerts))
    manager = yaml.safe_load(prometheus.config_files(spec)[2].content)
    assert manager["receivers"] == [{"name": "nobody"}] and manager["route"]["routes"] == []
    assert "secrets" not in yaml.safe_load(prometheus.render_stack(spec))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({"alerts": {"webhook": "ftp://x"}}, "not an http(s) URL"),
        ({"alerts": {"webhook": "https://u:pw@x/"}}, "holds a password"),
        ({"alerts": {"webhook": {"url": "https://x/", "token_file": "missing"}}}, "no such file"),
        ({"alerts": {"email": {"to": "a@b", "from": "c@d", "smarthost": "smtp"}}}, "not HOST:PORT"),
        ({"alerts": {"email": {"to": "a@b", "smarthost": "smtp:25"}}}, "'metrics.alerts.email.from': is missing"),
        ({"alerts": {"group_wait": 0}}, "not a whole number of at least 1"),
        ({"alerts": {"slack": "x"}}, "unknown field"),
        ({"lag_minutes": "ten"}, "not a whole number"),
        ({"disk_full": 80}, "not a fraction between 0 and 1"),
    ],
)
def test_a_bad_metrics_block_names_the_field(tmp_path: Path, change: dict, said: str) -> None:
    with pytest.raises(InventoryError) as refused:
        settings(tmp_path, change)
    assert said in refused.value.message and refused.value.hint


UP = [
    {"metric": {"job": "kafka-broker"}, "value": [1, "1"]},
    {"metric": {"job": "kafka-broker"}, "value": [1, "0"]},
    {"metric": {"job": "node"}, "value": [1, "1"]},
]
HELD = [
    {
        "labels": {"alertname": "KafkaNodeDown", "severity": "critical"},
        "annotations": {"summary": "node d3"},
        "state": "firing",
        "activeAt": "t1",
    },
    {
        "labels": {"alertname": "KafkaUnderReplicatedPartitions"},
        "annotations": {"summary": "2"},
        "state": "pending",
        "activeAt": "t2",
    },
]
RECEIVED = [
    {
        "labels": {"alertname": "KafkaNodeDown", "severity": "critical"},
        "annotations": {"summary": "node d3"},
        "startsAt": "t1",
        "status": {"state": "active"},
        "receivers": [{"name": "webhook"}, {"name": "email"}],
    },
    {"labels": {"alertname": "Old"}, "annotations": {}, "status": {"state": "suppressed"}, "receivers": []},
]
COUNTERS = """# HELP alertmanager_notifications_total The total number of attempted notifications.
alertmanager_notifications_total{integration="email"} 3
alertmanager_notifications_total{integration="webhook"} 2
alertmanager_notifications_total{integration="slack"} 0
alertmanager_notifications_failed_total{integration="email",reason="other"} 3
"""


def test_metrics_status_joins_what_prometheus_holds_with_where_alertmanager_sent_it() -> None:
    alerts = metrics_status.merged(metrics_status.prometheus_alerts(HELD), metrics_status.manager_alerts(RECEIVED))
    assert [(a.name, a.state, a.receivers) for a in alerts] == [
        ("KafkaNodeDown", "firing", ("webhook", "email")),
        ("KafkaUnderReplicatedPartitions", "pending", ()),
    ]
    assert metrics_status.targets(UP) == {"kafka-broker": (1, 2), "node": (1, 1)}
    assert metrics_status.deliveries(COUNTERS) == (
        metrics_status.Deliveries("email", 3, 3),
        metrics_status.Deliveries("webhook", 2, 0),
    )


def test_lag_is_the_committed_offset_against_the_log_end_never_negative() -> None:
    committed = {"billing": {("orders", 0): 10, ("orders", 1): -1001, ("orders", 2): 50}, "audit": {("logs", 0): 7}}
    ends = {("orders", 0): 25, ("orders", 2): 40, ("logs", 0): 7}
    found = lags(committed, ends)
    assert [(p.group, p.topic, p.partition, p.lag) for p in found] == [
        ("audit", "logs", 0, 0),
        ("billing", "orders", 0, 15),
        ("billing", "orders", 2, 0),  # a commit read after an older log end
    ]
    assert [(g.group, g.topic, g.lag, g.partitions) for g in by_topic(found)] == [
        ("audit", "logs", 0, 1),
        ("billing", "orders", 15, 2),
    ]
    assert PartitionLag("g", "t", 0, 5, 9).lag == 4


def test_a_brokers_disk_is_read_from_df_and_du() -> None:
    output = "Filesystem 1024-blocks Used Available Capacity Mounted on\n/dev/loop0 243823 40000 203823 17% /var/lib/kafka/data\n4312\t/var/lib/kafka/data\n"
    disk = parse_usage("d21", output)
    assert (disk.size_bytes, disk.free_bytes, disk.log_dir_bytes) == (243823 * 1024, 203823 * 1024, 4312 * 1024)
    assert round(disk.used_fraction, 3) == 0.164
    assert parse_usage("d22", "sh: df: not found").error.startswith("unexpected df/du output")
