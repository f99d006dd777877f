"""Swarm services and their tasks: read (state, spec), updated, removed, and one-off jobs run as a service.

Services and tasks are read as raw JSON through the Engine API (one request each, over the host's kept
connection): the typed python-on-whales models drop fields (mounts, update status) that convergence needs."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from swarmkit import waits
from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import parse
from swarmkit.hosts.dockerapi.calls import cli, lookup
from swarmkit.hosts.dockerapi.engine import Engine
from swarmkit.hosts.dockerapi.models import ENDED, SecretChange, ServiceSpec, ServiceState

JOB_TIMEOUT = 120.0  # a one-off job on a node: pulling the image included


def _service_document(engine: Engine, service: str) -> dict | None:
    """``docker service inspect``, one request; None when the service does not exist."""
    return lookup(engine, f"inspecting service {service}", lambda api: api.inspect_service(service))


def service_state(engine: Engine, service: str) -> ServiceState | None:
    """A service's update status, environment and every task it has (history included); None if absent
    (also when it is removed between the two requests)."""
    spec = _service_document(engine, service)
    what = f"listing the tasks of {service}"
    tasks = None if spec is None else lookup(engine, what, lambda api: api.tasks(filters={"service": service}))
    return None if spec is None or tasks is None else parse.service_state(service, spec, tasks)


def service_spec(engine: Engine, service: str) -> ServiceSpec | None:
    """The service's image, update delay and labels; None if it does not exist."""
    spec = _service_document(engine, service)
    return None if spec is None else parse.service_spec(spec)


def task_spec(engine: Engine, service: str) -> dict | None:
    """What swarm compares with each running task to decide whether to replace it (``parse.task_spec``); None if
    the service is absent."""
    document = _service_document(engine, service)
    return None if document is None else parse.task_spec(document)


def update_service(
    engine: Engine,
    service: str,
    *,
    image: str | None = None,
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    update_delay_ns: int | None = None,
    secrets: SecretChange | None = None,
) -> None:
    """``docker service update --detach``: the image as written (no registry query), env and labels added, the
    delay swarm waits between two tasks of a rolling update, and secret mounts replaced."""
    args = ["service", "update", "--detach", "--quiet", "--no-resolve-image"]
    args += [arg for name in (secrets.remove if secrets else ()) for arg in ("--secret-rm", name)]
    args += [arg for mount in (secrets.add if secrets else ()) for arg in ("--secret-add", mount)]
    args += ["--image", image] if image else []
    args += [arg for key, value in (env or {}).items() for arg in ("--env-add", f"{key}={value}")]
    args += [arg for key, value in (labels or {}).items() for arg in ("--label-add", f"{key}={value}")]
    args += ["--update-delay", f"{update_delay_ns}ns"] if update_delay_ns is not None else []
    cli(engine, f"updating service {service}", *args, service)


def create_secret(engine: Engine, name: str, content: str, labels: Mapping[str, str]) -> None:
    """``docker secret create`` unless a secret of that name exists (names end with their content's hash)."""
    present = cli(engine, f"looking for secret {name}", "secret", "ls", "--format", "{{.Name}}", "--filter", f"name={name}")
    if name in present.split():  # the filter matches prefixes too
        return
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "secret"
        path.touch(mode=0o600)
        path.write_text(content, encoding="utf-8")
        args = [arg for key, value in labels.items() for arg in ("--label", f"{key}={value}")]
        cli(engine, f"creating secret {name}", "secret", "create", *args, name, str(path))


def remove_secrets(engine: Engine, names: Sequence[str]) -> None:
    """``docker secret rm``; a secret still in use stays (Docker refuses), which is not a failure here."""
    for name in names:
        with contextlib.suppress(EngineError):
            cli(engine, f"removing secret {name}", "secret", "rm", name)


def remove_service(engine: Engine, service: str) -> None:
    """``docker service rm``: its tasks are stopped (each with its stop grace period) in the background."""
    cli(engine, f"removing service {service}", "service", "rm", service)


def run_job_on_node(manager: Engine, job: str, node_id: str, image: str, mount: str, script: str, env: dict[str, str]) -> str:
    """Run a shell script as root once on one swarm node, through the manager (for a node whose own
    engine swarmkit cannot reach); returns what it printed.  The job service is removed afterwards."""
    args = ["service", "create", "--detach", "--quiet", "--mode", "replicated-job", "--name", job]
    args += ["--constraint", f"node.id=={node_id}", "--mount", mount, "--user", "0", "--entrypoint", "/bin/sh"]
    args += [arg for key, value in env.items() for arg in ("--env", f"{key}={value}")]
    cli(manager, f"starting job {job}", *args, image, "-c", script)
    try:
        waits.until(
            lambda: _job_ended(manager, job) or waits.NotYet(),
            JOB_TIMEOUT,
            fail=lambda why: EngineError(
                f"job {job} did not finish within {JOB_TIMEOUT:.0f} s", hint=f"see `docker service ps {job}`"
            ),
            first=0.2,
            longest=1.0,
        )
        return cli(manager, f"reading job {job}", "service", "logs", "--raw", job)
    finally:
        cli(manager, f"removing job {job}", "service", "rm", job)


def _job_ended(manager: Engine, job: str) -> bool:
    """A one-off job ends in one of these states; it is never restarted."""
    state = service_state(manager, job)
    return state is not None and any(t.state in ENDED for t in state.tasks)
