"""Render the Kafka stack (pure): a ``StackRequest`` in, compose YAML text out.

The shared shape of every engine lives here: the broker service is ``mode: global`` (one broker
per node) with the external listener published ``mode: host``; an attachable overlay network
carries the internal listener; every service on it uses ``endpoint_mode: dnsrr`` (clients must
reach one specific broker, and the sandbox kernel has no IPVS for virtual IPs); each node's
identity (broker id, inventory address) comes from the stack-scoped volume ``<stack>_identity``
that ``swarmkit deploy`` writes before deploying, so the stack never changes when a node joins.
No service mounts the Docker socket.  Engine-specific services live in ``swarmkit.stack.engines``.

The pieces engines build with live in ``swarmkit.stack.compose``; the stack text only names the
files its configs carry, so a ``RenderedStack`` is the text plus those files, written side by side.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

import yaml

from swarmkit import names
from swarmkit.errors import SpecError
from swarmkit.files import write_all
from swarmkit.security.settings import SecretFile, write_private
from swarmkit.stack.compose import (
    ADVERTISE_MODES,
    COMPOSE_VERSION,
    IDENTITY_VOLUME,
    STACK_FILE,
    Advertise,
    ConfigFile,
    FileMode,
    StackRequest,
    compose_escape,
    stack_secrets,
)
from swarmkit.stack.engines import BrokerEngine, engine_for
from swarmkit.stack.listener_checks import validate_plan
from swarmkit.stack.topics import format_topic_specs, validate_topic_specs


@dataclass(frozen=True)
class RenderedStack:
    """The stack text and the files its configs and secrets name (``file: ./NAME``, relative to the stack file)."""

    text: str
    files: tuple[ConfigFile, ...] = ()
    secrets: tuple[SecretFile, ...] = ()

    def write(self, directory: Path, with_secrets: bool = False) -> Path:
        """``DIRECTORY/stack.yml`` with the files beside it, deployable with ``docker stack deploy -c``.

        Secrets only on request (``deploy``'s private directory), readable by this user alone."""
        write_all(directory, {**{config.filename: config.content for config in self.files}, STACK_FILE: self.text})
        for secret in self.secrets if with_secrets else ():
            path = directory / secret.filename
            path.parent.mkdir(mode=0o700, exist_ok=True)
            write_private(path, secret.content)
        return directory / STACK_FILE


# --- the request as a whole ----------------------------------------------------------------------


def check_request(request: StackRequest) -> BrokerEngine:
    """Validate everything an engine does not own; returns the engine."""
    engine = engine_for(request.engine)
    if not request.inventory.hosts:
        raise SpecError("inventory: no hosts", hint="list at least one server in the inventory")
    names.stack_name(request.stack_name)
    names.stack_name(request.network, "network name")
    names.image_ref(request.image if request.image is not None else engine.DEFAULT_IMAGE)
    if request.advertise not in ADVERTISE_MODES:
        raise SpecError(
            f"advertise: unknown mode '{request.advertise}'",
            hint=f"use one of {', '.join(ADVERTISE_MODES)}",
        )
    command = (request.hostname_command or "").strip()
    if request.advertise == Advertise.COMMAND and not command:
        raise SpecError(
            "advertise: 'command' needs a HOSTNAME_COMMAND",
            hint="e.g. --hostname-command 'wget -qO- http://169.254.169.254/latest/meta-data/public-hostname'",
        )
    if request.advertise != Advertise.COMMAND and command:
        raise SpecError(
            f"advertise: a HOSTNAME_COMMAND is given but the advertise mode is '{request.advertise}'",
            hint="use --advertise command to advertise the command's output",
        )
    if "\n" in command:
        raise SpecError("HOSTNAME_COMMAND: must be one line", hint="join the commands with ';' or '&&'")
    if request.advertise == Advertise.COMMAND and request.listeners.secure:
        raise SpecError(
            f"security: {request.listeners.security} cannot certify a name a HOSTNAME_COMMAND prints only at start",
            hint="advertise hostname or inventory-address with TLS (each broker's certificate names exactly that host)",
        )
    validate_plan(request.listeners, kraft=engine.KRAFT)
    engine.check(request)
    validate_topic_specs(request.topics, engine.topic_broker_limit(request.broker_count))
    return engine


def image_of(request: StackRequest, engine: BrokerEngine) -> str:
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
    secrets = stack_secrets(request)
    if secrets:
        document["secrets"] = {secret.name: {"file": f"./{secret.filename}"} for secret in secrets}
    return document


class _Dumper(yaml.SafeDumper):
    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        return super().increase_indent(flow, False)  # indent lists under their key


_Dumper.add_representer(FileMode, lambda dumper, data: dumper.represent_scalar("tag:yaml.org,2002:int", f"0{data:o}"))
_Dumper.add_multi_representer(StrEnum, lambda dumper, data: dumper.represent_str(data.value))  # engine, advertise mode


def _security_lines(request: StackRequest) -> list[str]:
    plan = request.listeners
    if not plan.secure:
        return []
    clients = "SCRAM-SHA-512 over TLS" if plan.sasl else "a client certificate (mutual TLS)"
    return [f"security: {plan.security}: clients authenticate with {clients}; brokers and controllers with mutual TLS."]


def _header(request: StackRequest, engine: BrokerEngine) -> list[str]:
    hosts = ", ".join(host.name for host in request.inventory.hosts)
    lines = [
        f"Kafka on Docker Swarm: stack '{request.stack_name}', engine {request.engine}, image {image_of(request, engine)},",
        f"advertised hosts from: {request.advertise}; {request.broker_count} server(s): {hosts}.",
        *_security_lines(request),
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
    if engine.NEEDS_IDENTITY or request.advertise == Advertise.INVENTORY_ADDRESS:
        lines += [
            f"  first give every node a volume {request.identity_volume} holding node.env with a unique,",
            "  never reused BROKER_ID and the node's NODE_ADDRESS, e.g. on each node:",
            "  printf 'BROKER_ID=1\\nNODE_ADDRESS=10.0.0.1\\n' |",
            f"    docker run -i --rm -v {request.identity_volume}:/id alpine sh -c 'cat > /id/node.env'",
        ]
    if request.topics:
        lines.append(f"Topics:  {format_topic_specs(request.topics)} (created by swarmkit once brokers run)")
    return [f"# {names.escaped(line)}".rstrip() for line in lines]  # a comment stays one line whatever it names


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
    engine = engine_for(request.engine)
    body = _dump(build_stack(request))
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
    notes["secrets:"] = [
        "Certificates, keys and the admin's SCRAM credential: never in this file. `swarmkit deploy` writes them",
        "to a private directory for `docker stack deploy` (named after their content, like the configs).",
    ]
    return "\n".join(_header(request, engine)) + "\n\n" + _insert_comments(body, notes)


def _dump(document: dict[str, Any]) -> str:
    escaped = compose_escape(document)
    return yaml.dump(escaped, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096, allow_unicode=True)


def render_services(request: StackRequest, services: Collection[str]) -> RenderedStack:
    """Some of the stack's services with everything the stack declares: deployed (never pruned) it adds or
    updates these and leaves every other service as it runs (``replace-node`` adds one controller this way)."""
    document = build_stack(request)
    document["services"] = {name: spec for name, spec in document["services"].items() if name in services}
    engine = engine_for(request.engine)
    return RenderedStack(_dump(document), tuple(engine.config_files(request)), stack_secrets(request))


def render(request: StackRequest) -> RenderedStack:
    """The stack text with the files it names: what ``render -o`` writes and ``deploy`` deploys."""
    return RenderedStack(render_stack(request), tuple(engine_for(request.engine).config_files(request)), stack_secrets(request))
