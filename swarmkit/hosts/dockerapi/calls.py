"""How the adapter calls an engine and words its failures: one place, so every request fails the same way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

import requests.exceptions as http_errors
from docker import errors as sdk_errors

from swarmkit.errors import EngineError
from swarmkit.hosts.ssh import diagnose

if TYPE_CHECKING:  # annotations only (the engine module imports this one)
    import docker as sdk
    import python_on_whales as whales

    from swarmkit.hosts.dockerapi.engine import Engine

T = TypeVar("T")

# what the Docker CLI (Go) or the Engine API client (Python's ssl) says when no answer came
UNANSWERED = (
    "cannot connect to the docker daemon",
    "permission denied while trying to connect",
    "connection refused",
    "no such host",
    "i/o timeout",
    "x509",
    "tls",
    "ssl",
)

# the cause under "does not answer", and what fixes it (name resolution, refused, timeout, permission, no socket)
CAUSE_HINTS = (
    (
        ("name or service not known", "failed to resolve", "no such host", "temporary failure in name resolution"),
        "the endpoint's host name does not resolve from this machine: fix the name in the inventory, or DNS / /etc/hosts",
    ),
    (("connection refused",), "nothing listens there: start dockerd on that host, or fix the endpoint's port"),
    (
        ("timed out", "timeout", "no route to host", "network is unreachable"),
        "no answer came: a firewall or route between this machine and that host drops it; check the address and port",
    ),
    (
        ("permission denied",),
        "this user may not open the engine's socket: add it to the docker group, or run swarmkit as a user who may",
    ),
    (("no such file or directory",), "no Docker socket at that path: start dockerd there, or fix the endpoint's path"),
)


def cli_client(**options: Any) -> whales.DockerClient:
    """A python-on-whales client.  The library (half a second of imports) is imported here, the first time a command
    needs the Docker CLI, and in the two functions below, which run only after a client was made: a command that
    only reads through the Engine API never loads it."""
    import python_on_whales

    return python_on_whales.DockerClient(**options)


def cli_failures() -> tuple[type[Exception], ...]:
    """What a Docker CLI call raises when it fails (an ``except`` evaluates it only when something was raised)."""
    from python_on_whales.exceptions import DockerException

    return (DockerException,)


def sdk_failures() -> tuple[type[Exception], ...]:
    """What an Engine API request raises when it fails: the engine's refusal, or no connection at all."""
    return (sdk_errors.DockerException, http_errors.RequestException)


def said(engine: Engine, error: Exception) -> str:
    """Everything a failed call said: the CLI's stderr, the engine's explanation of a refused request, or (no
    connection) the address dialled and the innermost reason, as the Docker CLI words it."""
    for attribute in ("explanation", "stderr", "stdout"):
        text = getattr(error, attribute, None)
        if text:
            return text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    unreached = _unreached(error)
    if unreached is not None:
        return f"Cannot connect to the Docker daemon at {engine.address}. Is the docker daemon running? ({_reason(unreached)})"
    return str(error)


def _unreached(error: BaseException | None) -> BaseException | None:
    """The connection failure under an API client's error (the SDK wraps one met while settling the API version)."""
    while error is not None:
        if type(error).__module__.startswith("requests") and isinstance(error, http_errors.ConnectionError):
            return error
        error = error.__cause__
    return None


def _reason(error: BaseException) -> str:
    """The innermost cause under requests' and urllib3's wrappers ("[Errno 111] Connection refused")."""
    while True:
        causes = [getattr(error, "reason", None), *getattr(error, "args", ())]
        inner = next((cause for cause in causes if isinstance(cause, BaseException)), None)
        if inner is None:
            return str(error).rsplit(">: ", 1)[-1]  # urllib3 names its connection object first
        error = inner


def short(engine: Engine, error: Exception) -> str:
    """The engine's own last line: the one that says what went wrong."""
    text = said(engine, error).strip()
    return text.splitlines()[-1] if text else str(error)


def failure(engine: Engine, message: str, error: Exception, hint: str = "") -> EngineError:
    """The error of a failed docker call: an ssh:// endpoint's own failure (host key, key, Docker
    access, docker missing, port closed) as that, with its fix; otherwise ``message`` and ``hint``."""
    return diagnose(engine.endpoint, said(engine, error), engine.mux) or EngineError(message, hint=hint)


def unanswered_hint(engine: Engine, detail: str) -> str:
    """A refused TLS handshake needs other files, not another network path."""
    if engine.tls is not None and any(word in detail for word in ("x509", "tls", "certificate")):
        return (
            "check this host's tls: files in the inventory: ca must be the CA that signed the engine's certificate"
            " (for its address or name), cert and key a client pair the engine's CA signed"
        )
    lowered = detail.lower()
    for words, fix in CAUSE_HINTS:
        if any(word in lowered for word in words):
            return fix
    return "check that dockerd runs there and that this machine may reach it"


def failed(engine: Engine, what: str, error: Exception) -> EngineError:
    """A request an engine failed: its own last line, and a hint (how to reach it, when it did not answer)."""
    detail = short(engine, error)
    if any(word in detail.lower() for word in UNANSWERED):
        hint = unanswered_hint(engine, detail)
    else:
        hint = f"the error is the engine's own message; the same command by hand (docker -H {engine.endpoint}) shows more"
    return failure(engine, f"{what} on {engine.endpoint} failed: {detail}", error, hint)


def call(engine: Engine, what: str, action: Callable[[whales.DockerClient], Any]) -> Any:
    """One python-on-whales request; its failure becomes an EngineError naming ``what``."""
    try:
        return action(engine.client)
    except cli_failures() as error:
        raise failed(engine, what, error) from error


def request(engine: Engine, what: str, action: Callable[[sdk.APIClient], T]) -> T:
    """One Engine API request; its failure becomes an EngineError naming ``what``."""
    try:
        return action(engine.api)
    except sdk_failures() as error:
        raise failed(engine, what, error) from error


def lookup(engine: Engine, what: str, action: Callable[[sdk.APIClient], T]) -> T | None:
    """One Engine API request for something that may not exist: None when the engine says it does not."""
    try:
        return request(engine, what, action)
    except EngineError as error:
        if isinstance(error.__cause__, sdk_errors.NotFound):
            return None
        raise


def output(engine: Engine, *args: str) -> str:
    """One docker CLI command's stdout (nothing printed); a failure stays a DockerException for the caller to word."""
    from python_on_whales.utils import run

    return cast(str, run([*engine.client.docker_cmd, *args]))


def cli(engine: Engine, what: str, *args: str) -> str:
    """One docker CLI command's stdout; its failure becomes an EngineError naming ``what``."""
    try:
        return output(engine, *args)
    except cli_failures() as error:
        raise failed(engine, what, error) from error
