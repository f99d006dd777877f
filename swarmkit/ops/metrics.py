"""`swarmkit metrics up|down`: a Prometheus server beside a Kafka stack, scraping every broker and controller.

The server is its own stack, ``<kafka stack>-metrics`` (``swarmkit.stack.prometheus``), so that deploying or
removing it never touches Kafka.  It runs on the inventory's first manager, whose engine builds its image
(``swarmkit/prometheus``, from Debian's package) when neither it nor ``--image`` is there; its data stays
on the volume ``<kafka stack>-metrics_data`` unless ``down --purge`` removes it.
"""

from __future__ import annotations

import socket
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from swarmkit.errors import OperationError
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Engine
from swarmkit.hosts.dockerapi.stacks import STACK_LABEL
from swarmkit.hosts.inventory import Host
from swarmkit.hosts.session import Session
from swarmkit.images import image as images
from swarmkit.stack import prometheus
from swarmkit.stack.deployed import DeployedStack, controller_services, overlay_network
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

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


def _url(host: Host, port: int) -> str:
    return f"http://{host.address}:{port}/"


def _ready(url: str) -> bool:
    return answers_ok(f"{url}-/ready", timeout=2.0)


def _provide_image(manager: Engine, image: str | None, say: Any) -> str:
    """The image on the manager: the one named (pulled if missing) or swarmkit's own (built there if missing)."""
    if image:
        dockerapi.ensure_image(manager, image)
        return image
    if not dockerapi.has_image(manager, images.PROMETHEUS_TAG):
        say(f"building {images.PROMETHEUS_TAG} from Debian's prometheus package")
        images.build(manager, images.prometheus_recipe(), images.PROMETHEUS_TAG)
    return images.PROMETHEUS_TAG


def _spec(manager: Engine, kafka_stack: str, port: int, image: str) -> prometheus.MetricsSpec:
    deployed = DeployedStack.require(manager, kafka_stack)
    if deployed.engine != "apache":
        raise OperationError(
            f"stack '{kafka_stack}' runs the {deployed.engine} engine, which exports no JMX metrics",
            hint="metrics come from the apache engine's brokers and controllers (swarmkit up --engine apache)",
        )
    controllers = controller_services(kafka_stack, dockerapi.stack_services(manager, kafka_stack))
    node_id = dockerapi.engine_info(manager).swarm_node_id
    return prometheus.MetricsSpec(
        kafka_stack, overlay_network(kafka_stack), deployed.broker_service, controllers, node_id, port, image
    )


def _wait_ready(url: str, timeout: float, say: Any) -> None:
    deadline, pause = time.monotonic() + timeout, Pause()
    while not _ready(url):
        if time.monotonic() > deadline:
            raise OperationError(
                f"Prometheus does not answer at {url} after {timeout:g} s",
                hint=f"see its task: docker service ps --no-trunc STACK-metrics_{prometheus.SERVICE} on a manager",
            )
        say(f"waiting for Prometheus at {url}")
        pause.sleep()


def metrics_up(
    session: Session,
    *,
    kafka_stack: str = "kafka",
    port: int = 9090,
    image: str | None = None,
    timeout: float = READY_TIMEOUT,
    verify_targets: tuple[str, ...] = (),
    interval_s: int = prometheus.SCRAPE_INTERVAL_S,
) -> MetricsServer:
    """Deploy (or redeploy) the Prometheus stack and wait until it answers; an unchanged spec restarts nothing.
    ``verify_targets``: HOST:PORT of `swarmkit verify --every` loops to scrape as well (reached from the manager);
    ``interval_s``: seconds between scrapes, rule evaluations and DNS refreshes."""
    started = time.monotonic()
    host = session.inventory.first_manager
    manager = session.docker[host]

    def say(message: str) -> None:
        session.progress(0, 1, message)

    name = prometheus.stack_name(kafka_stack)
    spec = _spec(manager, kafka_stack, port, image or images.PROMETHEUS_TAG)
    url = _url(host, port)
    if not dockerapi.stack_services(manager, name) and _port_taken(host, port):
        raise OperationError(
            f"port {port}/tcp on {host.name} ({host.address}) is already in use: nothing was deployed",
            hint="choose another with --port",
        )
    spec = replace(spec, image=_provide_image(manager, image, say), verify_targets=verify_targets, interval_s=interval_s)
    say(f"deploying stack {name} on {host.name}")
    with tempfile.TemporaryDirectory(prefix="swarmkit-metrics-") as directory:
        for config in prometheus.config_files(spec):
            (Path(directory) / config.filename).write_text(config.content)
        compose = Path(directory) / "stack.yml"
        compose.write_text(prometheus.render_stack(spec))
        dockerapi.deploy_stack(manager, name, compose)
    _wait_ready(url, timeout, say)
    return MetricsServer(
        name,
        url,
        spec.image,
        host.name,
        spec.brokers,
        spec.controllers,
        round(time.monotonic() - started, 3),
        verify_targets,
        interval_s,
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
    """Remove the Prometheus stack and wait until its container is gone; with ``purge`` its data volume too."""
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
