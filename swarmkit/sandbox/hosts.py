"""A real server group on one Linux machine: one network namespace, hostname and dockerd per host.

This module is a sandbox's life: `up` (the bridge, the registry, each host's network and engine, the images,
the inventory), `add_node`, an engine stopped and started again for failure drills, and `down`.  What it is
made of lives beside it: the state file (state), the checks before anything is created (validation), the
network plumbing (plumbing), the processes it started (processes), what `sandbox status` shows (status).

Everything the sandbox creates is named after it (bridge, namespaces, veths, state directory), so
`down` can find and remove it even when `up` crashed halfway and left no state file.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import yaml

from swarmkit.defaults import DEFAULT_ENGINE, SANDBOX_MANAGERS, EngineName
from swarmkit.errors import SandboxError
from swarmkit.fanout import fan_out
from swarmkit.hosts import dockerapi
from swarmkit.hosts.inventory import TlsFiles
from swarmkit.images import image, maven
from swarmkit.sandbox import disks, plumbing, processes, sshd, state, validation
from swarmkit.sandbox.state import Sandbox, SandboxHost
from swarmkit.sandbox.system import run as _run
from swarmkit.sandbox.system import spawn_in_host
from swarmkit.sandbox.system import wait_for as _wait_for
from swarmkit.stack.engines import ENGINES, BrokerEngine
from swarmkit.waits import answers_ok

TLS_PORT = 2376  # where a real server's dockerd listens for TLS-verified clients
ENGINE_START_TIMEOUT = 60.0

Report = Callable[[str], None]  # one progress line


def _quiet(message: str) -> None:
    """No progress lines (a caller that shows none)."""


# --- creation -------------------------------------------------------------------------------


def _start_registry(sandbox: Sandbox) -> int:
    directory = sandbox.directory / "registry"
    directory.mkdir(parents=True, exist_ok=True)
    store = maven.cache_dir() / "sandbox-registry"  # shared: an image built for one sandbox serves the next
    store.mkdir(parents=True, exist_ok=True)
    config = {
        "version": 0.1,
        "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(store)}},
        "http": {"addr": sandbox.registry},
    }
    (directory / "config.yml").write_text(yaml.safe_dump(config))
    with open(directory / "registry.log", "ab") as log:
        process = subprocess.Popen(
            ["docker-registry", "serve", str(directory / "config.yml")],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _wait_for(lambda: _registry_answers(sandbox.registry), 20, f"the registry at {sandbox.registry}")
    return process.pid


def _registry_answers(registry: str) -> bool:
    return answers_ok(f"http://{registry}/v2/")


def _new_host(sandbox: Sandbox, index: int) -> SandboxHost:
    network = ipaddress.ip_network(sandbox.subnet)
    name = f"{sandbox.prefix}{index}"
    return SandboxHost(
        name=name,
        index=index,
        address=str(network.network_address + 10 + index),
        netns=f"{state.netns_prefix(sandbox.name)}{name}",
        veth=f"skv-{sandbox.name}-{index}",
        directory=str(sandbox.directory / name),
    )


def _start_engine(sandbox: Sandbox, host: SandboxHost, tls: TlsFiles | None = None) -> int:
    """dockerd in the host's network namespace with its own hostname and a private /run.

    With ``tls`` (the engine's CA for clients, its certificate and key) it also listens on
    tcp://ADDRESS:2376 and accepts only clients with a certificate from that CA, as a real server.
    A sandbox reached over SSH gives the socket to the host's own docker group (see sshd.py).
    """
    directory = Path(host.directory)
    directory.mkdir(parents=True, exist_ok=True)
    if sandbox.data_limit:  # before dockerd: its mount namespace is a copy of this one
        disks.mount(host.directory, sandbox.data_limit)
    script = (
        f"exec dockerd --data-root {directory}/data --exec-root {directory}/exec"
        f" -H unix://{directory}/docker.sock --pidfile {directory}/docker.pid"
        f" --insecure-registry {sandbox.registry}"
    )
    if tls is not None:
        script += f" -H tcp://{host.address}:{TLS_PORT} --tlsverify --tlscacert {tls.ca} --tlscert {tls.cert} --tlskey {tls.key}"
    if sandbox.endpoint == "ssh":
        script += f" --group {sshd.group_name(sandbox.name, host.name)}"
    return spawn_in_host(host.netns, host.name, script, directory / "dockerd.log")


def _bring_up_hosts(sandbox: Sandbox, hosts: list[SandboxHost], report: Report = _quiet) -> list[SandboxHost]:
    """Networks one by one (cheap), engines in parallel (the slow part)."""
    started = []
    for host in hosts:
        plumbing.create_host_network(sandbox, host)
        report(f"{host.name}: engine starting")
        if sandbox.endpoint == "ssh":
            sshd.add_host_group(sandbox.name, host.name)
        started.append(replace(host, pid=_start_engine(sandbox, host)))
        state.save(replace(sandbox, hosts=sandbox.hosts + tuple(started)))
    fan_out(_wait_engine, started)
    if sandbox.data_limit:
        fan_out(lambda h: disks.create_volume(h.docker, h.directory), started)
    report(f"engines ready on {', '.join(h.name for h in started)}")
    if sandbox.endpoint == "ssh":
        started = fan_out(lambda h: replace(h, sshd_pid=sshd.start_server(sandbox.name, h)), started)
    return started


def _wait_engine(host: SandboxHost) -> None:
    try:
        dockerapi.wait_until_ready(host.docker, ENGINE_START_TIMEOUT)
    except SandboxError:
        raise
    except Exception as error:
        log = Path(host.directory) / "dockerd.log"
        raise SandboxError(f"the engine of {host.name} did not start: {error}", hint=f"see {log}") from error


def inventory_document(sandbox: Sandbox) -> dict:
    ssh = {"ssh_config": str(sshd.client_config(sandbox.directory))} if sandbox.endpoint == "ssh" else {}
    return {
        **ssh,
        "stack": {
            "engine": sandbox.engine.value,
            "image": sandbox.images.get(sandbox.engine, ""),
            "probe_image": sandbox.images.get("probe", ""),
            **({"kafka_version": sandbox.kafka_version} if _engine(sandbox).KAFKA_VERSIONED else {}),
        },
        "hosts": [
            {
                "name": h.name,
                "endpoint": sandbox.inventory_endpoint(h),
                "address": h.address,
                "role": "manager" if h.index <= sandbox.managers else "worker",
            }
            for h in sandbox.hosts
        ],
    }


def _write_inventory(sandbox: Sandbox) -> None:
    if sandbox.endpoint == "ssh":
        sshd.write_client_files(sandbox.name, sandbox.directory, sandbox.hosts)
    header = (
        f"# Inventory of swarmkit sandbox '{sandbox.name}' ({len(sandbox.hosts)} hosts on bridge "
        f"{sandbox.bridge}, {sandbox.subnet}).\n# Written by `swarmkit sandbox`; the same format describes real servers.\n"
    )
    path = Path(sandbox.inventory_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + yaml.safe_dump(inventory_document(sandbox), sort_keys=False))


def _engine(sandbox: Sandbox) -> BrokerEngine:
    return ENGINES[sandbox.engine]


def publish_images(sandbox: Sandbox) -> Sandbox:
    """Build on the first host and push to the sandbox registry; the others pull as servers would."""
    builder = sandbox.hosts[0].docker
    recipe = image.kafka_recipe(sandbox.kafka_version) if _engine(sandbox).KAFKA_VERSIONED else image.tansu_recipe()
    images = {
        sandbox.engine: image.publish(builder, recipe, sandbox.registry),
        "probe": image.publish(builder, image.probe_recipe(), sandbox.registry),
    }
    updated = replace(sandbox, images=images)
    state.save(updated)
    _write_inventory(updated)
    return updated


def up(
    nodes: int,
    name: str,
    prefix: str,
    subnet: str,
    inventory_path: str,
    engine: str = DEFAULT_ENGINE,
    managers: int = SANDBOX_MANAGERS,
    *,
    report: Report = _quiet,
    endpoint: str = "unix",
    data_limit: str = "",
    kafka_version: str = image.KAFKA_VERSION,
) -> Sandbox:
    """Hosts 1..``managers`` become swarm managers (apache runs one KRaft controller on each).

    ``endpoint="ssh"``: the inventory reaches the hosts over SSH, as a user of each host's docker group (sshd.py).
    ``data_limit`` (e.g. "256m"): each host's broker data disk has that size (disks.py), so it can fill up.
    Interrupted or failed half-way, it removes what it created (as `down` does): the next `up` starts clean."""
    validation.check_prerequisites()
    validation.check_new_sandbox(name, nodes, prefix, subnet, engine, endpoint)
    if data_limit:
        disks.limit(data_limit)
    image.check_kafka_version(kafka_version)
    sandbox = Sandbox(
        name=name,
        subnet=subnet,
        prefix=prefix,
        inventory_path=str(Path(inventory_path).resolve()),
        engine=EngineName(engine),
        managers=max(1, min(managers, nodes)),
        endpoint=endpoint,
        data_limit=data_limit,
        kafka_version=kafka_version,
    )
    state.save(sandbox)
    try:
        report(f"bridge {sandbox.bridge} and registry {sandbox.registry}")
        if endpoint == "ssh":
            sshd.create_user(name, sandbox.directory)
        plumbing.create_bridge(sandbox)
        sandbox = replace(sandbox, registry_pid=_start_registry(sandbox))
        state.save(sandbox)
        hosts = _bring_up_hosts(sandbox, [_new_host(sandbox, i) for i in range(1, nodes + 1)], report)
        sandbox = replace(sandbox, hosts=tuple(hosts))
        state.save(sandbox)
        plumbing.write_hosts_entries(sandbox)
        report(f"building and publishing the {engine} and probe images")
        return publish_images(sandbox)
    except BaseException:
        down(name)
        raise


def add_node(name: str) -> SandboxHost:
    sandbox = state.load(name)
    index = max((h.index for h in sandbox.hosts), default=0) + 1
    host = _new_host(sandbox, index)
    if host.name in plumbing.names_in_hosts_file():
        raise SandboxError(f"host name {host.name} is already in {plumbing.HOSTS_FILE}", hint="take the other sandbox down")
    (added,) = _bring_up_hosts(sandbox, [host])
    sandbox = replace(sandbox, hosts=sandbox.hosts + (added,))
    state.save(sandbox)
    plumbing.write_hosts_entries(sandbox)
    _write_inventory(sandbox)
    return added


# --- engines on and off (for failure drills) ------------------------------------------------


def stop_engine(name: str, host_name: str) -> None:
    """Kill one host's dockerd (and its containers) as a crashed server would lose them."""
    sandbox = state.load(name)
    host = sandbox.host(host_name)
    processes.kill(processes.engine_processes(host))
    plumbing.remove_stale_vxlan_links(host)


def start_engine(name: str, host_name: str, tls: TlsFiles | None = None) -> SandboxHost:
    """Start a stopped host's dockerd again; ``tls`` adds the TLS-verified tcp listener of a real server."""
    sandbox = state.load(name)
    host = sandbox.host(host_name)
    if processes.engine_processes(host):
        raise SandboxError(f"the engine of {host.name} is already running", hint="stop it first")
    # A killed engine leaves pid files behind; a restarted dockerd would wait on the dead pids.
    for pid_file in ("docker.pid", "exec/containerd/containerd.pid"):
        (Path(host.directory) / pid_file).unlink(missing_ok=True)
    restarted = replace(host, pid=_start_engine(sandbox, host, tls))
    _wait_engine(restarted)
    state.save(replace(sandbox, hosts=tuple(restarted if h.name == host.name else h for h in sandbox.hosts)))
    return restarted


# --- teardown -------------------------------------------------------------------------------


def _remove_directory(directory: Path) -> None:
    """Unmount what dockerd left mounted under the directory, then delete it."""
    mounts = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for mountpoint in sorted((m for m in mounts if m.startswith(str(directory))), reverse=True):
        _run("umount", "-l", mountpoint, check=False)
    shutil.rmtree(directory, ignore_errors=True)
    if directory.exists():
        raise SandboxError(f"could not remove {directory}", hint="something still uses it; see lsof +D")


def down(name: str) -> list[str]:
    """Remove everything the named sandbox created; safe to run after a crash or twice."""
    directory = state.directory(name)
    validation.check_prerequisites()
    removed = sshd.close_connections(directory)
    pids = processes.processes_under(directory)
    if pids:
        processes.kill(pids)
        removed.append(f"{len(pids)} processes")
    removed += plumbing.remove_links(name)
    removed += sshd.remove_accounts(name)
    removed += plumbing.remove_hosts_entries(name)
    if directory.exists():
        _remove_directory(directory)
        removed.append(f"directory {directory}")
    return removed
