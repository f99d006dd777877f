"""An engine and the clients that reach it (endpoint, TLS, shared SSH), and what ``docker system info`` says of it.

Reads go through the Docker Engine API (the ``docker`` SDK) over one persistent connection per host: no
process per call.  What the API offers only in pieces (stack deploy, build, run with its pull) goes through the
Docker CLI (python-on-whales).  Each client is made at its first use, and python-on-whales (half a second of
imports, pydantic's models) is imported only then (``calls.cli_client``): a command that only reads
(``verify``, ``status``) neither makes that client nor pays for its import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

import docker as sdk

from swarmkit import fanout, waits
from swarmkit.errors import EngineError
from swarmkit.hosts.dockerapi import parse
from swarmkit.hosts.dockerapi.calls import cli_client, failure, sdk_failures, short, unanswered_hint
from swarmkit.hosts.dockerapi.models import EngineInfo
from swarmkit.hosts.inventory import Host, Inventory, TlsFiles
from swarmkit.hosts.ssh import SshMux, is_ssh
from swarmkit.hosts.sshmasters import persist_seconds

if TYPE_CHECKING:  # annotations only: the library is imported when its client is made
    import python_on_whales as whales

Client = TypeVar("Client")


@dataclass(frozen=True)
class Engine:
    """One Docker engine: its endpoint, TLS files and SSH mux, and the two clients made from them on first use."""

    endpoint: str
    tls: TlsFiles | None = None
    mux: SshMux | None = field(default=None, repr=False, compare=False)  # an ssh:// engine's shared connection
    _clients: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _lock: fanout.Lock = field(default_factory=fanout.Lock, init=False, repr=False, compare=False)

    @classmethod
    def connect(cls, endpoint: str, tls: TlsFiles | None = None, mux: SshMux | None = None) -> Engine:
        """An engine at one endpoint (unix://, tcp://, ssh://); tcp:// with TLS verifies the engine; an
        ssh:// endpoint given ``mux`` is reached through that mux's one connection to its host.  Nothing is contacted."""
        return cls(endpoint, tls, mux if tls is None and is_ssh(endpoint) else None)

    @property
    def client(self) -> whales.DockerClient:
        """python-on-whales, for what the Docker CLI does better than single API requests."""
        return self._once("cli", self._cli_client)

    @property
    def api(self) -> sdk.APIClient:
        """The Engine API over one kept-alive connection (a small pool when requests overlap); made at the first
        request, which also settles the API version this engine speaks."""
        return self._once("api", self._api_client)

    @property
    def address(self) -> str:
        """What the API client dials: an ssh:// engine's forwarded socket, else the endpoint itself."""
        return self.mux.forwarded(self.endpoint) if self.mux is not None else self.endpoint

    def _once(self, kind: str, make: Callable[[], Client]) -> Client:
        with self._lock:
            if kind not in self._clients:
                self._clients[kind] = make()
            return cast(Client, self._clients[kind])

    def _cli_client(self) -> whales.DockerClient:
        if self.mux is not None:
            return cli_client(**self.mux.cli_options(self.endpoint))
        if self.tls is None:
            return cli_client(host=self.endpoint)
        tls = self.tls
        return cli_client(host=self.endpoint, tlsverify=True, tlscacert=tls.ca, tlscert=tls.cert, tlskey=tls.key)

    def _api_client(self) -> sdk.APIClient:
        """ssh:// through the mux's forwarded socket (also when the mux shares nothing for the CLI: that setting
        measures the CLI's own SSH per call); tcp:// with TLS verifying the engine's certificate against the host's CA."""
        if self.mux is not None:
            self.mux.open(self.endpoint)
        tls = self.tls and sdk.tls.TLSConfig(client_cert=(self.tls.cert, self.tls.key), ca_cert=self.tls.ca, verify=True)
        own_ssh = self.mux is None and is_ssh(self.endpoint)
        settled_later = sdk.constants.MINIMUM_DOCKER_API_VERSION  # no request while the client is made
        api = sdk.APIClient(base_url=self.address, tls=tls or False, use_ssh_client=own_ssh, version=settled_later)
        # requests lets REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE override the client's own CA (the host's), and reads proxies
        # and ~/.netrc per request: the engine is verified against the inventory's files only, and reached directly.
        api.trust_env = False
        api._version = api.version(api_version=False)["ApiVersion"]  # the engine's own, as the SDK's version="auto"
        return api

    def close(self) -> None:
        """End the API client's connections (the CLI client holds none)."""
        with self._lock:
            api = self._clients.pop("api", None)
        if api is not None:
            api.close()


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
        """End the API connections, then the shared SSH connections they ran over."""
        for engine in self.engines.values():
            engine.close()
        if self.mux is not None:
            self.mux.close()

    def __enter__(self) -> DockerHosts:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def engine_info(engine: Engine) -> EngineInfo:
    """``docker system info``, parsed; an engine that does not answer is an error that says how to reach it."""
    try:
        info = parse.engine_info(engine.endpoint, engine.api.info())
    except sdk_failures() as error:
        detail = short(engine, error)
        message = f"the Docker engine at {engine.endpoint} does not answer: {detail}"
        raise failure(engine, message, error, unanswered_hint(engine, detail)) from error
    if not info.version:
        raise EngineError(
            f"the Docker engine at {engine.endpoint} does not answer: no server version", hint=unanswered_hint(engine, "")
        )
    return info


def wait_until_ready(engine: Engine, timeout: float) -> EngineInfo:
    """Poll an engine that was just started until it answers; the last look's EngineError when it does not in time."""
    failed: list[EngineError] = []

    def look() -> EngineInfo | waits.NotYet:
        try:
            return engine_info(engine)
        except EngineError as error:
            failed.append(error)
            return waits.NotYet()

    return waits.until(look, timeout, fail=lambda why: failed[-1], first=0.2, longest=1.0)
