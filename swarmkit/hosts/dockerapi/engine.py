"""An engine and the client that reaches it (endpoint, TLS, shared SSH), and what ``docker system info`` says of it."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from swarmkit.lazy import lazy

if TYPE_CHECKING:
    import python_on_whales as whales
    from python_on_whales import exceptions as whales_errors
else:
    whales = lazy("python_on_whales")
    whales_errors = lazy("python_on_whales.exceptions")

from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import parse
from swarmkit.hosts.dockerapi.calls import failure, output, short, unanswered_hint
from swarmkit.hosts.dockerapi.models import EngineInfo
from swarmkit.hosts.inventory import Host, Inventory, TlsFiles
from swarmkit.hosts.ssh import SshMux, is_ssh
from swarmkit.hosts.sshmasters import persist_seconds


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
    to that host or kept from an earlier command, and let go by ``close`` (or a ``with`` block, or when
    the DockerHosts is dropped): kept for the next command for the inventory's ``ssh_persist`` idle
    seconds (``SWARMKIT_SSH_PERSIST``; 60 by default), ended at once with 0."""

    engines: Mapping[str, Engine]  # by inventory host name
    mux: SshMux | None = None

    @classmethod
    def from_inventory(cls, inventory: Inventory, share_ssh: bool = True) -> DockerHosts:
        """``share_ssh=False``: a new SSH connection for every call (only to measure what sharing saves)."""
        mux = None
        if any(is_ssh(h.endpoint) for h in inventory.hosts):
            mux = SshMux(inventory.ssh_config, share_ssh, persist_seconds(inventory.ssh_persist, os.environ))
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
        """Let go of the shared SSH connections (nothing to do without ssh:// hosts)."""
        if self.mux is not None:
            self.mux.close()

    def __enter__(self) -> DockerHosts:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def engine_info(engine: Engine) -> EngineInfo:
    """``docker system info``, parsed; an engine that does not answer is an error that says how to reach it."""
    try:
        info = parse.engine_info(engine.endpoint, json.loads(output(engine, "system", "info", "--format", "{{json .}}")))
        if not info.version:
            # `docker info` exits 0 on some server errors (plain HTTP to a TLS port); `docker version` fails with the reason
            output(engine, "version", "--format", "{{.Server.Version}}")
    except whales_errors.DockerException as error:
        detail = short(error)
        message = f"the Docker engine at {engine.endpoint} does not answer: {detail}"
        raise failure(engine, message, error, unanswered_hint(engine, detail)) from error
    if not info.version:
        raise EngineError(
            f"the Docker engine at {engine.endpoint} does not answer: no server version", hint=unanswered_hint(engine, "")
        )
    return info


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
