"""Faults on a sandbox host, as servers fail besides a stopped engine: cut off from its peers, a slow link,
a full data disk.  The sandbox only: these change iptables, tc and a disk of hosts that swarmkit made.

Everything a fault changes can be found by heal without any state: iptables rules tagged with the comment
``swarmkit-fault`` in the host's namespace, token-bucket qdiscs on the two ends of its link (its ``eth0``
and the bridge's end, the ``skv-`` veth), the filler file on its data disk (disks.py).  ``faults.json`` in
the sandbox's directory lists what is active, for `sandbox status` and heal's report.  `sandbox down`
removes namespaces, links and disks, so it heals everything.

- partition: in the host's namespace, ``raw PREROUTING -s PEER -j DROP`` (everything from the peer,
  published host-mode ports included: they are DNAT'ed after raw) and ``mangle POSTROUTING -d PEER -j DROP``
  (everything to it, the host's own packets and its containers' alike).  Peers: the other hosts, and this
  machine (the bridge's address: clients, the registry) unless ``client=False``.
- slow: ``tbf`` on both ends of the link (this kernel has ``tbf`` and ``htb`` but no ``netem``, so delay and
  loss cannot be injected, a bandwidth limit can), with a bucket of a few packets: a saturated link.
- disk-full: the host's broker data disk (``sandbox up --data-limit``) filled to its limit.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from swarmkit.errors import SandboxError, SpecError
from swarmkit.sandbox import disks, state
from swarmkit.sandbox.state import Sandbox, SandboxHost
from swarmkit.sandbox.system import in_netns, run

TAG = "swarmkit-fault"
KINDS = ("partition", "slow", "disk-full")
RATE = re.compile(r"^([1-9][0-9]{0,5})(kbit|mbit|gbit)$")
RATE_BITS = {"kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}
SMALLEST_BUCKET = 2048  # bytes: above one full-size packet, so the limit holds from the first packet on
QUEUE_LATENCY = "400ms"  # what tbf queues before it drops, as a slow link's buffer


@dataclass(frozen=True)
class Fault:
    kind: str
    node: str
    detail: str  # what was done, in a line
    undo: str  # what heal undoes

    def to_dict(self) -> dict:
        return asdict(self)


# --- checks (nothing changes before they pass) ----------------------------------------------


def rate(text: str) -> str:
    """A tc rate such as 1mbit or 500kbit."""
    if not RATE.match(text.lower()):
        raise SpecError(f"rate '{text}' is not a rate", hint="e.g. --rate 1mbit or --rate 500kbit")
    return text.lower()


def _bucket_bytes(rate_text: str) -> int:
    match = RATE.match(rate_text)
    assert match
    bits = int(match.group(1)) * RATE_BITS[match.group(2)]
    return max(SMALLEST_BUCKET, bits // 8 // 100)  # 10 ms at the rate, at least a packet


def sandbox_of_inventory(path: str) -> str:
    """The sandbox whose inventory ``path`` is; refused for any other inventory (real servers)."""
    wanted = Path(path).resolve()
    for found in sorted(state.STATE_ROOT.glob("*/sandbox.json")):
        if Path(json.loads(found.read_text()).get("inventory_path", "")).resolve() == wanted:
            return found.parent.name
    raise SpecError(
        f"{path} is not the inventory of a sandbox on this machine",
        hint="faults are injected only into a sandbox (they change its hosts' iptables, tc and disks); "
        "use --name SANDBOX, or the inventory `swarmkit sandbox up` wrote",
    )


def _peers(sandbox: Sandbox, host: SandboxHost, names: list[str] | None, client: bool) -> list[tuple[str, str]]:
    """(name, address) of every peer to cut ``host`` off from."""
    chosen = [sandbox.host(n) for n in names] if names else [h for h in sandbox.hosts if h.name != host.name]
    if any(peer.name == host.name for peer in chosen):
        raise SpecError(f"--from names {host.name} itself", hint="name the hosts it is cut off from")
    peers = [(peer.name, peer.address) for peer in chosen]
    return peers + ([("this machine", sandbox.gateway)] if client else [])


# --- the state file -------------------------------------------------------------------------


def _state_path(sandbox: Sandbox) -> Path:
    return sandbox.directory / "faults.json"


def active(name: str) -> tuple[Fault, ...]:
    """The faults in effect on a sandbox (none for one that does not exist)."""
    try:
        return tuple(Fault(**f) for f in json.loads(_state_path(state.load(name)).read_text()))
    except (FileNotFoundError, SandboxError):
        return ()


def _record(sandbox: Sandbox, faults: tuple[Fault, ...]) -> None:
    _state_path(sandbox).write_text(json.dumps([f.to_dict() for f in faults], indent=2))


def _add(sandbox: Sandbox, fault: Fault) -> Fault:
    kept = tuple(f for f in active(sandbox.name) if (f.kind, f.node) != (fault.kind, fault.node))
    _record(sandbox, (*kept, fault))
    return fault


# --- the faults -----------------------------------------------------------------------------


def _tagged(kind: str) -> list[str]:
    return ["-m", "comment", "--comment", f"{TAG} {kind}"]


def partition(name: str, node: str, peers: list[str] | None = None, client: bool = True) -> Fault:
    """Drop every packet between ``node`` and its peers (all other hosts unless named), both ways."""
    sandbox = state.load(name)
    host = sandbox.host(node)
    cut = _peers(sandbox, host, peers, client)
    _heal_rules(host)
    for _, address in cut:
        in_netns(host.netns, "iptables", "-t", "raw", "-I", "PREROUTING", "-s", address, *_tagged("partition"), "-j", "DROP")
        in_netns(host.netns, "iptables", "-t", "mangle", "-I", "POSTROUTING", "-d", address, *_tagged("partition"), "-j", "DROP")
    names = ", ".join(f"{peer} ({address})" for peer, address in cut)
    detail = f"{node} cut off from {names}: every packet between them dropped, both ways"
    undo = f"removes the {2 * len(cut)} iptables rules tagged '{TAG}' in {node}'s namespace"
    return _add(sandbox, Fault("partition", node, detail, undo))


def slow(name: str, node: str, limit: str) -> Fault:
    """Limit ``node``'s link to ``limit`` in both directions (a token bucket on each end)."""
    limit = rate(limit)
    sandbox = state.load(name)
    host = sandbox.host(node)
    bucket = str(_bucket_bytes(limit))
    shape = ["root", "tbf", "rate", limit, "burst", bucket, "latency", QUEUE_LATENCY]
    in_netns(host.netns, "tc", "qdisc", "replace", "dev", "eth0", *shape)
    run("tc", "qdisc", "replace", "dev", host.veth, *shape)
    detail = f"{node}'s link limited to {limit} each way (tbf, a {bucket}-byte bucket, {QUEUE_LATENCY} of queue)"
    undo = f"removes the tbf qdiscs from {node}'s eth0 and from the bridge's end of its link ({host.veth})"
    return _add(sandbox, Fault("slow", node, detail, undo))


