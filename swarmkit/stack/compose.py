"""What every engine builds its services from (pure): the request, escaping, configs, mounts, ports.

Escaping: swarm expands ``{{...}}`` in env values, so user text placed in env (a
``HOSTNAME_COMMAND`` with Go templates) is escaped as ``{{"{{"}}``; compose interpolates ``$`` in
every value, so every ``$`` in the rendered document becomes ``$$``.

Scripts that run in containers stay files (under ``stacks/``) and reach the containers as swarm
configs named after their content (``ConfigFile``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from swarmkit import names
from swarmkit.assets import STACKS_DIR
from swarmkit.defaults import DEFAULT_ENGINE
from swarmkit.errors import SpecError
from swarmkit.hosts.dockerapi.models import SecretChange
from swarmkit.hosts.inventory import Inventory
from swarmkit.security.settings import SecretFile, SecurityMaterial
from swarmkit.stack.controllers import ControllerSet
from swarmkit.stack.deployed import ENGINE_LABEL, IDENTITY_DIR, IDENTITY_FILE, SECURITY_LABEL, TOPICS_LABEL
from swarmkit.stack.listeners import Listener, ListenerPlan
from swarmkit.stack.topics import TopicSpec, format_topic_specs

COMPOSE_VERSION = "3.8"
BROKER_SERVICE = "broker"
IDENTITY_VOLUME = "identity"  # the stack deploys it as <stack_name>_identity


class Advertise(StrEnum):
    """What host a node's broker advertises to clients."""

    HOSTNAME = "hostname"  # the swarm node's hostname (clients resolve it)
    INVENTORY_ADDRESS = "inventory-address"  # the host's address in the inventory
    COMMAND = "command"  # what HOSTNAME_COMMAND prints in the container at start


ADVERTISE_MODES = tuple(Advertise)
NODE_HOSTNAME = "{{.Node.Hostname}}"  # swarm template: the node the task runs on
TASK_NAME = "{{.Task.Name}}"  # swarm template: the task's container name, resolvable on the overlay
CONTAINER_LIB = "/usr/local/lib/swarmkit"  # where stack scripts are mounted in containers
BROKER_UPDATE_DELAY_S = 10  # swarm's own rolling update of the brokers: one every 10 s
SCRIPT_MODE = 0o555
SECRET_MODE = 0o400  # keys and passwords: the Kafka user reads them, nobody else
KAFKA_UID = "1000"  # appuser in apache/kafka and swarmkit/kafka
STACK_FILE = "stack.yml"


@dataclass(frozen=True)
class StackRequest:
    inventory: Inventory
    engine: str = DEFAULT_ENGINE
    image: str | None = None  # None: the engine's default image
    advertise: str = "hostname"  # hostname | inventory-address | command
    hostname_command: str | None = None  # with advertise="command": run in the container at start
    listeners: ListenerPlan = field(default_factory=ListenerPlan)
    topics: Sequence[TopicSpec] = ()  # created by swarmkit after convergence; recorded as a label
    stack_name: str = "kafka"
    cluster_id: str | None = None  # KRaft cluster id (apache): generated once by swarmkit and kept
    network: str = "internal"  # the overlay network's name inside the stack
    replication_factor: int | None = None  # None: min(3, brokers)
    extra_env: Sequence[tuple[str, str]] = ()  # more broker settings, e.g. ("KAFKA_NUM_PARTITIONS", "6")
    security: SecurityMaterial | None = None  # ssl / sasl_ssl: certificates and passwords, mounted as secrets
    controllers: ControllerSet | None = None  # apache: the kept quorum; None: a new cluster's, one per manager

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        extra = self.extra_env.items() if isinstance(self.extra_env, Mapping) else self.extra_env
        object.__setattr__(self, "extra_env", tuple((str(k), str(v)) for k, v in extra))

    @property
    def broker_count(self) -> int:
        return len(self.inventory.hosts)

    @property
    def broker_service(self) -> str:
        """The broker service's name once deployed (``<stack>_broker``)."""
        return f"{self.stack_name}_{BROKER_SERVICE}"

    @property
    def identity_volume(self) -> str:
        """The per-node identity volume's name once deployed (``<stack>_identity``)."""
        return f"{self.stack_name}_{IDENTITY_VOLUME}"


