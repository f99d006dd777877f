"""A stack on the swarm: deployed from a compose file, listed, found again by label, removed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from swarmkit.hosts.dockerapi import parse
from swarmkit.hosts.dockerapi.calls import call, cli, request
from swarmkit.hosts.dockerapi.engine import Engine

if TYPE_CHECKING:
    import python_on_whales as whales

STACK_LABEL = "com.docker.stack.namespace"  # set by `docker stack deploy` on everything it creates


def deploy_stack(engine: Engine, name: str, compose_file: Path) -> None:
    """``docker stack deploy`` of a compose file; the CLI reads the config files it names, relative to it.

    ``--resolve-image never``: no registry query, so the image stays as written (an unchanged stack
    gives an unchanged task spec) and each node pulls it by tag."""
    args = ["stack", "deploy", "--compose-file", str(compose_file), "--resolve-image", "never", "--quiet", name]
    cli(engine, f"docker stack deploy {name}", *args)


def remove_stack(engine: Engine, name: str) -> None:
    """``docker stack rm``: services, networks and configs go; volumes (data, identities) stay."""
    cli(engine, f"docker stack rm {name}", "stack", "rm", name)


def _labelled(engine: Engine, what: str, kind: str, label: str) -> list[dict]:
    """The whole documents of every service or volume (``kind``) carrying ``label`` (a key, or key=value), one request."""
    if kind == "volume":
        return request(engine, f"listing {what}", lambda api: api.volumes(filters={"label": label}).get("Volumes") or [])
    return request(engine, f"listing {what}", lambda api: api.services(filters={"label": label}))


def stack_services(engine: Engine, stack: str) -> list[str]:
    """Names of the services a stack deployed (none when it is not deployed)."""
    found = _labelled(engine, f"the services of stack {stack}", "service", f"{STACK_LABEL}={stack}")
    return sorted(parse.service_labels(service)[0] for service in found)


def stack_leftovers(engine: Engine, stack: str) -> list[str]:
    """What `docker stack rm` removes besides services (its networks, configs and secrets): still there after the
    services are gone when a `down` was interrupted half-way."""
    label = f"{STACK_LABEL}={stack}"

    def listed(client: whales.DockerClient) -> list[str]:
        return [
            *(f"network {network.name}" for network in client.network.list(filters=[("label", label)])),
            *(f"config {config.spec.name}" for config in client.config.list(filters={"label": label})),
            *(f"secret {secret.spec.name}" for secret in client.secret.list(filters=[("label", label)])),
        ]

    return sorted(call(engine, f"listing what is left of stack {stack}", listed))


def names_by_label(engine: Engine, kind: str, label: str) -> dict[str, list[str]]:
    """Every volume or service (``kind``) carrying the label key ``label``: their names by its value."""
    read = parse.volume_labels if kind == "volume" else parse.service_labels
    return parse.names_by_value([read(found) for found in _labelled(engine, f"{kind}s", kind, label)], label)
