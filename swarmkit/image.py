"""Offline images: the tansu broker image and the preflight probe image, built from local files."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from swarmkit import dockerapi
from swarmkit.assets import STACKS_DIR, tansu_binary
from swarmkit.errors import SwarmkitError

BUSYBOX = Path("/bin/busybox")
SOCAT = Path("/usr/bin/socat")
TANSU_TAG = "swarmkit/tansu:0.6.0"
PROBE_TAG = "swarmkit/probe:1"


@dataclass(frozen=True)
class ImageRecipe:
    tag: str
    dockerfile: Path
    files: tuple[tuple[Path, str], ...]
    rootfs: tuple[Path, ...] = ()


def _require(path: Path, package: str) -> Path:
    if not path.exists():
        raise SwarmkitError(f"{path} is missing", hint=f"apt-get install {package} (scripts/setup.sh does)")
    return path


def _shared_libraries(binary: Path) -> list[Path]:
    """The libraries a dynamic binary loads, as ldd resolves them on this machine."""
    output = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libraries = []
    for line in output.splitlines():
        parts = line.split()
        candidate = parts[2] if "=>" in parts and len(parts) > 2 else parts[0]
        if candidate.startswith("/"):
            libraries.append(Path(candidate))
    return libraries


def tansu_recipe() -> ImageRecipe:
    return ImageRecipe(
        tag=TANSU_TAG,
        dockerfile=STACKS_DIR / "tansu" / "Dockerfile",
        files=(
            (_require(BUSYBOX, "busybox-static"), "busybox"),
            (tansu_binary(), "tansu"),
            (STACKS_DIR / "node-identity.sh", "node-identity.sh"),
            (STACKS_DIR / "tansu" / "entrypoint.sh", "entrypoint.sh"),
        ),
    )


def probe_recipe() -> ImageRecipe:
    socat = _require(SOCAT, "socat")
    return ImageRecipe(
        tag=PROBE_TAG,
        dockerfile=STACKS_DIR / "probe" / "Dockerfile",
        files=((_require(BUSYBOX, "busybox-static"), "busybox"),),
        rootfs=(socat, *_shared_libraries(socat)),
    )


def build(endpoint: str, recipe: ImageRecipe, tag: str) -> None:
    """Assemble the build context in a temporary directory and build it on one engine."""
    with tempfile.TemporaryDirectory(prefix="swarmkit-image-") as scratch:
        context = Path(scratch)
        shutil.copy(recipe.dockerfile, context / "Dockerfile")
        for source, name in recipe.files:
            shutil.copy(source, context / name)
        rootfs = context / "rootfs"
        rootfs.mkdir()
        for source in recipe.rootfs:
            target = rootfs / source.relative_to("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source.resolve(), target)
        dockerapi.build_image(endpoint, context, tag)


def publish(endpoint: str, recipe: ImageRecipe, registry: str) -> str:
    """Build on one engine and push to the registry every host pulls from; returns the full reference."""
    reference = f"{registry}/{recipe.tag}"
    build(endpoint, recipe, reference)
    dockerapi.push_image(endpoint, reference)
    return reference
