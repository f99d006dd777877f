"""A Spark standalone cluster on the swarm (`swarmkit spark up|down`): a master on a manager, a worker per node.

Both run on the host network of their node, not on an overlay.  Spark's RPC advertises one
address per daemon and binds it too, and that address must be reachable from the driver, which
runs on this machine outside the swarm: an overlay address is not, and a host-mode published port
cannot be bound inside the container.  On the host network each daemon binds and advertises its
node's hostname, executors (started by the worker, in its container) use the node's own ports, and
they reach the driver and the brokers' external listeners (``nodeN:9094``) as any program on that
server would.  Every container gets the swarm's hostnames and the inventory's names as
``extra_hosts``, so nodes need no DNS for each other.  The stack is ``<kafka stack>-spark``, apart
from the Kafka stack, so that deploying one never touches the other.
"""

from __future__ import annotations

import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from swarmkit import waits
from swarmkit.defaults import SPARK_UP_TIMEOUT
from swarmkit.errors import EngineError, SwarmkitError
from swarmkit.fanout import fan_out, fan_out_settled
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import Availability, DockerHosts, Engine, NodeState, SwarmNode, SwarmState
from swarmkit.hosts.inventory import Host, Inventory
from swarmkit.hosts.session import Session
from swarmkit.images import image as images
from swarmkit.traffic import spark as sparkjob

MASTER_PORT = 7077
MASTER_UI_PORT = sparkjob.MASTER_UI_PORT
WORKER_PORT = 7078
WORKER_UI_PORT = 8081
MASTER_MEMORY = "256m"  # the master's heap
WORKER_DAEMON_MEMORY = "256m"  # the worker daemon's own heap
WORKER_MEMORY = sparkjob.EXECUTOR_MEMORY  # what a worker offers: one verify executor per node
DOWN_TIMEOUT = 60.0
CONNECT_TIMEOUT = 1.0
Progress = Callable[[str], None]


class SparkClusterError(SwarmkitError):
    """The Spark cluster cannot be deployed or removed; raised before anything changes when the input is wrong."""


@dataclass(frozen=True)
class SparkStackSpec:
    """Everything the Spark stack file says: which image, where the master runs, the names every container resolves."""

    image: str
    master_node_id: str
    master_hostname: str
    hosts: tuple[tuple[str, str], ...]  # (name, address) for every container's /etc/hosts

    @property
    def master_url(self) -> str:
        return f"spark://{self.master_hostname}:{MASTER_PORT}"


def stack_name(kafka_stack: str) -> str:
    return f"{kafka_stack}-spark"


def _service(spec: SparkStackSpec, command: list[str], environment: dict[str, str], deploy: dict[str, Any]) -> dict:
    return {
        "image": spec.image,
        "command": command,
        "environment": {"SPARK_LOCAL_HOSTNAME": "{{.Node.Hostname}}", **environment},
        "extra_hosts": [f"{name}:{address}" for name, address in spec.hosts],
        "networks": ["hostnet"],
        "deploy": {**deploy, "restart_policy": {"condition": "any", "delay": "5s"}},
    }


def render_stack(spec: SparkStackSpec) -> str:
    """The Spark stack's YAML: stable for the same spec (a redeploy of it restarts nothing)."""
    master = _service(
        spec,
        ["master"],
        {
            "SPARK_DAEMON_MEMORY": MASTER_MEMORY,
            "SPARK_MASTER_PORT": str(MASTER_PORT),
            "SPARK_MASTER_WEBUI_PORT": str(MASTER_UI_PORT),
        },
        {"replicas": 1, "placement": {"constraints": [f"node.id == {spec.master_node_id}"]}},
    )
    worker = _service(
        spec,
        ["worker", spec.master_url],
        {
            "SPARK_DAEMON_MEMORY": WORKER_DAEMON_MEMORY,
            "SPARK_WORKER_MEMORY": WORKER_MEMORY,
            "SPARK_WORKER_PORT": str(WORKER_PORT),
            "SPARK_WORKER_WEBUI_PORT": str(WORKER_UI_PORT),
        },
        {"mode": "global"},
    )
    document = {
        "version": "3.8",
        "services": {"master": master, "worker": worker},
        "networks": {"hostnet": {"external": True, "name": "host"}},
    }
    header = f"# Spark standalone on the swarm, written by `swarmkit spark up`; master {spec.master_url}\n"
    return header + yaml.safe_dump(document, sort_keys=False)