def disk_full(name: str, node: str) -> Fault:
    """Fill ``node``'s broker data disk to its limit."""
    sandbox = state.load(name)
    host = sandbox.host(node)
    if not sandbox.data_limit:
        raise SpecError(
            f"sandbox '{name}' has no broker data disk of a set size to fill",
            hint="make the sandbox with: swarmkit sandbox up --data-limit 256m",
        )
    taken = disks.fill(host.directory)
    used, size = disks.usage(host.directory)
    where = disks.disk_of(host.directory)
    detail = f"{node}'s broker data disk ({where}, {size // 2**20} MiB) filled: {taken // 2**20} MiB taken, {used * 100 // size} % used"
    undo = f"removes {where / disks.FILLER}"
    return _add(sandbox, Fault("disk-full", node, detail, undo))


# --- heal -----------------------------------------------------------------------------------


def _heal_rules(host: SandboxHost) -> int:
    """Delete every tagged rule in the host's namespace (found by their tag); how many."""
    removed = 0
    for table in ("raw", "mangle"):
        listed = in_netns(host.netns, "iptables-save", "-t", table, check=False).stdout
        for line in listed.splitlines():
            if line.startswith("-A ") and TAG in line:
                rule = re.findall(r'"[^"]*"|\S+', line[3:])
                in_netns(host.netns, "iptables", "-t", table, "-D", *[part.strip('"') for part in rule], check=False)
                removed += 1
    return removed


def _heal_link(host: SandboxHost) -> int:
    """Remove the tbf qdiscs from both ends of the host's link; how many there were."""
    removed = 0
    for dev, command in (
        ("eth0", lambda *a: in_netns(host.netns, *a, check=False)),
        (host.veth, lambda *a: run(*a, check=False)),
    ):
        if " tbf " in command("tc", "qdisc", "show", "dev", dev, "root").stdout:
            command("tc", "qdisc", "del", "dev", dev, "root")
            removed += 1
    return removed


def _heal_host(sandbox: Sandbox, host: SandboxHost) -> list[str]:
    undone = []
    if rules := _heal_rules(host):
        undone.append(f"{host.name}: {rules} partition rules removed")
    if links := _heal_link(host):
        undone.append(f"{host.name}: the link limit removed from {links} ends")
    if sandbox.data_limit and (freed := disks.free(host.directory)):
        undone.append(f"{host.name}: {freed // 2**20} MiB freed on its data disk")
    return undone


def heal(name: str, node: str | None = None) -> list[str]:
    """Undo every fault on ``node`` (every host when None); what was undone (nothing the second time)."""
    sandbox = state.load(name)
    hosts = [sandbox.host(node)] if node else list(sandbox.hosts)
    undone = [line for host in hosts for line in _heal_host(sandbox, host)]
    healed = {host.name for host in hosts}
    _record(sandbox, tuple(f for f in active(name) if f.node not in healed))
    return undone
