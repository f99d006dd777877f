"""Faults named from the client's side: a host cut off from its peers, a full log directory, a slow link.

What verify and status read besides the brokers' own checks, each bounded:
- the link to every broker: one Kafka Metadata exchange with a 32 KB request, timed from here (the best of
  three); a link far slower than its peers' is named (plaintext listeners: a TLS or SASL handshake would
  time the handshake, not the link);
- when something failed: from inside each running broker container (its engine answers even when its host's
  network does not), a connection to every other host's swarm port (7946/tcp, which every engine of the
  swarm listens on, whatever its broker does) and the use of its data directory (``df``).
Judging is pure: the readings in, the faults out.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from statistics import median

from swarmkit.errors import SwarmkitError
from swarmkit.fanout import settle_by
from swarmkit.hosts import dockerapi
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory
from swarmkit.stack import metrics
from swarmkit.stack.deployed import broker_service, data_volume

SWARM_PORT = 7946  # every swarm engine's own port: reachable whatever a broker does
DATA_DIR = "/var/lib/kafka/data"
REQUEST_PADDING = 32_000  # bytes of client id (a string of at most 32,767): 0.26 s at 1 mbit, a few ms on a LAN
SAMPLES = 3
SLOW_FACTOR = 5.0  # a link this many times slower than its peers' median...
SLOW_FLOOR_S = 0.05  # ...and at least this slow, is named
FULL_PERCENT = 99
BOUND = 8.0  # seconds for every reading together
CONNECTED = ("0", "124")  # nc's status: it connected (and ended at stdin's end, or was still connected at the timeout)
REACH_SCRIPT = """
for target in "$@"; do
  (timeout 2 nc -w 1 "$target" {port} </dev/null >/dev/null 2>&1; echo "reach $target $?") &
done
wait
echo "disk $(df -P {data} | tail -n 1)"
"""


@dataclass(frozen=True)
class FaultSign:
    node: str
    kind: str  # partition, disk-full, slow-link
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class HostView:
    """What one broker container sees: which peers' swarm port it reaches, and its data directory's use."""

    reaches: dict[str, bool]  # peer address -> connected
    disk_percent: int  # -1: not read
    disk_mib: int


# --- readings -------------------------------------------------------------------------------


def _metadata_request() -> bytes:
    """A Metadata v1 request for every topic, its client id padded to REQUEST_PADDING bytes."""
    client_id = b"swarmkit-link-" + b"x" * REQUEST_PADDING
    body = struct.pack(">hhih", 3, 1, 1, len(client_id)) + client_id + struct.pack(">i", -1)
    return struct.pack(">i", len(body)) + body


def _exchange(address: str, port: int, timeout: float) -> float:
    """Seconds from sending one Metadata request on a connected socket to the whole answer."""
    with socket.create_connection((address, port), timeout=timeout) as connection:
        started = time.monotonic()
        connection.sendall(_metadata_request())
        size = struct.unpack(">i", _read(connection, 4))[0]
        _read(connection, size)
        return time.monotonic() - started


def _read(connection: socket.socket, count: int) -> bytes:
    data = b""
    while len(data) < count:
        chunk = connection.recv(count - len(data))
        if not chunk:
            raise OSError("the broker closed the connection")
        data += chunk
    return data


def link_time(address: str, port: int, timeout: float) -> float | None:
    """The best of SAMPLES exchanges (a pause on a busy machine hits one, not all); None when it does not answer."""
    try:
        return min(_exchange(address, port, timeout) for _ in range(SAMPLES))
    except OSError:
        return None


def host_view(docker: DockerHosts, inventory: Inventory, host_name: str, stack: str) -> HostView | None:
    """From the host's running broker container: its peers' swarm port and its data directory; a broker that does
    not run, or stops while it is asked, has its data volume read from beside it (None: no container at all)."""
    engine = docker[inventory.host(host_name)]
    found = dockerapi.service_container(engine, broker_service(stack))
    if found is None or found[1] != "running":
        return _volume_view(engine, stack)
    peers = [h.address for h in inventory.hosts if h.name != host_name]
    script = REACH_SCRIPT.format(port=SWARM_PORT, data=DATA_DIR)
    try:
        view = parse_view(dockerapi.exec_in_container(engine, found[0], ["/bin/sh", "-c", script, "reach", *peers]))
    except SwarmkitError:
        view = HostView({}, -1, 0)  # Kafka stopped the broker (its log directory failed) while it was asked
    return view if view.disk_percent >= 0 else with_disk(view, _volume_view(engine, stack))


def _volume_view(engine: dockerapi.Engine, stack: str) -> HostView | None:
    """The broker's data volume read from beside the broker (``exporter_view``); without a node exporter, a throwaway
    container of the broker's image (no network), which a busy machine starts late; None without either."""
    beside = exporter_view(engine, stack)
    if beside is not None:
        return beside
    image = dockerapi.service_image_here(engine, broker_service(stack))
    if image is None:
        return None
    script = "echo disk $(df -P /data | tail -n 1)"
    return parse_view(dockerapi.run_with_volume(engine, image, data_volume(stack), "/data", script, {}))