@dataclass(frozen=True)
class SparkCluster:
    """What `spark up` deployed and found running."""

    stack: str
    image: str
    master_url: str
    ui_url: str
    workers: tuple[str, ...]
    image_s: float
    deploy_s: float
    total_s: float

    def to_dict(self) -> dict[str, Any]:
        return {"ok": True, **asdict(self)}


def _master_host(inventory: Inventory, name: str | None) -> Host:
    if name is None:
        return inventory.first_manager
    host = next((h for h in inventory.hosts if h.name == name), None)
    if host is None or not host.is_manager:
        managers = ", ".join(h.name for h in inventory.managers)
        raise SparkClusterError(
            f"--master-host {name} is not a manager in the inventory", hint=f"the master runs on a manager: {managers}"
        )
    return host


def _swarm_nodes(engine: Engine, host: Host) -> tuple[str, list[SwarmNode]]:
    """The master host's swarm node id and the swarm's ready, active nodes; an error when it is in no swarm."""
    info = dockerapi.engine_info(engine)
    if info.swarm_state != SwarmState.ACTIVE:
        raise SparkClusterError(
            f"{host.name} is not in a swarm (state: {info.swarm_state or 'inactive'})",
            hint="run `swarmkit up -i INV` (or `swarmkit swarm up`) first",
        )
    nodes = [n for n in dockerapi.swarm_nodes(engine) if n.state == NodeState.READY and n.availability == Availability.ACTIVE]
    return info.swarm_node_id, nodes


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=CONNECT_TIMEOUT):
            return True
    except OSError:
        return False


def check_ports_free(docker: DockerHosts, master: Host, hosts: Sequence[Host]) -> None:
    """The master's ports on its host and the worker's on every host must be free: the daemons bind them on the host network."""
    wanted = [(master, MASTER_PORT), (master, MASTER_UI_PORT)]
    wanted += [(host, port) for host in hosts for port in (WORKER_PORT, WORKER_UI_PORT)]
    taken = [
        (host, port) for (host, port), busy in zip(wanted, fan_out(lambda hp: _answers(hp[0].address, hp[1]), wanted)) if busy
    ]
    if taken:
        host, port = taken[0]
        holders = [name for name, _ in dockerapi.port_publishers(docker[host], port, "tcp")]
        holder = f"container {holders[0]}" if holders else "another process"
        raise SparkClusterError(
            f"port {port}/tcp on {host.name} ({host.address}) is already in use by {holder}: nothing was deployed",
            hint=f"free it (Spark's master needs {MASTER_PORT} and {MASTER_UI_PORT}, each worker {WORKER_PORT} and {WORKER_UI_PORT})",
        )


def default_registry(inventory: Inventory) -> str:
    """The registry the inventory's broker image comes from (``HOST:PORT/...``), if it names one."""
    first = inventory.stack.image.split("/")[0] if "/" in inventory.stack.image else ""
    return first if ("." in first or ":" in first) else ""


def publish_image(engine: Engine, registry: str) -> str:
    """Build the Spark image offline on one engine and push it to the registry every node pulls from."""
    version = sparkjob.pyspark_version()
    spark_jars = sparkjob.spark_submit().parent.parent / "jars"
    connector = sparkjob.connector_jars(version)[0].parent
    return images.publish(engine, images.spark_recipe(version, spark_jars, connector), registry)


def pull_everywhere(docker: DockerHosts, hosts: Sequence[Host], reference: str) -> None:
    """Every node must have the image before the stack is deployed: a missing one is an error, not a task that never starts."""
    results = fan_out_settled(lambda host: dockerapi.ensure_image(docker[host], reference), hosts, EngineError)
    failed = [(host, result) for host, result in zip(hosts, results) if isinstance(result, EngineError)]
    if failed:
        names = ", ".join(host.name for host, _ in failed)
        raise SparkClusterError(
            f"the Spark image {reference} is missing on {names}: {failed[0][1].message}",
            hint="build and push it with `swarmkit spark up --registry HOST:PORT`, or pass --image REF every node can pull",
        )


