"""The Prometheus server's stack (pure): ``<kafka stack>-metrics``, one Prometheus on a manager.

It joins the Kafka stack's overlay network (attachable, external to this stack) and finds its targets
by DNS there: Docker's DNS answers ``tasks.<service>`` with the address of every running task of a
service, so a broker on a node that joins is scraped at the next refresh and one on a node that is
removed drops out, without restarting Prometheus and without mounting the Docker socket
(``dockerswarm_sd_configs`` would need it).  The metrics port is reached on the overlay only.
The UI and API are published in host mode on the manager it runs on (the sandbox kernel has no IPVS
for the routing mesh); its data lives on a named volume there.  The alert rules are a file,
``stacks/prometheus/alerts.yml``; both it and the rendered ``prometheus.yml`` are swarm configs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from swarmkit.stack import alertmanager
from swarmkit.stack.alertmanager import AlertSpec
from swarmkit.stack.compose import COMPOSE_VERSION, ConfigFile, stack_script, volume
from swarmkit.stack.metrics import AGENT_PORT, NODE_PORT, NODE_SERVICE

SERVER_PORT = 9090  # inside the container; the published port is the user's
DEFAULT_IMAGE = "swarmkit/prometheus:2.42.0"  # built from Debian's prometheus package (swarmkit.images.image)
SERVICE = "prometheus"
DATA_VOLUME = "data"
DATA_DIR = "/prometheus"
NETWORK = "kafka"  # the Kafka stack's overlay, as this stack calls it
RULES = "prometheus/alerts.yml"
# Each scrape reads every matched MBean of every JVM: not more often by default.  The same interval paces
# the rule evaluation and the DNS lookups that find tasks, so an alert or a new broker waits one interval.
SCRAPE_INTERVAL_S = 15
RETENTION = "15d"
BROKER_JOB = "kafka-broker"
CONTROLLER_JOB = "kafka-controller"
VERIFY_JOB = "swarmkit-verify"  # `swarmkit verify --every S --metrics-port P`, outside the swarm
NODE_JOB = "node"  # the Kafka stack's node exporters (swarmkit.stack.metrics)
ALERT_PORT = 9093
PORT_LABEL = "swarmkit.published-port"


@dataclass(frozen=True)
class MetricsSpec:
    """What the metrics stack says: the Kafka services to scrape, where Prometheus runs and on which port."""

    kafka_stack: str
    network: str  # the Kafka stack's overlay network (e.g. kafka_internal)
    brokers: str  # the broker service (kafka_broker)
    controllers: tuple[str, ...]  # the controller services (kafka_controller-1, ...)
    node_id: str  # the manager's swarm node id
    port: int  # published on that manager
    image: str = DEFAULT_IMAGE
    verify_targets: tuple[str, ...] = ()  # HOST:PORT of verify loops serving their verdicts
    interval_s: int = SCRAPE_INTERVAL_S  # scrapes, rule evaluations and DNS refreshes
    alertmanager_image: str = ""  # "" = no Alertmanager
    alert_port: int = ALERT_PORT  # Alertmanager's API, published on the manager
    alerts: AlertSpec = AlertSpec()
    lag_minutes: int = 10
    disk_full: float = 0.8

    @property
    def interval(self) -> str:
        return f"{self.interval_s}s"


def stack_name(kafka_stack: str) -> str:
    return f"{kafka_stack}-metrics"


def data_volume(kafka_stack: str) -> str:
    return f"{stack_name(kafka_stack)}_{DATA_VOLUME}"


def _job(name: str, services: tuple[str, ...], refresh: str, port: int = AGENT_PORT) -> dict[str, Any]:
    """A scrape job over every task of ``services``, each target labelled with its service."""
    return {
        "job_name": name,
        "dns_sd_configs": [
            {
                "names": [f"tasks.{service}" for service in services],
                "type": "A",
                "port": port,
                "refresh_interval": refresh,
            }
        ],
        "relabel_configs": [{"source_labels": ["__meta_dns_name"], "regex": r"tasks\.(.+)", "target_label": "service"}],
    }


def server_config(spec: MetricsSpec) -> dict[str, Any]:
    """prometheus.yml as data: the rules file and one job for the brokers, one for the controllers."""
    jobs = [_job(BROKER_JOB, (spec.brokers,), spec.interval)]
    if spec.controllers:
        jobs.append(_job(CONTROLLER_JOB, spec.controllers, spec.interval))
    if spec.verify_targets:
        jobs.append({"job_name": VERIFY_JOB, "static_configs": [{"targets": list(spec.verify_targets)}]})
    jobs.append(_job(NODE_JOB, (f"{spec.kafka_stack}_{NODE_SERVICE}",), spec.interval, NODE_PORT))
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": spec.interval,
            "evaluation_interval": spec.interval,
            "external_labels": {"kafka_stack": spec.kafka_stack},
        },
        "rule_files": [stack_script(RULES).target],
        "scrape_configs": [*jobs, {"job_name": "prometheus", "static_configs": [{"targets": [f"localhost:{SERVER_PORT}"]}]}],
    }
    if spec.alertmanager_image:
        target = f"{service_name(spec, alertmanager.SERVICE)}:{alertmanager.PORT}"
        config["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [target]}]}]}
    return config


def service_name(spec: MetricsSpec, service: str) -> str:
    """A service's full name, which Docker's DNS answers on every network the service is on."""
    return f"{stack_name(spec.kafka_stack)}_{service}"


def alert_rules(spec: MetricsSpec) -> ConfigFile:
    """stacks/prometheus/alerts.yml with the inventory's thresholds in place of RULE_SETTINGS."""
    rules = stack_script(RULES)
    content = rules.content.replace("@lag_minutes@", str(spec.lag_minutes)).replace("@disk_full@", f"{spec.disk_full:g}")
    return ConfigFile(rules.filename, content)