# --- escaping ------------------------------------------------------------------------------------


def swarm_escape(value: str) -> str:
    """Make swarm's template expansion give back ``value`` literally (``{{`` → ``{{"{{"}}``)."""
    return value.replace("{{", '{{"{{"}}')


def compose_escape(value: Any) -> Any:
    """``$`` → ``$$`` in every string of a document (keys stay as they are)."""
    if isinstance(value, str):
        return type(value)(value.replace("$", "$$")) if "$" in value else value
    if isinstance(value, dict):
        return {key: compose_escape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [compose_escape(item) for item in value]
    return value


# --- files that run in containers ----------------------------------------------------------------


@dataclass(frozen=True)
class ConfigFile:
    """A file from ``stacks/`` that reaches containers as a swarm config.

    Swarm configs are immutable, so the name ends with the content's hash: a changed file is a new
    config (and a rolling update of the services using it), an unchanged one changes nothing."""

    filename: str  # beside stack.yml, and under CONTAINER_LIB in the container
    content: str

    @property
    def name(self) -> str:
        digest = hashlib.sha256(self.content.encode("utf-8")).hexdigest()[:8]
        return f"{Path(self.filename).stem}-{digest}"

    @property
    def target(self) -> str:
        return f"{CONTAINER_LIB}/{self.filename}"


def stack_secrets(request: StackRequest) -> tuple[SecretFile, ...]:
    """Every secret the stack names (none in plaintext)."""
    if request.security is None or not request.listeners.secure:
        return ()
    return request.security.all_secrets(request.listeners.sasl)


def secret_mount(secret: SecretFile) -> dict[str, Any]:
    """A service's ``secrets:`` entry: readable by the Kafka images' user (uid 1000) only."""
    return {"source": secret.name, "target": secret.target, "uid": KAFKA_UID, "gid": KAFKA_UID, "mode": FileMode(SECRET_MODE)}


def secret_change(stack: str, mounted: Sequence[tuple[str, str]], wanted: Sequence[SecretFile]) -> SecretChange | None:
    """How a deployed service's secret mounts ((name, target) pairs) become ``wanted``: a mount whose content
    changed is a new secret at the same target (a stack's secrets are named ``<stack>_<name>``); None when
    nothing changes.  Mounts of other targets stay."""
    by_target = dict((target, name) for name, target in mounted)
    changed = [s for s in wanted if by_target.get(s.target) != f"{stack}_{s.name}"]
    if not changed:
        return None
    remove = tuple(by_target[s.target] for s in changed if s.target in by_target)
    add = tuple(
        f"source={stack}_{s.name},target={s.target},uid={KAFKA_UID},gid={KAFKA_UID},mode={SECRET_MODE:04o}" for s in changed
    )
    return SecretChange(remove, add)


class FileMode(int):
    """A file mode, dumped in octal (``0555``) as compose files write it."""


def stack_script(relative_path: str) -> ConfigFile:
    """A script under ``stacks/`` (e.g. ``apache/entrypoint.sh``), to be mounted as a config."""
    path = STACKS_DIR / relative_path
    return ConfigFile(path.name, path.read_text(encoding="utf-8"))


def config_mount(config: ConfigFile) -> dict[str, Any]:
    """A service's ``configs:`` entry: the file at its target, readable and executable by any user."""
    return {"source": config.name, "target": config.target, "mode": FileMode(SCRIPT_MODE)}


# --- pieces shared by the engines ----------------------------------------------------------------


def expected_advertised_host(advertise: str, node_hostname: str, address: str) -> str | None:
    """The host a node's broker must advertise to clients; None when a HOSTNAME_COMMAND decides at start."""
    if advertise == Advertise.HOSTNAME:
        return node_hostname
    if advertise == Advertise.INVENTORY_ADDRESS:
        return address
    return None


def advertise_env(request: StackRequest) -> dict[str, str]:
    """What ``stacks/node-identity.sh`` reads to choose the host this node's broker advertises."""
    env = {
        "SWARMKIT_ADVERTISE": request.advertise,
        "SWARMKIT_NODE_HOSTNAME": NODE_HOSTNAME,
        "SWARMKIT_IDENTITY_FILE": IDENTITY_FILE,
    }
    if request.advertise == Advertise.COMMAND and request.hostname_command:
        env["HOSTNAME_COMMAND"] = swarm_escape(request.hostname_command)
    return env


def kafka_env(settings: Mapping[str, str]) -> dict[str, str]:
    """Kafka properties as the official image's ``KAFKA_*`` variables (``a.b_c`` → ``KAFKA_A_B__C``)."""
    env = {}
    for name, value in settings.items():
        converted = name.replace("_", "__").replace("-", "___").replace(".", "_").upper()
        env[f"KAFKA_{converted}"] = value
    return env


def with_extra_env(request: StackRequest, env: dict[str, str]) -> dict[str, str]:
    """``env`` followed by the request's extra settings (never overriding what swarmkit sets)."""
    merged = dict(env)
    for key, value in request.extra_env:
        if not names.ENV_NAME.fullmatch(key):
            raise SpecError(f"environment: '{key}' is not a valid variable name", hint="use letters, digits and '_'")
        if key in merged:
            raise SpecError(
                f"environment: {key} is set by swarmkit",
                hint="change it through swarmkit's options (listeners, advertise, replication) instead",
            )
        merged[key] = swarm_escape(value)
    return merged


def volume(source: str, target: str, read_only: bool = False) -> dict[str, Any]:
    mount: dict[str, Any] = {"type": "volume", "source": source, "target": target}
    if read_only:
        mount["read_only"] = True
    return mount


def identity_mount() -> dict[str, Any]:
    return volume(IDENTITY_VOLUME, IDENTITY_DIR, read_only=True)


def host_port(listener: Listener) -> dict[str, Any]:
    """Publish a listener's port on the node itself (``mode: host``), not through the routing mesh."""
    return {"target": listener.port, "published": listener.port, "protocol": "tcp", "mode": "host"}


def broker_deploy(request: StackRequest) -> dict[str, Any]:
    """``deploy:`` of the broker service: one task per node, DNS round-robin, one node at a time."""
    labels = {ENGINE_LABEL: request.engine}
    if request.topics:
        labels[TOPICS_LABEL] = format_topic_specs(request.topics)  # documentation only
    if request.listeners.secure:
        labels[SECURITY_LABEL] = request.listeners.security
    return {
        "mode": "global",
        "endpoint_mode": "dnsrr",
        "labels": labels,  # service labels: changing them restarts no task
        "update_config": {
            "parallelism": 1,
            "delay": f"{BROKER_UPDATE_DELAY_S}s",
            "order": "stop-first",
            "failure_action": "pause",
        },
        "restart_policy": {"condition": "any", "delay": "5s"},
    }


def replication_defaults(request: StackRequest) -> tuple[int, int]:
    """(replication factor, min.insync.replicas) sized to the brokers: min(3, n) and max(1, rf - 1)."""
    factor = min(3, request.broker_count) if request.replication_factor is None else request.replication_factor
    if not 1 <= factor <= request.broker_count:
        raise SpecError(
            f"default.replication.factor: {factor} with {request.broker_count} broker(s)",
            hint=f"choose a replication factor from 1 to {request.broker_count}",
        )
    return factor, max(1, factor - 1)
