"""`up` and `verify` over SSH against the same over unix sockets, and SSH connections per command.

Run as root: .venv/bin/python benchmarks/ssh_vs_socket.py [--rounds N] [--json] [--name NAME --subnet CIDR]

Builds its own sandbox (default 'ss': hosts ss1..ss3, 10.249.0.0/24, tansu brokers, reached over SSH) and
derives a second inventory naming the same engines by their unix sockets.  A first `up` forms the
swarm (not timed).  Then each round, for each way in (alternating which goes first): `down`
(not timed), `up` (preflight, swarm, deploy, a topic) and `verify`, each a command of its own: its
own DockerHosts, as from the CLI.  Over SSH two ways: cold, the kept connections closed before each
command (so it opens its own, as the first command does), and warm, using the connections the
previous command kept (ControlPersist).  The SSH connections every command opened are counted on the
hosts' sshd logs; one more round over SSH without connection sharing shows what sharing saves.  The
kept connections live in a scratch XDG_RUNTIME_DIR; they and the sandbox are always removed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml
from rich.console import Console
from rich.table import Table

from swarmkit.checks import verify
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.hosts.ssh import close_kept
from swarmkit.hosts.sshmasters import PERSIST_ENV
from swarmkit.ops import deploy, teardown
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.sandbox import sshd
from swarmkit.sandbox.state import Sandbox

NAME = "ss"
SUBNET = "10.249.0.0/24"
TOPICS = "bench:3:1"
WAYS = ("socket", "ssh-cold", "ssh-warm")
SSH_WAYS = ("ssh-cold", "ssh-warm", "ssh-unshared")


@dataclass
class Sample:
    way: str  # socket | ssh-cold | ssh-warm | ssh-unshared
    command: str  # up | verify
    seconds: float
    connections: list[int]  # opened per host during the command (ssh only)


def socket_inventory(built: Sandbox, directory: Path) -> str:
    """The sandbox's inventory with every host named by its own unix socket (no SSH)."""
    document = yaml.safe_load(Path(built.inventory_path).read_text())
    document.pop("ssh_config")
    for entry, host in zip(document["hosts"], built.hosts):
        entry["endpoint"] = host.endpoint
    path = directory / "socket.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return str(path)


def command(name: str, inventory: Inventory) -> Callable[[DockerHosts], bool]:
    """What `swarmkit NAME -i INVENTORY` does; True when it succeeded."""
    if name == "up":
        return lambda docker: deploy.up(plan(inventory, DeployOptions(topics=TOPICS)), Session(inventory, docker)).ok
    if name == "verify":
        return lambda docker: verify.verify(Session(inventory, docker), verify.VerifyOptions()).ok
    return lambda docker: teardown.down(Session(inventory, docker)) is not None


def run(built: Sandbox, way: str, inventory: Inventory, name: str) -> Sample:
    """One command with DockerHosts of its own (closed at its end), timed; its SSH connections counted.
    ssh-cold: the kept connections are closed first (not timed)."""
    if way == "ssh-cold":
        close_kept(inventory)
    before = [sshd.connections(h) for h in built.hosts]
    started = time.perf_counter()
    with DockerHosts.from_inventory(inventory, share_ssh=way != "ssh-unshared") as docker:
        ok = command(name, inventory)(docker)
    seconds = time.perf_counter() - started
    if not ok:
        raise SystemExit(f"{name} over {way} failed on a healthy sandbox")
    opened = [sshd.connections(h) - b for h, b in zip(built.hosts, before)]
    return Sample(way, name, seconds, opened)


def measure(args: argparse.Namespace, directory: Path, console: Console) -> list[Sample]:
    sandbox.down(args.name)  # leftovers of a crashed run
    try:
        ssh_inventory = str(directory / "ssh.yaml")
        built = sandbox.up(3, args.name, args.name, args.subnet, ssh_inventory, engine="tansu", managers=1, endpoint="ssh")
        over_ssh = load_inventory(built.inventory_path)
        inventories = {way: over_ssh for way in SSH_WAYS} | {"socket": load_inventory(socket_inventory(built, directory))}
        console.print("forming the swarm (not timed)...")
        run(built, "socket", inventories["socket"], "up")
        samples = []
        plan = [WAYS if r % 2 == 0 else WAYS[::-1] for r in range(args.rounds)] + [("ssh-unshared",)]
        for number, ways in enumerate(plan, 1):
            for way in ways:
                console.print(f"round {number}/{len(plan)}: {way}")
                run(built, way, inventories[way], "down")
                samples += [run(built, way, inventories[way], name) for name in ("up", "verify")]
        return samples
    finally:
        close_kept(None)
        sandbox.down(args.name)


def summary(samples: list[Sample]) -> dict:
    medians = {
        (way, name): statistics.median(s.seconds for s in samples if (s.way, s.command) == (way, name))
        for way in (*WAYS, "ssh-unshared")
        for name in ("up", "verify")
    }
    connections = {
        f"{way}_{name}": max(max(s.connections) for s in samples if (s.way, s.command) == (way, name))
        for way in SSH_WAYS
        for name in ("up", "verify")
    }
    return {
        "rounds": sum(1 for s in samples if (s.way, s.command) == ("ssh-warm", "up")),
        "median_s": {f"{way}_{name}": round(value, 3) for (way, name), value in medians.items()},
        "ratio_vs_socket": {
            f"{way}_{name}": round(medians[way, name] / medians["socket", name], 2)
            for way in WAYS[1:]
            for name in ("up", "verify")
        },
        "max_connections_per_host": connections,
        "samples": [vars(s) for s in samples],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of up + verify each way (medians are shown)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    parser.add_argument("--name", default=NAME, help="the sandbox's name (and its hosts' prefix)")
    parser.add_argument("--subnet", default=SUBNET, help="the sandbox's subnet")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    with tempfile.TemporaryDirectory(prefix="skb-", dir="/tmp") as scratch:
        os.environ.update({"XDG_RUNTIME_DIR": scratch, PERSIST_ENV: ""})  # kept connections of this run only
        result = summary(measure(args, Path(scratch), console))
    if args.json:
        print(json.dumps(result))
        return
    console.print(table_of(result))


def table_of(result: dict) -> Table:
    """Medians by command: over the sockets, then each way over SSH with its ratio and connections per host."""
    table = Table(title=f"3 hosts, tansu: seconds, median of {result['rounds']} rounds (without sharing: 1 round)")
    for column in ("command", "socket", "ssh cold", "ratio", "conns", "ssh warm", "ratio", "conns", "no sharing", "conns"):
        table.add_column(column, justify="right")
    medians, connections, ratios = result["median_s"], result["max_connections_per_host"], result["ratio_vs_socket"]
    for name in ("up", "verify"):
        cells = [f"{medians[f'socket_{name}']:.2f}"]
        for way in SSH_WAYS:
            cells.append(f"{medians[f'{way}_{name}']:.2f}")
            cells += [f"{ratios[f'{way}_{name}']:.2f}x"] if f"{way}_{name}" in ratios else []
            cells.append(str(connections[f"{way}_{name}"]))
        table.add_row(name, *cells)
    return table


if __name__ == "__main__":
    main()