def exporter_view(engine: dockerapi.Engine, stack: str) -> HostView | None:
    """The broker's data volume read in the node exporter's container, which mounts the same volume and runs whatever
    the broker does (Kafka stops a broker whose only log directory failed); None without a running node exporter."""
    exporter = dockerapi.service_container(engine, f"{stack}_{metrics.NODE_SERVICE}")
    if exporter is None or exporter[1] != "running":
        return None
    script = f"echo disk $(df -P {metrics.NODE_DATA_DIR} | tail -n 1)"
    return parse_view(dockerapi.exec_in_container(engine, exporter[0], ["/bin/sh", "-c", script]))


def with_disk(view: HostView, other: HostView | None) -> HostView:
    """Pure: one host's view with the fuller of two readings of its data disk (either may be missing: -1, or None)."""
    if other is None or other.disk_percent <= view.disk_percent:
        return view
    return HostView(view.reaches, other.disk_percent, other.disk_mib)


def parse_view(output: str) -> HostView:
    """Pure: the reach script's lines (``reach ADDRESS STATUS``, see CONNECTED; ``disk`` and df's line)."""
    reaches, percent, mib = {}, -1, 0
    for line in output.splitlines():
        fields = line.split()
        if fields[:1] == ["reach"] and len(fields) == 3:
            reaches[fields[1]] = fields[2] in CONNECTED
        elif fields[:1] == ["disk"] and len(fields) >= 6 and fields[5].rstrip("%").isdigit():
            percent, mib = int(fields[5].rstrip("%")), int(fields[2]) // 1024 if fields[2].isdigit() else 0
    return HostView(reaches, percent, mib)


def read_views(docker: DockerHosts, inventory: Inventory, stack: str, seconds: float) -> dict[str, HostView]:
    """Every host's view at once, within ``seconds``: what its broker's container sees, and its data volume read by
    the node exporter beside it, as separate calls (a broker that stops while it is asked can hold its exec until the
    deadline); hosts with neither answer are left out."""
    names = [h.name for h in inventory.hosts]
    calls = [lambda name=name: host_view(docker, inventory, name, stack) for name in names]
    calls += [lambda name=name: exporter_view(docker[inventory.host(name)], stack) for name in names]
    answers = settle_by(calls, time.monotonic() + seconds)
    return views_of(names, answers[: len(names)], answers[len(names) :])


def views_of(names: Sequence[str], own: Sequence[object], beside: Sequence[object]) -> dict[str, HostView]:
    """Pure: each host's own view with the fuller reading of its data volume from beside it (answers that are not
    views, such as a timeout, count as none); hosts with neither are left out."""
    views = {}
    for name, view, volume in zip(names, own, beside):
        found = view if isinstance(view, HostView) else None
        disk = volume if isinstance(volume, HostView) else None
        if found or disk:
            views[name] = with_disk(found or HostView({}, -1, 0), disk)
    return views


