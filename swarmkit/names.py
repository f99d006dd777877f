"""Names that become paths, labels, service names or image references, checked in one place.

A stack name becomes ``<stack>_broker``, a volume ``<stack>_identity``, a node label
``swarmkit.cluster-id.<stack>`` and a directory ``.swarmkit/<inventory>.<stack>.pki``; a sandbox
name becomes a directory under the sandbox root, a bridge and namespace prefixes; a user name a
password file. Each is checked here before any of that is built, so no name can reach outside
its own place (no '/', '..', '' or whitespace), and a wrong one is bad input (exit 2).
"""

from __future__ import annotations

import re

from swarmkit.errors import SpecError

STACK_MAX = 40  # <stack>_identity-<12-char node id> stays within Docker's 63-character service names
STACK_NAME = re.compile(rf"^[a-z0-9][a-z0-9_-]{{0,{STACK_MAX - 1}}}$")
SANDBOX_NAME = re.compile(r"^[a-z][a-z0-9]{0,5}$")  # skb-<name> and skv-<name>-<n> fit 15-character links
SANDBOX_PREFIX = re.compile(r"^[a-z][a-z0-9-]{0,15}$")
USER_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")  # no ',', '=' or ']' that would break --add-scram
# [registry[:port]/]path[:tag][@digest], lower-case path: Docker's own reference grammar, compacted
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE = re.compile(
    rf"^(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_COMPONENT}(?:/{_COMPONENT})*(?::[\w][\w.-]{{0,127}})?(?:@sha256:[0-9a-f]{{64}})?$",
    re.ASCII,
)


def _shown(name: str) -> str:
    """The name as an error shows it: quoted, control characters visible, long ones cut."""
    return repr(name if len(name) <= 80 else name[:80] + "...")


def _checked(pattern: re.Pattern[str], name: str, what: str, hint: str, problem: str = "is not valid") -> str:
    if not pattern.fullmatch(name):
        raise SpecError(f"{what} {_shown(name)} {problem}", hint=hint)
    return name


def stack_name(name: str, what: str = "stack name") -> str:
    hint = f"use 1-{STACK_MAX} lower-case letters, digits, '-' and '_', starting with a letter or digit"
    return _checked(STACK_NAME, name, what, hint)


def sandbox_name(name: str) -> str:
    return _checked(SANDBOX_NAME, name, "sandbox name", "use 1-6 lower-case letters or digits, e.g. sk")


def sandbox_prefix(prefix: str) -> str:
    return _checked(SANDBOX_PREFIX, prefix, "host prefix", "use lower-case letters, digits and '-'")


def user_name(name: str) -> str:
    return _checked(USER_NAME, name, "user name", "use 1-64 letters, digits, '.', '_' and '-'")


def image_ref(image: str) -> str:
    hint = "e.g. apache/kafka:4.4.0 or registry:5000/kafka:4.4.0"
    return _checked(IMAGE, image, "image", hint, problem="is not a valid image reference")
