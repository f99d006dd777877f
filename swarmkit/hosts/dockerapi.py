"""The one adapter over Docker: every engine call in swarmkit goes through python-on-whales here."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from swarmkit.lazy import lazy

if TYPE_CHECKING:
    import python_on_whales as whales
    from python_on_whales import exceptions as whales_errors
    from python_on_whales import utils as whales_utils
else:
    whales = lazy("python_on_whales")
    whales_errors = lazy("python_on_whales.exceptions")
    whales_utils = lazy("python_on_whales.utils")

from swarmkit.errors import EngineError
from swarmkit.hosts.inventory import Host, Inventory, TlsFiles
from swarmkit.hosts.ssh import SshMux, diagnose, is_ssh

JOB_TIMEOUT = 120.0  # a one-off job on a node: pulling the image included


@dataclass(frozen=True)
class Engine:
    """One Docker engine: its endpoint and the client that carries that endpoint's TLS settings."""

    endpoint: str
    client: whales.DockerClient = field(repr=False, compare=False)
    mux: SshMux | None = field(default=None, repr=False, compare=False)  # an ssh:// engine's shared connection

    @classmethod
    def connect(cls, endpoint: str, tls: TlsFiles | None = None, mux: SshMux | None = None) -> Engine:
        """A client for one endpoint (unix://, tcp://, ssh://); tcp:// with TLS verifies the engine; an
        ssh:// endpoint given ``mux`` is reached through that mux's one connection to its host."""
        if tls is None:
            if mux is not None and is_ssh(endpoint):
                return cls(endpoint, mux.client(endpoint), mux)
            return cls(endpoint, whales.DockerClient(host=endpoint))
        docker = whales.DockerClient(host=endpoint, tlsverify=True, tlscacert=tls.ca, tlscert=tls.cert, tlskey=tls.key)
        return cls(endpoint, docker)


@dataclass(frozen=True)
class DockerHosts:
    """The engines of one inventory, built once and passed to whatever talks to Docker.

    Each host's client holds its own endpoint and TLS files, so what a call uses never depends on
    what ran before.  ssh:// hosts share one SSH connection each (``mux``), made by the first call
    to that host and ended by ``close`` (or a ``with`` block, or when the DockerHosts is dropped)."""

    engines: Mapping[str, Engine]  # by inventory host name
    mux: SshMux | None = None

    @classmethod
    def from_inventory(cls, inventory: Inventory, share_ssh: bool = True) -> DockerHosts:
        """``share_ssh=False``: a new SSH connection for every call (only to measure what sharing saves)."""
        mux = SshMux(inventory.ssh_config, share_ssh) if any(is_ssh(h.endpoint) for h in inventory.hosts) else None
        return cls({host.name: Engine.connect(host.endpoint, host.tls, mux) for host in inventory.hosts}, mux)

    def __getitem__(self, host: Host) -> Engine:
        """The engine of an inventory host; one from another inventory is a clear error."""
        engine = self.engines.get(host.name)
        if engine is None or engine.endpoint != host.endpoint:
            raise EngineError(
                f"no Docker client for host {host.name} ({host.endpoint})",
                hint="build DockerHosts from the same inventory the command uses",
            )
        return engine

    def close(self) -> None:
        """End the shared SSH connections (nothing to do without ssh:// hosts)."""
        if self.mux is not None:
            self.mux.close()

    def __enter__(self) -> DockerHosts:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def hosts_of(inventory: Inventory, docker: DockerHosts | None) -> DockerHosts:
    """The caller's DockerHosts, else the inventory's own: a library caller gets each host's TLS as the CLI does."""
    return docker if docker is not None else DockerHosts.from_inventory(inventory)


def _short(error: whales_errors.DockerException) -> str:
    text = (error.stderr or error.stdout or str(error)).strip()
    return text.splitlines()[-1] if text else str(error)


def _failure(engine: Engine, message: str, error: whales_errors.DockerException, hint: str = "") -> EngineError:
    """The error of a failed docker call: an ssh:// endpoint's own failure (host key, key, Docker
    access, docker missing, port closed) as that, with its fix; otherwise ``message`` and ``hint``."""
    return diagnose(engine.endpoint, error.stderr or str(error), engine.mux) or EngineError(message, hint=hint)