def config_files(spec: MetricsSpec) -> tuple[ConfigFile, ...]:
    """prometheus.yml, the alert rules, and (with Alertmanager) alertmanager.yml."""
    header = f"# Prometheus for Kafka stack '{spec.kafka_stack}', written by `swarmkit metrics up`.\n"
    rendered = ConfigFile("prometheus.yml", header + yaml.safe_dump(server_config(spec), sort_keys=False))
    if not spec.alertmanager_image:
        return (rendered, alert_rules(spec))
    routes = yaml.safe_dump(alertmanager.server_config(spec.alerts), sort_keys=False)
    header = f"# Alertmanager for Kafka stack '{spec.kafka_stack}', written by `swarmkit metrics up`.\n"
    return (rendered, alert_rules(spec), ConfigFile("alertmanager.yml", header + routes))


def _placed(spec: MetricsSpec, published: int, target: int) -> dict[str, Any]:
    """On the manager, on the Kafka overlay, its port published there in host mode (and named in a label, for
    `metrics status` to find)."""
    return {
        "networks": [NETWORK],
        "ports": [{"target": target, "published": published, "protocol": "tcp", "mode": "host"}],
        "deploy": {
            "labels": {PORT_LABEL: str(published)},
            "replicas": 1,
            "endpoint_mode": "dnsrr",
            "placement": {"constraints": [f"node.id == {spec.node_id}"]},
            "restart_policy": {"condition": "any", "delay": "5s"},
        },
    }


def _services(spec: MetricsSpec, configs: tuple[ConfigFile, ...]) -> dict[str, Any]:
    services = {SERVICE: _service(spec, configs[:2])}
    if spec.alertmanager_image:
        settings = alertmanager.service(spec.alerts, spec.alertmanager_image, configs[2].target)
        config = [{"source": configs[2].name, "target": configs[2].target}]
        services[alertmanager.SERVICE] = settings | {"configs": config} | _placed(spec, spec.alert_port, alertmanager.PORT)
    return services


def _service(spec: MetricsSpec, configs: tuple[ConfigFile, ...]) -> dict[str, Any]:
    return {
        "image": spec.image,
        "command": [
            f"--config.file={configs[0].target}",
            f"--storage.tsdb.path={DATA_DIR}",
            f"--storage.tsdb.retention.time={RETENTION}",
            f"--web.listen-address=:{SERVER_PORT}",
        ],
        "configs": [{"source": config.name, "target": config.target} for config in configs],
        "volumes": [volume(DATA_VOLUME, DATA_DIR)],
    } | _placed(spec, spec.port, SERVER_PORT)


def render_stack(spec: MetricsSpec) -> str:
    """The stack file: the same spec gives the same bytes (a redeploy of it restarts nothing)."""
    configs = config_files(spec)
    volumes: dict[str, Any] = {DATA_VOLUME: {"driver": "local"}}
    if spec.alertmanager_image:
        volumes[alertmanager.DATA_VOLUME] = {"driver": "local"}
    document: dict[str, Any] = {
        "version": COMPOSE_VERSION,
        "services": _services(spec, configs),
        "networks": {NETWORK: {"external": True, "name": spec.network}},
        "volumes": volumes,
        "configs": {config.name: {"file": f"./{config.filename}"} for config in configs},
    }
    if spec.alerts.secrets:
        document["secrets"] = {secret.name: {"file": f"./{secret.filename}"} for secret in spec.alerts.secrets}
    header = f"# Prometheus for Kafka stack '{spec.kafka_stack}', written by `swarmkit metrics up`; deploy beside stack.yml\n"
    return header + yaml.safe_dump(document, sort_keys=False)
