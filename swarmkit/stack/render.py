"""Render the Kafka stack (pure): a ``StackRequest`` in, compose YAML text out.

The shared shape of every engine lives here: the broker service is ``mode: global`` (one broker
per node) with the external listener published ``mode: host``; an attachable overlay network
carries the internal listener; every service on it uses ``endpoint_mode: dnsrr`` (clients must
reach one specific broker, and the sandbox kernel has no IPVS for virtual IPs); each node's
identity (broker id, inventory address) comes from the stack-scoped volume ``<stack>_identity``
that ``swarmkit deploy`` writes before deploying, so the stack never changes when a node joins.
No service mounts the Docker socket.  Engine-specific services live in ``swarmkit.stack.engines``.

Scripts that run in containers stay files (under ``stacks/``) and reach the containers as swarm
configs named after their content; the stack text only names them, so a ``RenderedStack`` is the
text plus those files, written side by side to deploy.

Escaping: swarm expands ``{{...}}`` in env values, so user text placed in env (a
``HOSTNAME_COMMAND`` with Go templates) is escaped as ``{{"{{"}}``; compose interpolates ``$`` in
every value, so every ``$`` in the rendered document becomes ``$$``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from swarmkit.assets import STACKS_DIR
from swarmkit.errors import SpecError
from swarmkit.hosts.inventory import Inventory
from swarmkit.stack.listener_checks import validate_plan
from swarmkit.stack.listeners import Listener, ListenerPlan
from swarmkit.stack.topics import TopicSpec, format_topic_specs, validate_topic_specs

COMPOSE_VERSION = "3.8"
BROKER_SERVICE = "broker"
IDENTITY_VOLUME = "identity"  # the stack deploys it as <stack_name>_identity
IDENTITY_DIR = "/swarmkit/identity"
IDENTITY_FILE = f"{IDENTITY_DIR}/node.env"
ADVERTISE_MODES = ("hostname", "inventory-address", "command")
NODE_HOSTNAME = "{{.Node.Hostname}}"  # swarm template: the node the task runs on
TASK_NAME = "{{.Task.Name}}"  # swarm template: the task's container name, resolvable on the overlay
LEGAL_STACK_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
LEGAL_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
CONTAINER_LIB = "/usr/local/lib/swarmkit"  # where stack scripts are mounted in containers
SCRIPT_MODE = 0o555
STACK_FILE = "stack.yml"


@dataclass(frozen=True)
class StackRequest:
    inventory: Inventory
    engine: str = "apache"
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


class FileMode(int):
    """A file mode, dumped in octal (``0555``) as compose files write it."""


def stack_script(relative_path: str) -> ConfigFile:
    """A script under ``stacks/`` (e.g. ``apache/entrypoint.sh``), to be mounted as a config."""
    path = STACKS_DIR / relative_path
    return ConfigFile(path.name, path.read_text(encoding="utf-8"))


def config_mount(config: ConfigFile) -> dict[str, Any]:
    """A service's ``configs:`` entry: the file at its target, readable and executable by any user."""
    return {"source": config.name, "target": config.target, "mode": FileMode(SCRIPT_MODE)}


@dataclass(frozen=True)
class RenderedStack:
    """The stack text and the files its configs name (``file: ./NAME``, relative to the stack file)."""

    text: str
    files: tuple[ConfigFile, ...] = ()

    def write(self, directory: Path) -> Path:
        """``DIRECTORY/stack.yml`` with the files beside it, deployable with ``docker stack deploy -c``."""
        directory.mkdir(parents=True, exist_ok=True)
        for config in self.files:
            (directory / config.filename).write_text(config.content, encoding="utf-8")
        path = directory / STACK_FILE
        path.write_text(self.text, encoding="utf-8")
        return path


# --- pieces shared by the engines ----------------------------------------------------------------


def expected_advertised_host(advertise: str, node_hostname: str, address: str) -> str | None:
    """The host a node's broker must advertise to clients; None when a HOSTNAME_COMMAND decides at start."""
    if advertise == "hostname":
        return node_hostname
    if advertise == "inventory-address":
        return address
    return None