def read_links(addresses: Mapping[str, tuple[str, int]], seconds: float) -> dict[str, float]:
    """Each node's link time from here, at once, within ``seconds``; nodes without an answer are left out."""
    names = list(addresses)
    calls = [lambda name=name: link_time(*addresses[name], min(seconds, 5.0)) for name in names]
    answers = settle_by(calls, time.monotonic() + seconds)
    return {name: answer for name, answer in zip(names, answers) if isinstance(answer, float)}


# --- judging (pure) -------------------------------------------------------------------------


def slow_links(times: Mapping[str, float]) -> list[FaultSign]:
    """A link far slower than the median of the others' is named; two links or fewer give no median to compare."""
    signs = []
    for node, seconds in times.items():
        others = [t for name, t in times.items() if name != node]
        if len(others) < 2:
            continue
        typical = median(others)
        if seconds >= SLOW_FLOOR_S and seconds >= SLOW_FACTOR * max(typical, 0.001):
            detail = (
                f"the link to {node} is markedly slower than its peers': a 32 KB metadata exchange took "
                f"{seconds * 1000:.0f} ms, {typical * 1000:.0f} ms to the others"
            )
            signs.append(FaultSign(node, "slow-link", detail))
    return signs


def full_disks(views: Mapping[str, HostView]) -> list[FaultSign]:
    return [
        FaultSign(
            node,
            "disk-full",
            f"{node}'s broker log directory {DATA_DIR} is full ({view.disk_percent} % of {view.disk_mib} MiB used)",
        )
        for node, view in views.items()
        if view.disk_percent >= FULL_PERCENT
    ]


def cut_off(views: Mapping[str, HostView], addresses: Mapping[str, str]) -> dict[str, set[str]]:
    """Pure: for each node, the peers it and they cannot connect to, either way (as far as views were read)."""
    name_of = {address: name for name, address in addresses.items()}
    cut: dict[str, set[str]] = {name: set() for name in addresses}
    for source, view in views.items():
        for address, connected in view.reaches.items():
            target = name_of.get(address)
            if target and not connected:
                cut[source].add(target)
                cut[target].add(source)
    return cut


def partitions(
    views: Mapping[str, HostView], addresses: Mapping[str, str], unreachable: Sequence[str] | None, fenced: Sequence[str]
) -> list[FaultSign]:
    """The nodes cut off from the most peers (a node cut off from all, not each of the others cut off from it)."""
    cut = cut_off(views, addresses)
    most = max((len(peers) for peers in cut.values()), default=0)
    signs = []
    for node, peers in sorted(cut.items()):
        if not peers or len(peers) < most:
            continue
        facts = [f"{node} is cut off from {', '.join(sorted(peers))} (no connection either way to the swarm port {SWARM_PORT})"]
        if unreachable is not None:
            facts.append("not reachable from here" if node in unreachable else "reachable from here")
        if node in fenced:
            facts.append("its broker is fenced: the controllers no longer count it")
        signs.append(FaultSign(node, "partition", "; ".join(facts)))
    return signs


def signs_of(
    views: Mapping[str, HostView],
    links: Mapping[str, float],
    addresses: Mapping[str, str],
    unreachable: Sequence[str] | None,
    fenced: Sequence[str],
) -> tuple[FaultSign, ...]:
    return tuple(partitions(views, addresses, unreachable, fenced) + full_disks(views) + slow_links(links))


def named(
    inventory: Inventory,
    views: Mapping[str, HostView],
    port: int,
    plaintext: bool,
    unreachable: Sequence[str] | None,
    fenced: Sequence[str],
    seconds: float,
) -> tuple[FaultSign, ...]:
    """The hosts' views (read beforehand) judged with every link timed from here (plaintext listeners only)."""
    addresses = {h.name: h.address for h in inventory.hosts}
    links = read_links({name: (address, port) for name, address in addresses.items()}, seconds) if plaintext else {}
    return signs_of(views, links, addresses, unreachable, fenced)
