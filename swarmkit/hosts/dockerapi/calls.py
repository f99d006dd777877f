"""How the adapter calls an engine and words its failures: one place, so every request fails the same way."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from swarmkit.errors import EngineError
from swarmkit.hosts.ssh import diagnose
from swarmkit.lazy import lazy

if TYPE_CHECKING:
    import python_on_whales as whales
    from python_on_whales import exceptions as whales_errors
    from python_on_whales import utils as whales_utils

    from swarmkit.hosts.dockerapi.engine import Engine
else:
    whales_errors = lazy("python_on_whales.exceptions")
    whales_utils = lazy("python_on_whales.utils")

UNANSWERED = ("cannot connect to the docker daemon", "connection refused", "no such host", "i/o timeout", "x509", "tls")
LIST_READ_ATTEMPTS = 5
GONE = ("no such", "not found")  # `docker inspect` says No such object; `docker service inspect` says not found


def short(error: whales_errors.DockerException) -> str:
    """The engine's own last line: the one that says what went wrong."""
    text = (error.stderr or error.stdout or str(error)).strip()
    return text.splitlines()[-1] if text else str(error)


def failure(engine: Engine, message: str, error: whales_errors.DockerException, hint: str = "") -> EngineError:
    """The error of a failed docker call: an ssh:// endpoint's own failure (host key, key, Docker
    access, docker missing, port closed) as that, with its fix; otherwise ``message`` and ``hint``."""
    return diagnose(engine.endpoint, error.stderr or str(error), engine.mux) or EngineError(message, hint=hint)


def unanswered_hint(engine: Engine, detail: str) -> str:
    """A refused TLS handshake needs other files, not another network path."""
    if engine.client.client_config.tlsverify and any(word in detail for word in ("x509", "tls", "certificate")):
        return (
            "check this host's tls: files in the inventory: ca must be the CA that signed the engine's certificate"
            " (for its address or name), cert and key a client pair the engine's CA signed"
        )
    return "check that dockerd runs there and that this machine may reach it"


def failed(engine: Engine, what: str, error: whales_errors.DockerException) -> EngineError:
    """A request an engine failed: its own last line, and a hint (how to reach it, when it did not answer)."""
    detail = short(error)
    if any(word in detail.lower() for word in UNANSWERED):
        hint = unanswered_hint(engine, detail)
    else:
        hint = f"the error is the engine's own message; the same command by hand (docker -H {engine.endpoint}) shows more"
    return failure(engine, f"{what} on {engine.endpoint} failed: {detail}", error, hint)


def call(engine: Engine, what: str, action: Callable[[whales.DockerClient], Any]) -> Any:
    """One python-on-whales request; its failure becomes an EngineError naming ``what``."""
    try:
        return action(engine.client)
    except whales_errors.DockerException as error:
        raise failed(engine, what, error) from error


def output(engine: Engine, *args: str) -> str:
    """One docker CLI command's stdout (nothing printed); a failure stays a DockerException for the caller to word."""
    return cast(str, whales_utils.run([*engine.client.docker_cmd, *args]))


def cli(engine: Engine, what: str, *args: str) -> str:
    """One docker CLI command's stdout; its failure becomes an EngineError naming ``what``."""
    try:
        return output(engine, *args)
    except whales_errors.DockerException as error:
        raise failed(engine, what, error) from error


def listed_documents(engine: Engine, what: str, listing: tuple[str, ...], inspect: tuple[str, ...] = ("inspect",)) -> list[dict]:
    """What a listing of ids names, inspected in one call.  The swarm prunes old tasks (and a node may
    leave) at any moment, so one listed may be gone when it is inspected: then the list is read again."""
    for _ in range(LIST_READ_ATTEMPTS):
        ids = cli(engine, f"listing {what}", *listing).split()
        if not ids:
            return []
        try:
            return cast(list[dict], json.loads(cli(engine, f"inspecting {what}", *inspect, *ids)))
        except EngineError as error:
            if not any(word in error.message.lower() for word in GONE):
                raise
    raise EngineError(f"{what} kept changing while being read ({LIST_READ_ATTEMPTS} attempts)")