def advertise_env(request: StackRequest) -> dict[str, str]:
    """What ``stacks/node-identity.sh`` reads to choose the host this node's broker advertises."""
    env = {
        "SWARMKIT_ADVERTISE": request.advertise,
        "SWARMKIT_NODE_HOSTNAME": NODE_HOSTNAME,
        "SWARMKIT_IDENTITY_FILE": IDENTITY_FILE,
    }
    if request.advertise == "command" and request.hostname_command:
        env["HOSTNAME_COMMAND"] = swarm_escape(request.hostname_command)
    return env


def kafka_env(settings: Mapping[str, str]) -> dict[str, str]:
    """Kafka properties as the official image's ``KAFKA_*`` variables (``a.b_c`` → ``KAFKA_A_B__C``)."""
    env = {}
    for name, value in settings.items():
        converted = name.replace("-", "___").replace("_", "__").replace(".", "_").upper()
        env[f"KAFKA_{converted}"] = value
    return env


def with_extra_env(request: StackRequest, env: dict[str, str]) -> dict[str, str]:
    """``env`` followed by the request's extra settings (never overriding what swarmkit sets)."""
    merged = dict(env)
    for key, value in request.extra_env:
        if not LEGAL_ENV_NAME.match(key):
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
    labels = {"swarmkit.engine": request.engine}
    if request.topics:
        labels["swarmkit.topics"] = format_topic_specs(request.topics)  # documentation only
    return {
        "mode": "global",
        "endpoint_mode": "dnsrr",
        "labels": labels,  # service labels: changing them restarts no task
        "update_config": {"parallelism": 1, "delay": "10s", "order": "stop-first", "failure_action": "pause"},
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


# --- the request as a whole ----------------------------------------------------------------------


def _engine(request: StackRequest) -> ModuleType:
    from swarmkit.stack.engines import engine_module

    return engine_module(request.engine)


def check_request(request: StackRequest) -> ModuleType:
    """Validate everything an engine does not own; returns the engine module."""
    engine = _engine(request)
    if not request.inventory.hosts:
        raise SpecError("inventory: no hosts", hint="list at least one server in the inventory")
    if not LEGAL_STACK_NAME.match(request.stack_name):
        raise SpecError(
            f"stack name '{request.stack_name}' is not valid",
            hint="use lower-case letters, digits, '-' and '_', starting with a letter or digit",
        )
    if not LEGAL_STACK_NAME.match(request.network):
        raise SpecError(f"network name '{request.network}' is not valid", hint="use lower-case letters, digits, '-' and '_'")
    image = request.image if request.image is not None else engine.DEFAULT_IMAGE
    if not image or any(ch.isspace() for ch in image):
        raise SpecError(f"image '{image}' is not a valid image reference", hint=f"e.g. {engine.DEFAULT_IMAGE}")
    if request.advertise not in ADVERTISE_MODES:
        raise SpecError(
            f"advertise: unknown mode '{request.advertise}'",
            hint=f"use one of {', '.join(ADVERTISE_MODES)}",
        )
    command = (request.hostname_command or "").strip()
    if request.advertise == "command" and not command:
        raise SpecError(
            "advertise: 'command' needs a HOSTNAME_COMMAND",
            hint="e.g. --hostname-command 'wget -qO- http://169.254.169.254/latest/meta-data/public-hostname'",
        )
    if request.advertise != "command" and command:
        raise SpecError(
            f"advertise: a HOSTNAME_COMMAND is given but the advertise mode is '{request.advertise}'",
            hint="use --advertise command to advertise the command's output",
        )
    if "\n" in command:
        raise SpecError("HOSTNAME_COMMAND: must be one line", hint="join the commands with ';' or '&&'")
    validate_plan(request.listeners, kraft=engine.KRAFT)
    engine.check(request)
    validate_topic_specs(request.topics, engine.topic_broker_limit(request.broker_count))
    return engine


def image_of(request: StackRequest, engine: ModuleType) -> str:
    return request.image if request.image is not None else engine.DEFAULT_IMAGE


def build_stack(request: StackRequest) -> dict[str, Any]:
    """The compose document as plain data (before ``$`` escaping)."""
    engine = check_request(request)
    volumes = {name: {"driver": "local"} for name in (IDENTITY_VOLUME, *engine.volumes(request))}
    document: dict[str, Any] = {
        "version": COMPOSE_VERSION,
        "services": engine.services(request),
        "networks": {request.network: {"driver": "overlay", "attachable": True}},
        "volumes": volumes,
    }
    configs = engine.config_files(request)
    if configs:
        document["configs"] = {config.name: {"file": f"./{config.filename}"} for config in configs}
    return document


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)  # indent lists under their key


