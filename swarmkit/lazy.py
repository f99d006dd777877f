"""Heavy libraries imported where they are first used, not when swarmkit is.

python-on-whales (with pydantic under it), confluent-kafka and cryptography take most of a command's
start-up, and `--help`, `--version`, `render` or a refused option never use them.  Their adapter
modules bind them as ``lazy(...)`` at run time and import them for real under TYPE_CHECKING, so mypy
still checks every call.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from swarmkit.fanout import in_background


class lazy:  # noqa: N801  # it stands in for a module name
    """A module that is imported the first time one of its attributes is read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        return getattr(importlib.import_module(self._name), attribute)

    def __repr__(self) -> str:
        return f"<lazy module {self._name}>"


@contextlib.contextmanager
def loading(*names: str) -> Iterator[None]:
    """Import modules in a background thread while the block runs, when the block mostly waits on the network
    (the interpreter is free then): their import costs no wall time when they are used after the block."""
    with in_background(lambda: [importlib.import_module(name) for name in names]):
        yield
