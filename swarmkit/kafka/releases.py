"""The Kafka releases swarmkit runs and the feature levels each brings (pure).

A KRaft cluster's on-disk and wire formats move with its finalized ``metadata.version``: a node runs any
release whose software supports the finalized level, so every node is upgraded first and the level raised
once they all run the new release (the finalize).  After it, an older release cannot read the metadata
any more: that is the end of the downgrade window.

The levels are Kafka's own: ``kafka-features.sh version-mapping --release-version X.Y`` of each release's
kafka-tools (4.3: metadata.version 30, 4.3-IV0; 4.4: 33, 4.4-IV2, share.version 2).  ``kraft.version`` is
left as it is: it changes the quorum's own protocol (static voters to dynamic), not something a release
upgrade finalizes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from swarmkit.errors import SpecError

METADATA_VERSION = "metadata.version"
VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)")
METADATA_NAMES = {30: "4.3-IV0", 31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2"}


@dataclass(frozen=True)
class Release:
    version: str  # X.Y.Z
    levels: tuple[tuple[str, int], ...]  # what the release finalizes (metadata.version first)

    @property
    def metadata_level(self) -> int:
        return dict(self.levels)[METADATA_VERSION]


_COMMON = (("transaction.version", 2), ("group.version", 1), ("eligible.leader.replicas.version", 1), ("streams.version", 1))
RELEASES = {
    "4.3.1": Release("4.3.1", ((METADATA_VERSION, 30), *_COMMON, ("share.version", 1))),
    "4.4.0": Release("4.4.0", ((METADATA_VERSION, 33), *_COMMON, ("share.version", 2))),
}


def metadata_name(level: int) -> str:
    """``4.4-IV2 (33)``: the name Kafka prints for a metadata.version level, and the level."""
    name = METADATA_NAMES.get(level)
    return f"{name} ({level})" if name else f"level {level}"


def version_key(version: str) -> tuple[int, int, int]:
    found = VERSION.match(version)
    if not found:
        raise SpecError(f"{version!r} is not a Kafka version", hint="write it as X.Y.Z, e.g. 4.4.0")
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


def version_in(image: str) -> str:
    """The Kafka version an image's tag names (``apache/kafka:4.4.0``, ``reg:5000/swarmkit/kafka:4.3.1-ab12``);
    "" when it names none."""
    tag = image.rsplit("/", 1)[-1].partition(":")[2]
    found = VERSION.match(tag)
    return found.group(0) if found else ""


def release(version: str) -> Release:
    found = RELEASES.get(version)
    if found is None:
        raise SpecError(
            f"Kafka {version}: not a release swarmkit upgrades to or from",
            hint=f"choose one of {', '.join(RELEASES)}",
        )
    return found


def refusal(target: str, finalized: Mapping[str, int]) -> str:
    """Why nodes on ``target`` cannot run this cluster ("" when they can): a finalized level above what the
    release brings (after a finalize, the older release is out of reach)."""
    wanted = dict(release(target).levels)
    above = [(name, level) for name, level in finalized.items() if name in wanted and level > wanted[name]]
    if not above:
        return ""
    shown = [metadata_name(level) if name == METADATA_VERSION else str(level) for name, level in above]
    return (
        f"the cluster has finalized {', '.join(f'{name} {text}' for (name, _), text in zip(above, shown))}, "
        f"above what Kafka {target} supports ({METADATA_VERSION} {metadata_name(wanted[METADATA_VERSION])})"
    )


def check_jump(running: str, target: str) -> None:
    """A jump Kafka supports: within major version 4 (from 3.x a cluster first goes to 3.9, Kafka's bridge)."""
    if version_key(running)[0] != version_key(target)[0]:
        raise SpecError(
            f"Kafka {running} -> {target}: a jump across major versions is not an upgrade Kafka supports in one step",
            hint="upgrade through the last release of the older major version first",
        )


def to_finalize(target: str, finalized: Mapping[str, int]) -> dict[str, int]:
    """The features to raise once every node runs ``target``, each to the release's level (none lowered)."""
    return {name: level for name, level in release(target).levels if finalized.get(name, 0) < level}
