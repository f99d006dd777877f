"""`swarmkit up` against the bare Docker sequence a user would type, on a fresh 3-host sandbox.

Run as root: .venv/bin/python benchmarks/up_vs_bare.py [--engine apache|tansu] [--runs N] [--json]

Each round builds a fresh sandbox 'ub' (hosts ub1.., 10.250.0.0/24) twice. On the first it times
the bare sequence: `docker swarm init` on the first manager, `docker swarm join` on every other
host, for apache each node's identity file written with `docker run` (what the rendered stack's
header tells a user to do), `docker stack deploy -c` of the very stack swarmkit renders, then
polling every broker's port until it answers Kafka metadata advertising its own node, and creating
the topic. On the second it times `swarmkit up` (preflight included) with the same options.
Prints a table (median of the rounds), or with --json one object with swarmkit_s, bare_s, ratio.
The sandbox is always removed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from swarmkit.errors import BrokerError
from swarmkit.hosts.dockerapi import DockerHosts
from swarmkit.hosts.inventory import Host, Inventory, load_inventory
from swarmkit.hosts.session import Session
from swarmkit.kafka import admin
from swarmkit.ops.deploy import render_for, up
from swarmkit.ops.plan import DeployOptions, plan
from swarmkit.sandbox import hosts as sandbox
from swarmkit.stack.engines.apache import generate_cluster_id
from swarmkit.stack.topics import parse_topic_specs

NAME = "ub"
SUBNET = "10.250.0.0/24"
STACK = "kafka"
TOPICS = {"apache": "bench:6:3", "tansu": "bench:6:1"}
POLL = 0.1
TIMEOUT = 300.0


def timed(action: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = action()
    return time.perf_counter() - started, result


def fresh_inventory(engine: str, directory: Path) -> Inventory:
    sandbox.down(NAME)
    built = sandbox.up(3, NAME, NAME, SUBNET, str(directory / f"{NAME}.yaml"), engine=engine)
    return load_inventory(built.inventory_path)


def bare_swarm(inventory: Inventory, docker: DockerHosts) -> None:
    """swarm init, then one join per host, as typed one after another."""
    first = inventory.first_manager
    docker[first].client.swarm.init(advertise_address=first.address)
    tokens = {role: docker[first].client.swarm.join_token(role) for role in ("manager", "worker")}
    for host in inventory.hosts:
        if host != first:
            token = tokens["manager" if host.is_manager else "worker"]
            docker[host].client.swarm.join(f"{first.address}:2377", advertise_address=host.address, token=token)


def bare_identities(inventory: Inventory, docker: DockerHosts, image: str) -> None:
    """What the rendered header asks for: node.env with BROKER_ID and NODE_ADDRESS in each node's volume."""
    for broker_id, host in enumerate(inventory.hosts, start=1):
        script = f"printf 'BROKER_ID={broker_id}\\nNODE_ADDRESS={host.address}\\n' > /id/node.env"
        docker[host].client.run(
            image, ["-c", script], entrypoint="/bin/sh", user="0", volumes=[(f"{STACK}_identity", "/id")], remove=True
        )


def answers_as_itself(host: Host) -> bool:
    try:
        metadata = admin.broker_metadata(f"{host.address}:9094", 1.0)
    except BrokerError:
        return False
    return any(broker.host == host.name for broker in metadata.brokers)