@dataclass(frozen=True)
class EngineInfo:
    endpoint: str
    version: str
    hostname: str
    swarm_state: str
    swarm_node_id: str
    swarm_cluster_id: str
    memory_bytes: int


def _unanswered_hint(engine: Engine, detail: str) -> str:
    """A refused TLS handshake needs other files, not another network path."""
    if engine.client.client_config.tlsverify and any(word in detail for word in ("x509", "tls", "certificate")):
        return (
            "check this host's tls: files in the inventory: ca must be the CA that signed the engine's certificate"
            " (for its address or name), cert and key a client pair the engine's CA signed"
        )
    return "check that dockerd runs there and that this machine may reach it"


UNANSWERED = ("cannot connect to the docker daemon", "connection refused", "no such host", "i/o timeout", "x509", "tls")


def _failed(engine: Engine, what: str, error: whales_errors.DockerException) -> EngineError:
    """A request an engine failed: its own last line, and a hint (how to reach it, when it did not answer)."""
    detail = _short(error)
    if any(word in detail.lower() for word in UNANSWERED):
        hint = _unanswered_hint(engine, detail)
    else:
        hint = f"the error is the engine's own message; the same command by hand (docker -H {engine.endpoint}) shows more"
    return _failure(engine, f"{what} on {engine.endpoint} failed: {detail}", error, hint)


def engine_info(engine: Engine) -> EngineInfo:
    try:
        info = engine.client.system.info()
        if not info.server_version:
            # `docker info` exits 0 on some server errors (plain HTTP to a TLS port); `docker version` fails with the reason
            whales_utils.run([*engine.client.docker_cmd, "version", "--format", "{{.Server.Version}}"])
    except whales_errors.DockerException as error:
        detail = _short(error)
        message = f"the Docker engine at {engine.endpoint} does not answer: {detail}"
        raise _failure(engine, message, error, _unanswered_hint(engine, detail)) from error
    if not info.server_version:
        raise EngineError(
            f"the Docker engine at {engine.endpoint} does not answer: no server version", hint=_unanswered_hint(engine, "")
        )
    swarm = info.swarm
    cluster = getattr(swarm, "cluster", None)
    return EngineInfo(
        endpoint=engine.endpoint,
        version=info.server_version or "",
        hostname=info.name or "",
        swarm_state=(swarm.local_node_state or "inactive") if swarm else "inactive",
        swarm_node_id=(swarm.node_id or "") if swarm else "",
        swarm_cluster_id=(cluster.id if cluster and cluster.id else ""),
        memory_bytes=int(info.mem_total or 0),
    )


def wait_until_ready(engine: Engine, timeout: float) -> EngineInfo:
    """Poll an engine that was just started until it answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return engine_info(engine)
        except EngineError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def build_image(engine: Engine, context_dir: Path, tag: str) -> None:
    """Build with the classic builder: it needs no BuildKit and no network for FROM scratch images."""
    try:
        engine.client.legacy_build(context_dir, tags=tag, pull=False)
    except whales_errors.DockerException as error:
        raise _failed(engine, f"building {tag}", error) from error


def push_image(engine: Engine, tag: str) -> None:
    try:
        engine.client.image.push(tag, quiet=True)
    except whales_errors.DockerException as error:
        raise _failure(
            engine,
            f"pushing {tag} from {engine.endpoint} failed: {_short(error)}",
            error,
            hint="is the registry running and is it listed as --insecure-registry for that engine?",
        ) from error


def has_image(engine: Engine, tag: str) -> bool:
    try:
        return engine.client.image.exists(tag)
    except whales_errors.DockerException as error:
        detail = _short(error)
        message = f"the engine at {engine.endpoint} does not answer: {detail}"
        raise _failure(engine, message, error, _unanswered_hint(engine, detail)) from error


def save_image(engine: Engine, tag: str, archive: Path) -> None:
    """``docker save`` into a file: streamed to disk, not held in memory."""
    _call(engine, f"saving {tag}", lambda c: c.image.save(tag, output=archive))


def load_image(engine: Engine, archive: Path) -> None:
    """``docker load`` from a file, sent through the engine's API (the host needs no registry)."""
    _call(engine, f"loading {archive.name}", lambda c: c.image.load(archive, quiet=True))


