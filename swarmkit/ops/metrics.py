"""`swarmkit metrics up|down`: Prometheus and Alertmanager beside a Kafka stack, scraping every broker, controller
and node, sending alerts to the inventory's receivers.

The servers are their own stack, ``<kafka stack>-metrics`` (``swarmkit.stack.prometheus``), so that deploying or
removing it never touches Kafka.  Prometheus and Alertmanager run on the inventory's first manager, whose engine
builds their images (``swarmkit/prometheus`` and ``swarmkit/alertmanager``, from Debian's packages) when they are
not there (or ``--image`` names another Prometheus).  Prometheus scrapes the Kafka stack's own per-node
agents: the JMX exporter in every JVM and the node exporter beside every broker (``swarmkit.stack.metrics``).
Their data stays on the volumes ``<kafka stack>-metrics_data`` and ``_alerts`` unless ``down --purge`` removes
them.  `metrics status` reads what they hold: ``swarmkit.ops.metrics_status``.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from swarmkit.errors import OperationError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.hosts.dockerapi.stacks import STACK_LABEL
from swarmkit.hosts.inventory import Host
from swarmkit.hosts.metrics_settings import MetricsSettings
from swarmkit.hosts.session import Session
from swarmkit.images import image as images
from swarmkit.security.settings import write_private
from swarmkit.stack import alertmanager, prometheus
from swarmkit.stack.alertmanager import AlertSpec
from swarmkit.stack.deployed import DeployedStack, controller_services, overlay_network
from swarmkit.stack.engines import ENGINES
from swarmkit.waits import Pause, answers_ok

READY_TIMEOUT = 180.0  # the image's first pull or build is before this; the server starts in seconds
GONE_TIMEOUT = 60.0


@dataclass(frozen=True)
class MetricsServer:
    """What `metrics up` deployed: where its UI and API answer."""

    stack: str
    url: str
    image: str
    host: str
    brokers: str
    controllers: tuple[str, ...]
    total_s: float
    verify_targets: tuple[str, ...] = ()
    interval_s: int = prometheus.SCRAPE_INTERVAL_S
    alerts_url: str = ""
    receivers: tuple[str, ...] = ()  # where alerts are sent: "webhook URL", "email ADDRESS"

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


def _url(host: Host, port: int) -> str:
    return f"http://{host.address}:{port}/"


def _ready(url: str) -> bool:
    return answers_ok(f"{url}-/ready", timeout=2.0)


def _own_image(manager: Engine, tag: str, recipe: Callable[[], images.ImageRecipe], say: Any) -> str:
    """One of swarmkit's images on the manager, built there from Debian's package if missing."""
    if not dockerapi.has_image(manager, tag):
        say(f"building {tag} from Debian's package")
        images.build(manager, recipe(), tag)
    return tag


def _provide_image(manager: Engine, image: str | None, say: Any) -> str:
    """The image on the manager: the one named (pulled if missing) or swarmkit's own (built there if missing)."""
    if image:
        dockerapi.ensure_image(manager, image)
        return image
    return _own_image(manager, images.PROMETHEUS_TAG, images.prometheus_recipe, say)


def _alert_spec(settings: MetricsSettings) -> AlertSpec:
    """The receivers and the secrets read from the files the inventory names (one final newline dropped)."""
    return AlertSpec(settings.alerts, alertmanager.secret_files(settings.alerts, _read_secret))


def _read_secret(path: str) -> str:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise OperationError(f"cannot read {path}: {error.strerror}", hint="the inventory's metrics: block names it") from None
    return text[:-1] if text.endswith("\n") else text


def receivers_of(settings: MetricsSettings) -> tuple[str, ...]:
    alerts = settings.alerts
    found = [f"webhook {alerts.webhook.url}"] if alerts.webhook else []
    return (*found, f"email {alerts.email.to}") if alerts.email else tuple(found)


def _spec(manager: Engine, kafka_stack: str, port: int, image: str) -> prometheus.MetricsSpec:
    """What the Kafka stack says: its network, broker and controller services, and the manager's node id."""
    deployed = DeployedStack.require(manager, kafka_stack)
    engine = ENGINES.get(deployed.engine)
    if engine is None or not engine.JMX_METRICS:
        raise OperationError(
            f"stack '{kafka_stack}' runs the {deployed.engine} engine, which exports no JMX metrics",
            hint="metrics come from the apache engine's brokers and controllers (swarmkit up --engine apache)",
        )
    controllers = controller_services(kafka_stack, dockerapi.stack_services(manager, kafka_stack))
    node_id = dockerapi.engine_info(manager).swarm_node_id
    return prometheus.MetricsSpec(
        kafka_stack, overlay_network(kafka_stack), deployed.broker_service, controllers, node_id, port, image
    )


def _wait_ready(url: str, timeout: float, say: Any, what: str = prometheus.SERVICE) -> None:
    deadline, pause = time.monotonic() + timeout, Pause()
    while not _ready(url):
        if time.monotonic() > deadline:
            raise OperationError(
                f"{what} does not answer at {url} after {timeout:g} s",
                hint=f"see its task: docker service ps --no-trunc STACK-metrics_{what} on a manager",
            )
        say(f"waiting for {what} at {url}")
        pause.sleep()