def bare_wait_and_topics(inventory: Inventory, engine: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    waiting = list(inventory.hosts)
    while waiting:
        if time.monotonic() > deadline:
            raise SystemExit(f"bare: brokers not answering after {TIMEOUT:.0f} s: {[h.name for h in waiting]}")
        waiting = [host for host in waiting if not answers_as_itself(host)]
        if waiting:
            time.sleep(POLL)
    specs = parse_topic_specs(TOPICS[engine])
    bootstraps = [f"{h.address}:9094" for h in inventory.hosts]
    results = admin.ensure_topics(bootstraps[0], specs) if engine == "apache" else admin.ensure_topics_on_each(bootstraps, specs)
    if not all(result.ok for result in results):
        raise SystemExit(f"bare: topics not created: {results}")


def bare_run(engine: str, directory: Path) -> float:
    inventory = fresh_inventory(engine, directory)
    options = DeployOptions(topics=TOPICS[engine], cluster_id=generate_cluster_id() if engine == "apache" else None)
    stack_file = render_for(plan(inventory, options), Session.of(inventory)).write(directory / "stack")
    docker = DockerHosts.from_inventory(inventory)

    def sequence() -> None:
        bare_swarm(inventory, docker)
        if engine == "apache":
            bare_identities(inventory, docker, inventory.stack.image)
        docker[inventory.first_manager].client.stack.deploy(STACK, compose_files=[stack_file])
        bare_wait_and_topics(inventory, engine)

    seconds, _ = timed(sequence)
    return seconds


def swarmkit_run(engine: str, directory: Path) -> dict[str, float]:
    inventory = fresh_inventory(engine, directory)
    seconds, result = timed(lambda: up(plan(inventory, DeployOptions(topics=TOPICS[engine])), Session.of(inventory)))
    preflight = result.preflight.duration_s if result.preflight else 0.0
    return {
        "total_s": seconds,
        "preflight_s": preflight,
        "deploy_s": result.deploy.deploy_s,
        "converge_s": result.deploy.converge_s,
        "topics_and_rest_s": result.deploy.total_s - result.deploy.deploy_s - result.deploy.converge_s,
        "swarm_s": seconds - preflight - result.deploy.total_s,
    }


def measure(engine: str, runs: int, console: Console) -> dict[str, Any]:
    bare, ours = [], []
    with tempfile.TemporaryDirectory(prefix="swarmkit-up-bench-") as scratch:
        try:
            for round_ in range(1, runs + 1):
                console.print(f"round {round_}: bare sequence...")
                bare.append(bare_run(engine, Path(scratch)))
                console.print(f"round {round_}: swarmkit up...")
                ours.append(swarmkit_run(engine, Path(scratch)))
        finally:
            sandbox.down(NAME)
    swarmkit_s = statistics.median(r["total_s"] for r in ours)
    bare_s = statistics.median(bare)
    return {
        "engine": engine,
        "swarmkit_s": swarmkit_s,
        "bare_s": bare_s,
        "ratio": swarmkit_s / bare_s,
        "rounds": ours,
        "bare_rounds": bare,
    }


def print_table(result: dict[str, Any], console: Console) -> None:
    table = Table(
        title=f"swarmkit up vs bare Docker, {result['engine']}, fresh 3-host sandbox (median of {len(result['bare_rounds'])})"
    )
    for column in ("measure", "seconds"):
        table.add_column(column, justify="right")
    table.add_row("bare: init, joins, identities, stack deploy, poll, topics", f"{result['bare_s']:.2f}")
    table.add_row("swarmkit up (preflight included)", f"{result['swarmkit_s']:.2f}")
    for key in ("preflight_s", "swarm_s", "deploy_s", "converge_s", "topics_and_rest_s"):
        table.add_row(f"  of which {key[:-2]}", f"{statistics.median(r[key] for r in result['rounds']):.2f}")
    table.add_row("ratio swarmkit / bare", f"{result['ratio']:.2f}x")
    console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("apache", "tansu"), default="apache")
    parser.add_argument("--runs", type=int, default=1, help="rounds (each builds two fresh sandboxes)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args()
    console = Console(stderr=args.json)
    stdout = os.dup(1)
    os.dup2(2, 1)  # docker's own output (pulls, "Creating service") goes to stderr, keeping stdout for the JSON
    try:
        result = measure(args.engine, args.runs, console)
    finally:
        os.dup2(stdout, 1)
    if args.json:
        print(json.dumps(result))
    else:
        print_table(result, console)


if __name__ == "__main__":
    main()