def run_detached(
    engine: Engine,
    image: str,
    name: str,
    *,
    env: dict[str, str] | None = None,
    host_ports: tuple[int, ...] = (),
    labels: dict[str, str] | None = None,
) -> str:
    """Start a plain container (not a service); returns its id."""
    try:
        container = engine.client.run(
            image,
            name=name,
            detach=True,
            envs=env or {},
            publish=[(port, port) for port in host_ports],
            labels=labels or {},
        )
    except whales_errors.DockerException as error:
        raise _failed(engine, f"starting {image}", error) from error
    return container.id


def stop_container(engine: Engine, container_id: str, grace_s: int) -> None:
    """SIGTERM, then up to ``grace_s`` seconds for a clean exit (a broker's controlled shutdown); swarm then
    starts the task again under its restart policy."""
    _call(engine, f"stopping container {container_id[:12]}", lambda c: c.container.stop(container_id, time=grace_s))


def remove_containers(engine: Engine, names: list[str]) -> None:
    existing = [c for c in names if engine.client.container.exists(c)]
    if existing:
        engine.client.container.remove(existing, force=True)


# --- swarm -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SwarmNode:
    id: str
    hostname: str
    role: str
    state: str
    availability: str
    address: str
    labels: dict[str, str]


def _call(engine: Engine, what: str, action):
    try:
        return action(engine.client)
    except whales_errors.DockerException as error:
        raise _failed(engine, what, error) from error


def swarm_init(engine: Engine, advertise_address: str) -> None:
    _call(engine, "docker swarm init", lambda c: c.swarm.init(advertise_address=advertise_address))


def join_token(engine: Engine, role: str) -> str:
    """Read from the manager's API into memory only: never printed, logged or stored."""
    return _call(engine, f"reading the {role} join token", lambda c: c.swarm.join_token(role))


JOIN_IN_BACKGROUND = "will continue in the background"  # Docker's answer when a join outlasts its own timeout


def swarm_join(engine: Engine, manager_address: str, token: str, advertise_address: str) -> bool:
    """Join a swarm; True when Docker is still joining in the background (a slow manager), False once joined."""
    try:
        engine.client.swarm.join(f"{manager_address}:2377", advertise_address=advertise_address, token=token)
    except whales_errors.DockerException as error:
        detail = _short(error).replace(token, "<token>")
        if JOIN_IN_BACKGROUND in (error.stderr or "") + detail:
            return True
        raise _failure(engine, f"joining the swarm from {engine.endpoint} failed: {detail}", error) from None
    return False


def swarm_leave(engine: Engine, force: bool) -> None:
    _call(engine, "docker swarm leave", lambda c: c.swarm.leave(force=force))


def swarm_nodes(engine: Engine) -> list[SwarmNode]:
    """Every node of the swarm, inspected in one call (not one call per node)."""
    nodes = _listed_documents(engine, "the swarm's nodes", "node", "ls", "--quiet")
    return [
        SwarmNode(
            id=node["ID"],
            hostname=(node.get("Description") or {}).get("Hostname", ""),
            role=node["Spec"].get("Role", ""),
            state=(node.get("Status") or {}).get("State", ""),
            availability=node["Spec"].get("Availability", ""),
            address=(node.get("Status") or {}).get("Addr") or "",
            labels=dict(node["Spec"].get("Labels") or {}),
        )
        for node in nodes
    ]


def update_node_labels(engine: Engine, node_id: str, labels: dict[str, str]) -> None:
    _call(engine, f"labelling node {node_id}", lambda c: c.node.update(node_id, labels_add=labels))


def set_node_availability(engine: Engine, node_id: str, availability: str) -> None:
    """active, pause or drain: a drained node's tasks shut down (with their stop grace) and none start there."""
    _call(engine, f"setting node {node_id} to {availability}", lambda c: c.node.update(node_id, availability=availability))


def remove_node(engine: Engine, node_id: str) -> None:
    _call(engine, f"removing node {node_id}", lambda c: c.node.remove(node_id, force=True))