@dataclass(frozen=True)
class MetricsOptions:
    """What `metrics up` is told besides the inventory."""

    kafka_stack: str = "kafka"
    port: int = 9090
    alert_port: int = prometheus.ALERT_PORT
    image: str | None = None
    timeout: float = READY_TIMEOUT
    verify_targets: tuple[str, ...] = ()
    interval_s: int = prometheus.SCRAPE_INTERVAL_S


def _full_spec(session: Session, options: MetricsOptions, say: Any) -> prometheus.MetricsSpec:
    """The stack's spec with both images in place on the manager and the receivers' secrets read; nothing is
    built before the inventory's secret files and the ports are checked."""
    manager = session.docker[session.inventory.first_manager]
    spec = _spec(manager, options.kafka_stack, options.port, options.image or images.PROMETHEUS_TAG)
    settings = session.inventory.metrics
    alerts = _alert_spec(settings)  # a secret file that cannot be read stops here, before anything is built
    _refuse_taken_ports(session, options)
    return replace(
        spec,
        image=_provide_image(manager, options.image, say),
        verify_targets=options.verify_targets,
        interval_s=options.interval_s,
        alertmanager_image=_own_image(manager, images.ALERTMANAGER_TAG, images.alertmanager_recipe, say),
        alert_port=options.alert_port,
        alerts=alerts,
        lag_minutes=settings.lag_minutes,
        disk_full=settings.disk_full,
    )


def _refuse_taken_ports(session: Session, options: MetricsOptions) -> None:
    host = session.inventory.first_manager
    deployed = dockerapi.stack_services(session.docker[host], prometheus.stack_name(options.kafka_stack))
    for port in (options.port, options.alert_port):
        if not deployed and _port_taken(host, port):
            raise OperationError(
                f"port {port}/tcp on {host.name} ({host.address}) is already in use: nothing was deployed",
                hint="choose another with --port or --alert-port",
            )


def metrics_up(session: Session, options: MetricsOptions = MetricsOptions()) -> MetricsServer:
    """Deploy (or redeploy) the metrics stack and wait until Prometheus and Alertmanager answer; an unchanged spec
    restarts nothing.  ``options.verify_targets``: HOST:PORT of `swarmkit verify --every` loops to scrape as well
    (reached from the manager); ``options.interval_s``: seconds between scrapes, rule evaluations and DNS refreshes."""
    started = time.monotonic()
    host = session.inventory.first_manager

    def say(message: str) -> None:
        session.progress(0, 1, message)

    spec = _full_spec(session, options, say)
    name = prometheus.stack_name(options.kafka_stack)
    say(f"deploying stack {name} on {host.name}")
    with tempfile.TemporaryDirectory(prefix="swarmkit-metrics-") as directory:
        for config in prometheus.config_files(spec):
            (Path(directory) / config.filename).write_text(config.content)
        (Path(directory) / "secrets").mkdir()
        for secret in spec.alerts.secrets:
            write_private(Path(directory) / secret.filename, secret.content)
        compose = Path(directory) / "stack.yml"
        compose.write_text(prometheus.render_stack(spec))
        dockerapi.deploy_stack(session.docker[host], name, compose)
    url, alerts_url = _url(host, options.port), _url(host, options.alert_port)
    _wait_ready(url, options.timeout, say)
    _wait_ready(alerts_url, options.timeout, say, alertmanager.SERVICE)
    return MetricsServer(
        name,
        url,
        spec.image,
        host.name,
        spec.brokers,
        spec.controllers,
        round(time.monotonic() - started, 3),
        options.verify_targets,
        options.interval_s,
        alerts_url,
        receivers_of(session.inventory.metrics),
    )


def _port_taken(host: Host, port: int) -> bool:
    try:
        with socket.create_connection((host.address, port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class MetricsDown:
    stack: str
    removed: tuple[str, ...]
    volumes: tuple[str, ...]  # removed with purge

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


def metrics_down(session: Session, *, kafka_stack: str = "kafka", purge: bool = False) -> MetricsDown:
    """Remove the metrics stack and wait until its containers are gone; with ``purge`` its data volumes too."""
    host = session.inventory.first_manager
    manager = session.docker[host]
    name = prometheus.stack_name(kafka_stack)
    removed = dockerapi.stack_services(manager, name)
    if removed or dockerapi.stack_leftovers(manager, name):
        dockerapi.remove_stack(manager, name)
    label = f"{STACK_LABEL}={name}"
    deadline, pause = time.monotonic() + GONE_TIMEOUT, Pause()
    while dockerapi.labelled_containers(manager, label) or dockerapi.stack_leftovers(manager, name):
        if time.monotonic() > deadline:
            raise OperationError(
                f"stack {name} was removed but its container or network is still on {host.name} after {GONE_TIMEOUT:g} s",
                hint=f"check `docker ps -a` and `docker network ls` on {host.name}, then run `metrics down` again",
            )
        pause.sleep()
    volumes = tuple(dockerapi.remove_labelled_volumes(manager, label)) if purge else ()
    return MetricsDown(name, tuple(removed), volumes)
