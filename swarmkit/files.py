"""Files the user names, read and written carefully: one place for what can go wrong with a path.

An input must be a regular file (a directory, a fifo or ``/dev/zero`` is named as such, never read: no
hang, no memory blow-up), of a bounded size, UTF-8 text; YAML is loaded strictly (a key given twice is an
error naming the key and its lines, instead of the first value silently dropped). An output directory is
checked before anything is written into it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from swarmkit.errors import SpecError, SwarmkitError

T = TypeVar("T")
MAX_BYTES = 1024 * 1024  # an inventory or a client file is a few kilobytes
SPECIAL_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))


class FileProblem(Exception):
    """What is wrong with a file, worded to follow its path ("<path>: <problem>")."""


def read_text(path: Path, max_bytes: int = MAX_BYTES) -> str:
    """A small UTF-8 text file's content; FileNotFoundError when it does not exist, else FileProblem."""
    data = read_bytes(path, max_bytes)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise FileProblem(f"is not UTF-8 text (byte {error.start}): a binary file?") from None
    if "\x00" in text:
        raise FileProblem("is not text: it holds NUL bytes")
    return text


def read_bytes(path: Path, max_bytes: int = MAX_BYTES) -> bytes:
    """A regular file's content, of at most ``max_bytes``; FileNotFoundError when it does not exist, else FileProblem."""
    try:
        info = path.stat()
    except FileNotFoundError:
        raise
    except OSError as error:
        raise FileProblem(f"cannot be read: {error.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise FileProblem("is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise FileProblem("is not a regular file (a fifo, socket or device is never read)")
    if info.st_size > max_bytes:
        raise FileProblem(f"is {info.st_size} bytes, more than the {max_bytes} a file here may have")
    try:
        with path.open("rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as error:
        raise FileProblem(f"cannot be read: {error.strerror}") from None
    return data


def read_input(path: Path, what: str, hint: str = "check the path", error: type[SwarmkitError] = SpecError) -> str:
    """A file the user gives or keeps (a client configuration, a CA file, kept state) as ``read_text`` reads it; a
    problem is ``error`` (bad input, exit 2, unless told otherwise) naming ``what`` and the path."""
    return _given(lambda: read_text(path), path, what, hint, error)


def read_binary(path: Path, what: str, max_bytes: int) -> bytes:
    """A file the user gives that is not text (a sealed state), as ``read_bytes`` reads it; a problem is bad input."""
    return _given(lambda: read_bytes(path, max_bytes), path, what, "check the path", SpecError)


def _given(read: Callable[[], T], path: Path, what: str, hint: str, error: type[SwarmkitError]) -> T:
    try:
        return read()
    except FileNotFoundError:
        raise error(f"{what} {path}: no such file", hint=hint) from None
    except FileProblem as problem:
        raise error(f"{what} {path}: {problem}", hint=hint) from None


def read_kept(path: Path) -> str | None:
    """A file swarmkit keeps (state beside the inventory), None when there is none; one that is no longer a
    small UTF-8 file (a fifo, a device, binary garbage) is bad input, never read: exit 2, nothing changed."""
    try:
        return read_text(path)
    except FileNotFoundError:
        return None
    except FileProblem as problem:
        raise SpecError(
            f"{path}: {problem}", hint="swarmkit keeps this file: restore it from a backup of .swarmkit/ or move it away"
        ) from None


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives a key twice (its own keys: a key a merge key
    (``<<: *anchor``) brings is overridden by one the mapping gives, as YAML means it)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        lines: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                if key in lines:
                    raise FileProblem(f"key '{key}' is given twice (lines {lines[key]} and {line}): keep one")
                lines[key] = line
            except TypeError:  # an unhashable key: the safe loader refuses it below
                pass
        return super().construct_mapping(node, deep)


def load_yaml(text: str) -> Any:
    """Strict YAML: a duplicate key is a FileProblem; a syntax error is a FileProblem naming its line."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506  # a SafeLoader subclass
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark else ""
        raise FileProblem(f"is not valid YAML{line}: {getattr(error, 'problem', None) or error}") from None


def check_output_dir(path: Path) -> Path:
    """A directory to write into: absent (made later) or a directory, under a writable parent, not /proc & co."""
    resolved = path.resolve()
    if any(resolved == root or root in resolved.parents for root in SPECIAL_ROOTS):
        raise FileProblem("is on a special filesystem (/proc, /sys, /dev): nothing is written there")
    if resolved.exists() and not resolved.is_dir():
        raise FileProblem("exists and is not a directory: give a directory (DIR/stack.yml is written)")
    existing = next(p for p in (resolved, *resolved.parents) if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise FileProblem(f"cannot be written: {existing} is not a writable directory")
    return resolved


def check_output_file(path: Path) -> Path:
    """A file to write (made or replaced later), checked before any work: named, not on /proc & co, not a directory
    or a device, under a writable directory (made later if absent). A long command fails at once, not at its end."""
    resolved = path.resolve()
    if any(resolved == root or root in resolved.parents for root in SPECIAL_ROOTS):
        raise FileProblem("is on a special filesystem (/proc, /sys, /dev): nothing is written there")
    if resolved.is_dir():
        raise FileProblem("is a directory: give a file name")
    if resolved.exists() and not resolved.is_file():
        raise FileProblem("exists and is not a regular file (a fifo, socket or device is never written)")
    if resolved.exists() and not os.access(resolved, os.W_OK):
        raise FileProblem("cannot be written: it is read-only for this user")
    existing = next(p for p in resolved.parents if p.exists())
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise FileProblem(f"cannot be written: {existing} is not a writable directory")
    return resolved


def write_all(directory: Path, texts: dict[str, str]) -> None:
    """Every file (name -> text) in ``directory``, or none: each is written beside its place first and moved
    in only once all were written, after every place was found free for a file; so a failure (a name taken by
    a directory, a full disk) leaves the directory as it was, never half-written."""
    directory.mkdir(parents=True, exist_ok=True)
    taken = [name for name in texts if (directory / name).is_dir()]
    if taken:
        raise FileProblem(f"{directory / taken[0]} is a directory: nothing was written")
    written: list[Path] = []
    try:
        for name, text in texts.items():
            written.append(directory / f".{name}.swarmkit-new")
            written[-1].write_text(text, encoding="utf-8")
    except OSError as error:
        for path in written:
            path.unlink(missing_ok=True)
        raise FileProblem(f"{error.filename or directory}: {error.strerror or error}: nothing was written") from None
    for name, path in zip(texts, written):
        os.replace(path, directory / name)