# --- preflight probes ---
# Short-lived containers on the host network that listen on, or send traffic to, the cluster's
# ports; everything preflight needs from an engine beyond engine_info.


def ensure_image(engine: Engine, image: str) -> None:
    """Pull only when missing, so a host without registry access but with the image loaded works."""
    try:
        if not engine.client.image.exists(image):
            engine.client.image.pull(image, quiet=True)
    except whales_errors.DockerException as error:
        raise _failure(
            engine,
            f"the image {image} cannot be pulled on {engine.endpoint}: {_short(error)}",
            error,
            hint=f"push it to a registry that host can reach, or load it there: swarmkit image push -i INV --image {image}",
        ) from error


def start_host_network_script(engine: Engine, image: str, script: str, labels: dict[str, str]) -> str:
    """Run a shell script detached on the host's network; the container removes itself when it ends."""
    return _call(
        engine,
        "starting a probe container",
        lambda c: c.run(image, [script], detach=True, remove=True, networks=["host"], labels=labels, pull="never"),
    ).id


def exec_script(engine: Engine, container_id: str, script: str) -> str:
    """Run a shell script in a running container (cheaper than starting another) and return its output."""
    return _call(engine, "a probe script", lambda c: c.container.execute(container_id, ["/bin/sh", "-c", script]))


def container_output(engine: Engine, container_id: str, tail: int | None = None) -> str:
    """What a container printed so far (its last ``tail`` lines), stdout and stderr; empty once it is gone."""
    try:
        return cast(str, engine.client.container.logs(container_id, tail=tail))  # not streamed: one string
    except whales_errors.DockerException:
        return ""


def container_stdout(engine: Engine, container_id: str) -> str:
    """What a container printed on stdout so far, in one call (``container_output`` inspects first); empty once gone."""
    try:
        return cast(str, whales_utils.run([*engine.client.docker_cmd, "container", "logs", container_id]))
    except whales_errors.DockerException:
        return ""


def force_remove_container(engine: Engine, container_id: str) -> bool:
    """Force-remove one container (running or not) in one call; False when that failed (e.g. it was gone)."""
    try:
        engine.client.container.remove([container_id], force=True)
    except whales_errors.DockerException:
        return False
    return True


def remove_labelled_containers(engine: Engine, label: str) -> int:
    """Force-remove every container carrying a label (running or not); returns how many."""
    found = _call(engine, "listing probe containers", lambda c: c.container.list(all=True, filters=[("label", label)]))
    if found:
        _call(engine, "removing probe containers", lambda c: c.container.remove(found, force=True))
    return len(found)


def port_publishers(engine: Engine, port: int, protocol: str) -> list[tuple[str, str]]:
    """(container name, swarm service name or "") for each container publishing a host port."""
    found = _call(engine, "listing containers", lambda c: c.container.list(filters=[("publish", f"{port}/{protocol}")]))
    return [(c.name, c.config.labels.get("com.docker.swarm.service.name", "")) for c in found]


# --- stack deploy and tasks ---
# The stack's life on the swarm (deploy, services, tasks) and the per-node identity volume.
# Tasks and services are read as raw JSON: the typed models drop fields (mounts, update status)
# that convergence needs.


def _raw(engine: Engine, what: str, *args: str) -> str:
    """Run one docker CLI command against an engine and return its stdout (nothing printed)."""
    try:
        return cast(str, whales_utils.run([*engine.client.docker_cmd, *args]))  # stdout only
    except whales_errors.DockerException as error:
        raise _failed(engine, what, error) from error


LIST_READ_ATTEMPTS = 5


def _listed_documents(engine: Engine, what: str, *listing: str) -> list[dict]:
    """What a listing of ids names, inspected in one call. The swarm prunes old tasks (and a node
    may leave) at any moment, so one listed may be gone when it is inspected: then the list is read again."""
    for _ in range(LIST_READ_ATTEMPTS):
        ids = _raw(engine, f"listing {what}", *listing).split()
        if not ids:
            return []
        try:
            return cast(list[dict], json.loads(_raw(engine, f"inspecting {what}", "inspect", *ids)))
        except EngineError as error:
            if "No such object" not in error.message:
                raise
    raise EngineError(f"{what} kept changing while being read ({LIST_READ_ATTEMPTS} attempts)")


