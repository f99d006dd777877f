"""Plain containers and a service's containers on one engine: run, exec, logs, stop, remove, and who holds a port."""

from __future__ import annotations

import functools
from typing import cast

import docker as sdk

from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import parse
from swarmkit.hosts.dockerapi.calls import call, cli_failures, failed, lookup, output, request
from swarmkit.hosts.dockerapi.engine import Engine
from swarmkit.hosts.dockerapi.images import ensure_image


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
    except cli_failures() as error:
        raise failed(engine, f"starting {image}", error) from error
    return container.id


def run_with_volume(engine: Engine, image: str, volume: str, target: str, script: str, env: dict[str, str]) -> str:
    """Run a shell script as root in a throwaway container with no network and one volume; returns its output."""
    ensure_image(engine, image)
    return call(
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


def start_host_network_script(engine: Engine, image: str, script: str, labels: dict[str, str]) -> str:
    """Run a shell script detached on the host's network; the container removes itself when it ends."""
    return call(
        engine,
        "starting a probe container",
        lambda c: c.run(image, [script], detach=True, remove=True, networks=["host"], labels=labels, pull="never"),
    ).id


def stop_container(engine: Engine, container_id: str, grace_s: int) -> None:
    """SIGTERM, then up to ``grace_s`` seconds for a clean exit (a broker's controlled shutdown); swarm then
    starts the task again under its restart policy."""
    call(engine, f"stopping container {container_id[:12]}", lambda c: c.container.stop(container_id, time=grace_s))


def exec_script(engine: Engine, container_id: str, script: str) -> str:
    """Run a shell script in a running container (cheaper than starting another) and return its output."""
    return exec_in_container(engine, container_id, ["/bin/sh", "-c", script])


def exec_in_container(engine: Engine, container_id: str, command: list[str], user: str = "") -> str:
    """Run a command in a container by id (e.g. a quorum read in a controller) through the Engine API, as ``user``
    ("": the container's); its stdout (less one final newline, as the CLI gives it), or an error with its last
    line on stderr."""
    what = f"running {command[0]} in container {container_id[:12]}"

    def run(api: sdk.APIClient) -> tuple[int, bytes, bytes]:
        started = api.exec_create(container_id, command, user=user)["Id"]
        stdout, stderr = api.exec_start(started, demux=True)
        return api.exec_inspect(started)["ExitCode"], stdout or b"", stderr or b""

    code, stdout, stderr = request(engine, what, run)
    if code:
        said = (stderr or stdout).decode(errors="replace").strip().splitlines() or [f"exit status {code}"]
        raise EngineError(f"{what} on {engine.endpoint} failed: {said[-1]}", hint=f"it exited with status {code}")
    return stdout.decode(errors="replace").removesuffix("\n")


def exec_in_service(engine: Engine, service: str, command: list[str], user: str = "") -> str:
    """Run a command in this engine's running container of a swarm service (e.g. a Kafka tool), as ``user``
    ("": the container's)."""
    running = request(engine, f"listing the containers of {service}", lambda api: api.containers(filters=_of(service)))
    if not running:
        raise EngineError(f"no running container of {service} on {engine.endpoint}")
    return exec_in_container(engine, str(running[0]["Id"]), command, user)


def container_output(engine: Engine, container_id: str, tail: int | None = None) -> str:
    """What a container printed so far (its last ``tail`` lines), stdout and stderr; empty once it is gone."""
    try:
        return cast(str, engine.client.container.logs(container_id, tail=tail))  # not streamed: one string
    except cli_failures():
        return ""


def container_stdout(engine: Engine, container_id: str) -> str:
    """What a container printed on stdout so far, in one call (``container_output`` inspects first); empty once gone."""
    try:
        return output(engine, "container", "logs", container_id)
    except cli_failures():
        return ""


def _of(service: str) -> dict[str, str]:
    """The Engine API filter for a swarm service's containers on one engine."""
    return {"label": f"{parse.SERVICE_NAME_LABEL}={service}"}


def _containers(engine: Engine, what: str, filters: dict[str, str]) -> list[dict]:
    """The inspect documents of the running containers a filter matches: one listing, one inspect each (a
    container that ended in between is left out)."""
    listed = request(engine, f"listing {what}", lambda api: api.containers(filters=filters))
    found = [lookup(engine, f"inspecting {what}", functools.partial(_inspect, container["Id"])) for container in listed]
    return [document for document in found if document is not None]


def _inspect(container_id: str, api: sdk.APIClient) -> dict:
    return cast(dict, api.inspect_container(container_id))


def service_container(engine: Engine, service: str) -> tuple[str, str] | None:
    """This engine's container of a swarm service and its state (running, paused, ...); None without one."""
    found = _containers(engine, f"the containers of {service}", _of(service))
    return parse.container_state(found[0]) if found else None


def service_image_here(engine: Engine, service: str) -> str | None:
    """The image of this engine's newest container of a swarm service, running or not (None without one)."""
    listed = request(engine, f"listing the containers of {service}", lambda api: api.containers(all=True, filters=_of(service)))
    return str(listed[0]["Image"]) if listed else None


def port_publishers(engine: Engine, port: int, protocol: str) -> list[tuple[str, str]]:
    """(container name, swarm service name or "") for each container publishing a host port."""
    return [parse.publisher(c) for c in _containers(engine, "containers", {"publish": f"{port}/{protocol}"})]


def labelled_containers(engine: Engine, label: str) -> int:
    """How many containers (running or not) carry a label."""
    return len(call(engine, "listing containers", lambda c: c.container.list(all=True, filters=[("label", label)])))


def force_remove_container(engine: Engine, container_id: str) -> bool:
    """Force-remove one container (running or not) in one call; False when that failed (e.g. it was gone)."""
    try:
        engine.client.container.remove([container_id], force=True)
    except cli_failures():
        return False
    return True


def remove_labelled_containers(engine: Engine, label: str) -> int:
    """Force-remove every container carrying a label (running or not); returns how many."""
    found = call(engine, "listing probe containers", lambda c: c.container.list(all=True, filters=[("label", label)]))
    if found:
        call(engine, "removing probe containers", lambda c: c.container.remove(found, force=True))
    return len(found)