def _wait_for_workers(master: Host, expected: set[str], timeout: float, progress: Progress) -> tuple[str, ...]:
    """Poll the master until a worker on every expected node has registered and is alive."""
    pause = waits.Deadline(timeout, first=1.0)
    alive: set[str] = set()
    while True:
        status = sparkjob.master_status(master.address)
        alive = {w["host"] for w in (status or {}).get("workers", []) if w.get("state") == "ALIVE"}
        if status is not None and expected <= alive:
            return tuple(sorted(alive))
        if pause.passed():
            missing = ", ".join(sorted(expected - alive))
            where = "the master does not answer" if status is None else f"no worker registered from {missing}"
            raise SparkClusterError(
                f"the Spark cluster did not come up within {timeout:g}s: {where}",
                hint="see `docker service ps --no-trunc SERVICE` on a manager for the master and worker services",
            )
        progress(f"waiting for workers: {len(alive & expected)}/{len(expected)} registered")
        pause.sleep()


def _names(inventory: Inventory, nodes: Sequence[SwarmNode]) -> tuple[tuple[str, str], ...]:
    """Every swarm hostname and inventory name with its address: what executors resolve brokers and each other by."""
    names = {node.hostname: node.address for node in nodes if node.address}
    names.update({host.name: host.address for host in inventory.hosts})
    return tuple(sorted(names.items()))


def spark_up(
    session: Session,
    *,
    image: str | None = None,
    registry: str | None = None,
    master_host: str | None = None,
    kafka_stack: str = "kafka",
    timeout: float = SPARK_UP_TIMEOUT,
    progress: Progress | None = None,
) -> SparkCluster:
    """Deploy (or redeploy) the Spark stack and wait until a worker on every node has registered."""
    started = time.monotonic()
    say = progress or (lambda _: None)
    inventory, docker = session.inventory, session.docker
    master = _master_host(inventory, master_host)
    manager = docker[master]
    node_id, nodes = _swarm_nodes(manager, master)
    name = stack_name(kafka_stack)
    if not dockerapi.stack_services(manager, name):
        check_ports_free(docker, master, inventory.hosts)
    reference = image or ""
    if not reference:
        registry = registry or default_registry(inventory)
        if not registry:
            raise SparkClusterError(
                "no Spark image: the inventory names no registry to push one to",
                hint="pass --registry HOST:PORT (swarmkit builds the image and pushes it there) or --image REF",
            )
        say(f"building the Spark image on {master.name} and pushing it to {registry}")
        reference = publish_image(manager, registry)
    say(f"making sure every node has {reference}")
    pull_everywhere(docker, inventory.hosts, reference)
    imaged = time.monotonic()
    hostname = next(n.hostname for n in nodes if n.id == node_id)
    spec = SparkStackSpec(reference, node_id, hostname, _names(inventory, nodes))
    say(f"deploying stack {name}")
    with tempfile.TemporaryDirectory(prefix="swarmkit-spark-") as directory:
        compose = Path(directory) / "stack.yml"
        compose.write_text(render_stack(spec))
        dockerapi.deploy_stack(manager, name, compose)
    deployed = time.monotonic()
    workers = _wait_for_workers(master, {n.hostname for n in nodes}, timeout, say)
    return SparkCluster(
        stack=name,
        image=reference,
        master_url=spec.master_url,
        ui_url=f"http://{hostname}:{MASTER_UI_PORT}/",
        workers=workers,
        image_s=round(imaged - started, 3),
        deploy_s=round(deployed - imaged, 3),
        total_s=round(time.monotonic() - started, 3),
    )


def spark_down(
    session: Session, *, master_host: str | None = None, kafka_stack: str = "kafka", timeout: float = DOWN_TIMEOUT
) -> list[str]:
    """Remove the Spark stack; returns the services removed (none when it was not deployed).  Waits until the
    master's ports are closed, so a `spark up` right after finds them free."""
    inventory, docker = session.inventory, session.docker
    master = _master_host(inventory, master_host)
    manager = docker[master]
    _swarm_nodes(manager, master)
    name = stack_name(kafka_stack)
    services = dockerapi.stack_services(manager, name)
    if not services:
        return []
    dockerapi.remove_stack(manager, name)
    deadline = waits.Deadline(timeout)
    while dockerapi.stack_services(manager, name) or _answers(master.address, MASTER_PORT):
        if deadline.passed():
            raise SparkClusterError(
                f"stack {name} was removed but its master still answers on {master.address}:{MASTER_PORT} after {timeout:g}s",
                hint=f"check the containers left on {master.name} (`docker ps`)",
            )
        deadline.sleep()
    return services