def run_job_on_node(manager: Engine, job: str, node_id: str, image: str, mount: str, script: str, env: dict[str, str]) -> str:
    """Run a shell script as root once on one swarm node, through the manager (for a node whose own
    engine swarmkit cannot reach); returns what it printed.  The job service is removed afterwards."""
    args = ["service", "create", "--detach", "--quiet", "--mode", "replicated-job", "--name", job]
    args += ["--constraint", f"node.id=={node_id}", "--mount", mount, "--user", "0", "--entrypoint", "/bin/sh"]
    args += [arg for key, value in env.items() for arg in ("--env", f"{key}={value}")]
    _raw(manager, f"starting job {job}", *args, image, "-c", script)
    try:
        deadline = time.monotonic() + JOB_TIMEOUT
        while not _job_ended(manager, job):
            if time.monotonic() > deadline:
                raise EngineError(f"job {job} did not finish within {JOB_TIMEOUT:.0f} s", hint=f"see `docker service ps {job}`")
            time.sleep(0.2)
        return _raw(manager, f"reading job {job}", "service", "logs", "--raw", job)
    finally:
        _raw(manager, f"removing job {job}", "service", "rm", job)


def _job_ended(manager: Engine, job: str) -> bool:
    state = service_state(manager, job)
    return state is not None and any(t.state in ("complete", "failed", "rejected") for t in state.tasks)


def ensure_volume(engine: Engine, name: str, labels: dict[str, str]) -> None:
    """Create a local volume unless it exists; an existing one is used as it is."""
    if not engine.client.volume.exists(name):
        _call(engine, f"creating volume {name}", lambda c: c.volume.create(name, driver="local", labels=labels))


def run_with_volume(engine: Engine, image: str, volume: str, target: str, script: str, env: dict[str, str]) -> str:
    """Run a shell script as root in a throwaway container with no network and one volume; returns its output."""
    ensure_image(engine, image)
    return _call(
        engine,
        f"a helper container of {image}",
        lambda c: c.run(
            image,
            ["-c", script],
            entrypoint="/bin/sh",
            volumes=[(volume, target)],
            envs=env,
            user="0",
            networks=["none"],
            remove=True,
            pull="never",
        ),
    )


def deploy_stack(engine: Engine, name: str, compose_file: Path) -> None:
    """``docker stack deploy`` of a compose file; the CLI reads the config files it names, relative to it.

    ``--resolve-image never``: no registry query, so the image stays as written (an unchanged stack
    gives an unchanged task spec) and each node pulls it by tag."""
    _raw(
        engine,
        f"docker stack deploy {name}",
        "stack",
        "deploy",
        "--compose-file",
        str(compose_file),
        "--resolve-image",
        "never",
        "--quiet",
        name,
    )


def stack_services(engine: Engine, stack: str) -> list[str]:
    """Names of the services a stack deployed (none when it is not deployed)."""
    found = _call(
        engine,
        f"listing the services of stack {stack}",
        lambda c: c.service.list(filters=[("label", f"com.docker.stack.namespace={stack}")]),
    )
    return sorted(service.spec.name for service in found)


def stack_leftovers(engine: Engine, stack: str) -> list[str]:
    """What `docker stack rm` removes besides services (its networks, configs and secrets): still there after the
    services are gone when a `down` was interrupted half-way."""
    label = f"com.docker.stack.namespace={stack}"

    def listed(client: whales.DockerClient) -> list[str]:
        return [
            *(f"network {network.name}" for network in client.network.list(filters=[("label", label)])),
            *(f"config {config.spec.name}" for config in client.config.list(filters={"label": label})),
            *(f"secret {secret.spec.name}" for secret in client.secret.list(filters=[("label", label)])),
        ]

    return sorted(_call(engine, f"listing what is left of stack {stack}", listed))


