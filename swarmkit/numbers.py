"""Numbers given by the user, checked in one place: ports, durations, sizes, counts and Kafka's integers.

Each check returns the value or raises ``SpecError`` (bad input, exit 2) saying what the number must be:
finite, in range, and where Kafka expects an integer, ASCII digits only (``int()`` would take '١٢' or '²').
"""

from __future__ import annotations

import math
import re

from swarmkit.errors import SpecError

MAX_SECONDS = 24 * 3600.0  # no wait swarmkit makes is meant to outlast a day
MAX_GIB = 4096.0
MAX_COUNT = 10**9
INT32_MAX = 2**31 - 1  # Kafka's partition counts, replica counts and int settings
WHOLE = re.compile(r"-?[0-9]+", re.ASCII)


def _refuse(value: object, must: str, example: str) -> SpecError:
    return SpecError(f"{value!r} is not {must}", hint=f"e.g. {example}")


def port(value: int) -> int:
    if not 1 <= value <= 65535:
        raise _refuse(value, "a port number 1-65535", "9094")
    return value


def seconds(value: float, maximum: float = MAX_SECONDS) -> float:
    if not (math.isfinite(value) and 0 < value <= maximum):
        raise _refuse(value, f"a number of seconds above 0 and at most {maximum:g}", "30")
    return value


def gib(value: float) -> float:
    if not (math.isfinite(value) and 0 < value <= MAX_GIB):
        raise _refuse(value, f"a size in GiB above 0 and at most {MAX_GIB:g}", "1.5")
    return value


def rate(value: float) -> float:
    """A rate that may be 0 (no limit), e.g. a throttle in MB/s."""
    if not (math.isfinite(value) and 0 <= value <= MAX_COUNT):
        raise _refuse(value, f"a rate from 0 to {MAX_COUNT:g}", "50, or 0 for no limit")
    return value


def count(value: int, low: int = 1, high: int = MAX_COUNT) -> int:
    if not low <= value <= high:
        raise _refuse(value, f"a whole number from {low} to {high}", str(max(low, 3)))
    return value


def whole(text: str, low: int = -INT32_MAX - 1, high: int = INT32_MAX) -> int:
    """An integer Kafka reads, written in ASCII digits (an optional '-'), within ``low``..``high``."""
    if not WHOLE.fullmatch(text) or not low <= int(text) <= high:
        raise _refuse(text, f"a whole number from {low} to {high} in ASCII digits", "86400000")
    return int(text)
