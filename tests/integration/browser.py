"""A page opened in Debian's headless chromium (scripts/setup.sh installs it): its DOM as the browser parsed
it, and a screenshot whose pixels are read back (a small PNG decoder: no imaging library is installed)."""

from __future__ import annotations

import shutil
import struct
import subprocess
import tempfile
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",  # runs as root
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1000,2000",
    "--force-device-scale-factor=0.5",  # a screenshot of 500x1000 pixels: quick to decode in Python
)
TIMEOUT = 120.0


@dataclass(frozen=True)
class Opened:
    dom: str
    screenshot: Path
    colours: Counter[tuple[int, int, int]]  # pixels of each colour in the screenshot


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    """One run with a new, empty profile (removed afterwards)."""
    profile = tempfile.mkdtemp(prefix="swarmkit-chromium-")
    try:
        command = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert done.returncode == 0, f"chromium {args}: {done.stderr[-2000:]}"
    return done


def open_page(page: Path, screenshot: Path) -> Opened:
    """The page's DOM after parsing, and its screenshot kept at ``screenshot`` (one run of the browser)."""
    dom = _chromium(f"--screenshot={screenshot}", "--dump-dom", page.resolve().as_uri()).stdout
    return Opened(dom, screenshot, png_colours(screenshot.read_bytes()))


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _unfilter(kind: int, row: bytearray, above: bytearray, step: int) -> bytearray:
    if kind == 0:
        return row
    if kind == 2:
        return bytearray((x + b) & 255 for x, b in zip(row, above))
    for i in range(len(row)):
        a = row[i - step] if i >= step else 0
        b, c = above[i], above[i - step] if i >= step else 0
        row[i] = (row[i] + (a if kind == 1 else (a + b) // 2 if kind == 3 else _paeth(a, b, c))) & 255
    return row


def png_colours(data: bytes) -> Counter[tuple[int, int, int]]:
    """Pixels per RGB colour of an 8-bit RGB or RGBA PNG, as chromium writes them."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    position, idat, header = 8, b"", b""
    while position < len(data):
        (length,) = struct.unpack(">I", data[position : position + 4])
        kind, body = data[position + 4 : position + 8], data[position + 8 : position + 8 + length]
        header, idat = (body, idat) if kind == b"IHDR" else (header, idat + body if kind == b"IDAT" else idat)
        position += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6), f"PNG depth {depth}, colour type {colour_type}"
    step = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * step
    colours: Counter[tuple[int, int, int]] = Counter()
    above = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        above = _unfilter(raw[start], bytearray(raw[start + 1 : start + 1 + stride]), above, step)
        colours.update(zip(above[0::step], above[1::step], above[2::step]))
    return colours


def rgb(hex_colour: str) -> tuple[int, int, int]:
    value = int(hex_colour.lstrip("#"), 16)
    return value >> 16, (value >> 8) & 255, value & 255