@dataclass(frozen=True)
class TaskState:
    """One task of a service, as ``docker service ps --no-trunc`` shows it."""

    id: str
    name: str
    node_id: str
    desired_state: str
    state: str
    message: str
    error: str
    container_id: str
    created_at: str
    current: bool  # runs the service's present container spec (not a task an update will replace)


@dataclass(frozen=True)
class ServiceState:
    name: str
    update_state: str  # "" (never updated), updating, paused, completed, rollback_*
    update_message: str
    env: dict[str, str]
    tasks: tuple[TaskState, ...]
    labels: dict[str, str] = field(default_factory=dict)


def _named_files(entries: list[dict] | None, name_key: str) -> tuple:
    """Configs or secrets as (name, target file) pairs: a renewed certificate is a new secret name."""
    return tuple(sorted((e.get(name_key, ""), (e.get("File") or {}).get("Name", "")) for e in entries or ()))


def _container_fingerprint(container_spec: dict) -> tuple:
    """What decides whether a task runs the present spec: image, command, environment, mounts, configs, secrets."""
    mounts = tuple((m.get("Source"), m.get("Target"), bool(m.get("ReadOnly"))) for m in container_spec.get("Mounts") or ())
    configs = _named_files(container_spec.get("Configs"), "ConfigName")
    secrets = _named_files(container_spec.get("Secrets"), "SecretName")
    fields = ("Image", "Command", "Args", "Env", "Dir", "User", "Hostname")
    plain = tuple(tuple(value) if isinstance(value := container_spec.get(f), list) else value for f in fields)
    return plain + (mounts, configs, secrets)


def _task_documents(engine: Engine, service: str) -> list[dict]:
    """Every task of a service, inspected."""
    return _listed_documents(engine, f"the tasks of {service}", "service", "ps", "--quiet", "--no-trunc", service)


def _service_document(engine: Engine, service: str) -> dict | None:
    """``docker service inspect``, one call; None when the service does not exist."""
    try:
        (spec,) = json.loads(cast(str, whales_utils.run([*engine.client.docker_cmd, "service", "inspect", service])))
    except whales_errors.NoSuchService:
        return None
    except whales_errors.DockerException as error:
        raise _failed(engine, f"inspecting service {service}", error) from error
    return cast(dict, spec)


def service_state(engine: Engine, service: str) -> ServiceState | None:
    """A service's update status, environment and every task it has (history included); None if absent."""
    spec = _service_document(engine, service)
    if spec is None:
        return None
    container = spec["Spec"]["TaskTemplate"].get("ContainerSpec") or {}
    wanted = _container_fingerprint(container)
    raw_tasks = _task_documents(engine, service)
    tasks = []
    for task in raw_tasks:
        status = task.get("Status") or {}
        node_id = task.get("NodeID", "")
        slot = task.get("Slot") or node_id  # a global service's tasks are named after their node
        tasks.append(
            TaskState(
                id=task["ID"],
                name=f"{service}.{slot}.{task['ID']}",
                node_id=node_id,
                desired_state=task.get("DesiredState", ""),
                state=status.get("State", ""),
                message=status.get("Message", ""),
                error=status.get("Err", ""),
                container_id=(status.get("ContainerStatus") or {}).get("ContainerID", ""),
                created_at=task.get("CreatedAt", ""),
                current=_container_fingerprint((task.get("Spec") or {}).get("ContainerSpec") or {}) == wanted,
            )
        )
    update = spec.get("UpdateStatus") or {}
    env = dict(item.split("=", 1) for item in container.get("Env") or () if "=" in item)
    labels = dict(spec["Spec"].get("Labels") or {})
    return ServiceState(service, update.get("State", ""), update.get("Message", ""), env, tuple(tasks), labels)


def service_container(engine: Engine, service: str) -> tuple[str, str] | None:
    """This engine's container of a swarm service and its state (running, paused, ...); None without one."""
    found = _call(
        engine,
        f"listing the containers of {service}",
        lambda c: c.container.list(filters=[("label", f"com.docker.swarm.service.name={service}")]),
    )
    if not found:
        return None
    state = found[0].state
    return found[0].id, "paused" if state.paused else str(state.status or "")