_Dumper.add_representer(FileMode, lambda dumper, data: dumper.represent_scalar("tag:yaml.org,2002:int", f"0{data:o}"))


def _header(request: StackRequest, engine: ModuleType) -> list[str]:
    hosts = ", ".join(host.name for host in request.inventory.hosts)
    lines = [
        f"Kafka on Docker Swarm: stack '{request.stack_name}', engine {request.engine}, image {image_of(request, engine)},",
        f"advertised hosts from: {request.advertise}; {request.broker_count} server(s): {hosts}.",
        "Generated by `swarmkit render`; do not edit: change the inventory or options and render again",
        "(the same inputs give the same bytes, so a diff shows exactly what a change does).",
        "",
        "Deploy:  swarmkit deploy -i INVENTORY   (writes node identities, deploys, waits, creates topics)",
    ]
    if engine.config_files(request):
        lines += [
            "By hand: swarmkit render -i INVENTORY ... -o DIR  writes DIR/stack.yml and, beside it, the files",
            f"         its configs name; then: docker stack deploy -c DIR/{STACK_FILE} {request.stack_name}",
        ]
    else:
        lines.append(f"By hand: docker stack deploy -c FILE {request.stack_name}")
    if engine.NEEDS_IDENTITY or request.advertise == "inventory-address":
        lines += [
            f"  first give every node a volume {request.identity_volume} holding node.env with a unique,",
            "  never reused BROKER_ID and the node's NODE_ADDRESS, e.g. on each node:",
            "  printf 'BROKER_ID=1\\nNODE_ADDRESS=10.0.0.1\\n' |",
            f"    docker run -i --rm -v {request.identity_volume}:/id alpine sh -c 'cat > /id/node.env'",
        ]
    if request.topics:
        lines.append(f"Topics:  {format_topic_specs(request.topics)} (created by swarmkit once brokers run)")
    return [f"# {line}".rstrip() for line in lines]


def _insert_comments(text: str, notes: Mapping[str, Sequence[str]]) -> str:
    """Put each note's comment lines above the first line equal to its key (e.g. ``  broker:``)."""
    out: list[str] = []
    pending = dict(notes)
    for line in text.splitlines():
        comment = pending.pop(line, None)
        if comment:
            indent = line[: len(line) - len(line.lstrip())]
            out += [f"{indent}# {item}".rstrip() for item in comment]
        out.append(line)
    return "\n".join(out) + "\n"


def render_stack(request: StackRequest) -> str:
    """The stack as compose YAML text: readable, deployable by hand, same input → same bytes."""
    document = compose_escape(build_stack(request))
    engine = _engine(request)
    body = yaml.dump(document, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096, allow_unicode=True)
    notes = {f"  {name}:": lines for name, lines in engine.notes(request).items()}
    notes["networks:"] = [
        f"'{request.network}' carries the internal listener between brokers (and controllers);",
        "attachable, so a diagnostic container can join it.",
        *engine.network_notes(request),
    ]
    notes["volumes:"] = [
        f"'{IDENTITY_VOLUME}' ({request.identity_volume} on each node) is written by `swarmkit deploy`: node.env",
        "with BROKER_ID and NODE_ADDRESS; ids live in node labels, so adding a node changes no service.",
    ]
    notes["configs:"] = [
        "Scripts the containers run, from stacks/ in the swarmkit repository. Swarm configs never change,",
        "so each name ends with its content's hash: a changed script is a new config and a rolling update.",
    ]
    return "\n".join(_header(request, engine)) + "\n\n" + _insert_comments(body, notes)


def render(request: StackRequest) -> RenderedStack:
    """The stack text with the files it names: what ``render -o`` writes and ``deploy`` deploys."""
    return RenderedStack(render_stack(request), tuple(_engine(request).config_files(request)))
