"""Images on an engine: build, push, pull when missing, save and load (the adapter reads no image JSON)."""

from __future__ import annotations

from pathlib import Path

from swarmkit.hosts.dockerapi.calls import call, cli_failures, failed, failure, short, unanswered_hint
from swarmkit.hosts.dockerapi.engine import Engine

PUSH_HINT = "is the registry running and is it listed as --insecure-registry for that engine?"


def build_image(engine: Engine, context_dir: Path, tag: str) -> None:
    """Build with the classic builder: it needs no BuildKit and no network for FROM scratch images."""
    try:
        engine.client.legacy_build(context_dir, tags=tag, pull=False)
    except cli_failures() as error:
        raise failed(engine, f"building {tag}", error) from error


def push_image(engine: Engine, tag: str) -> None:
    """Push to the sandbox or a private registry; a failure asks whether that registry is reachable and trusted."""
    try:
        engine.client.image.push(tag, quiet=True)
    except cli_failures() as error:
        message = f"pushing {tag} from {engine.endpoint} failed: {short(engine, error)}"
        raise failure(engine, message, error, hint=PUSH_HINT) from error


def has_image(engine: Engine, tag: str) -> bool:
    """Whether the engine holds the image; an engine that does not answer is an error, not False."""
    try:
        return engine.client.image.exists(tag)
    except cli_failures() as error:
        detail = short(engine, error)
        message = f"the engine at {engine.endpoint} does not answer: {detail}"
        raise failure(engine, message, error, unanswered_hint(engine, detail)) from error


def save_image(engine: Engine, tag: str, archive: Path) -> None:
    """``docker save`` into a file: streamed to disk, not held in memory."""
    call(engine, f"saving {tag}", lambda c: c.image.save(tag, output=archive))


def load_image(engine: Engine, archive: Path) -> None:
    """``docker load`` from a file, sent through the engine's API (the host needs no registry)."""
    call(engine, f"loading {archive.name}", lambda c: c.image.load(archive, quiet=True))


def ensure_image(engine: Engine, image: str) -> None:
    """Pull only when missing, so a host without registry access but with the image loaded works."""
    try:
        if not engine.client.image.exists(image):
            engine.client.image.pull(image, quiet=True)
    except cli_failures() as error:
        message = f"the image {image} cannot be pulled on {engine.endpoint}: {short(engine, error)}"
        hint = f"push it to a registry that host can reach, or load it there: swarmkit image push -i INV --image {image}"
        raise failure(engine, message, error, hint=hint) from error