def exec_in_container(engine: Engine, container_id: str, command: list[str]) -> str:
    return _call(
        engine, f"running {command[0]} in container {container_id[:12]}", lambda c: c.container.execute(container_id, command)
    )


def exec_in_service(engine: Engine, service: str, command: list[str]) -> str:
    """Run a command in this engine's running container of a swarm service (e.g. a Kafka tool)."""
    running = _call(
        engine,
        f"listing the containers of {service}",
        lambda c: c.container.list(filters=[("label", f"com.docker.swarm.service.name={service}")]),
    )
    if not running:
        raise EngineError(f"no running container of {service} on {engine.endpoint}")
    return _call(engine, f"running {command[0]} in {service}", lambda c: c.container.execute(running[0].id, command))


def remove_stack(engine: Engine, name: str) -> None:
    """``docker stack rm``: services, networks and configs go; volumes (data, identities) stay."""
    _raw(engine, f"docker stack rm {name}", "stack", "rm", name)


# --- day-2 operations: status, roll, down ---


@dataclass(frozen=True)
class ServiceSpec:
    """What a running service was told to run, beyond its tasks: its image and rolling-update delay."""

    image: str
    update_delay_ns: int
    labels: dict[str, str]


def service_spec(engine: Engine, service: str) -> ServiceSpec | None:
    """The service's image, update delay and labels; None if it does not exist."""
    spec = _service_document(engine, service)
    if spec is None:
        return None
    container = spec["Spec"]["TaskTemplate"].get("ContainerSpec") or {}
    update = spec["Spec"].get("UpdateConfig") or {}
    return ServiceSpec(container.get("Image", ""), int(update.get("Delay") or 0), dict(spec["Spec"].get("Labels") or {}))


def update_service(
    engine: Engine,
    service: str,
    *,
    image: str | None = None,
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    update_delay_ns: int | None = None,
) -> None:
    """``docker service update --detach``: the image as written (no registry query), env and labels added, and
    the delay swarm waits between two tasks of a rolling update."""
    args = ["service", "update", "--detach", "--quiet", "--no-resolve-image"]
    args += ["--image", image] if image else []
    args += [arg for key, value in (env or {}).items() for arg in ("--env-add", f"{key}={value}")]
    args += [arg for key, value in (labels or {}).items() for arg in ("--label-add", f"{key}={value}")]
    args += ["--update-delay", f"{update_delay_ns}ns"] if update_delay_ns is not None else []
    _raw(engine, f"updating service {service}", *args, service)


def remove_service(engine: Engine, service: str) -> None:
    """``docker service rm``: its tasks are stopped (each with its stop grace period) in the background."""
    _raw(engine, f"removing service {service}", "service", "rm", service)


def labelled_containers(engine: Engine, label: str) -> int:
    """How many containers (running or not) carry a label."""
    return len(_call(engine, "listing containers", lambda c: c.container.list(all=True, filters=[("label", label)])))


def remove_labelled_volumes(engine: Engine, label: str) -> list[str]:
    """Remove every volume carrying a label; returns their names."""
    found = _call(engine, "listing volumes", lambda c: c.volume.list(filters=[("label", label)]))
    names = sorted(volume.name for volume in found)
    if names:
        _call(engine, f"removing volumes {', '.join(names)}", lambda c: c.volume.remove(names))
    return names


def names_by_label(engine: Engine, kind: str, label: str) -> dict[str, list[str]]:
    """Every volume or service (``kind``) carrying the label key ``label``: their names by its value."""

    def listed(client: whales.DockerClient) -> list[tuple[str, dict]]:
        if kind == "volume":
            return [(v.name, v.labels or {}) for v in client.volume.list(filters=[("label", label)])]
        return [(s.spec.name or "", s.spec.labels or {}) for s in client.service.list(filters=[("label", label)])]

    by_value: dict[str, list[str]] = {}
    for name, labels in _call(engine, f"listing {kind}s", listed):
        by_value.setdefault(labels.get(label, ""), []).append(name)
    return {value: sorted(names) for value, names in by_value.items()}


def remove_node_labels(engine: Engine, node_id: str, names: list[str]) -> None:
    _call(engine, f"removing labels from node {node_id}", lambda c: c.node.update(node_id, rm_labels=names))
